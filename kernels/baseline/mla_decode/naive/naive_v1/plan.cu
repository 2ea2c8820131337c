// baseline/mla_decode/naive/v1: the plan. Inputs, reference and cost come from the family's
// MlaDecodePlanBase; this file adds the configs and the launch.

#include <algorithm>
#include <array>

#include "baseline/mla_decode/naive/naive_v1/config.hpp"
#include "baseline/mla_decode/naive/naive_v1/launch.cuh"
#include "cutelab/runtime/registry.hpp"
#include "mla_decode/common/plan_base.hpp"

namespace cutelab::mla::naive_v1 {

namespace {

struct Variant {
  DType dtype;
  NaiveConfig config;
  void (*run)(const NaiveParams&, const MlaDecodeDims&, cudaStream_t);
  FunctionResources (*resources)();
};

template <class T, int kThreads, int kHeads>
constexpr Variant variant(DType dtype) {
  return {dtype, {kThreads, kHeads}, &NaiveLauncher<T, kThreads, kHeads>::run,
          &NaiveLauncher<T, kThreads, kHeads>::resources};
}

const std::array<Variant, 6> kVariants = {
    variant<__nv_bfloat16, 128, 4>(DType::bf16), variant<__nv_bfloat16, 256, 8>(DType::bf16),
    variant<__nv_bfloat16, 256, 16>(DType::bf16), variant<__half, 128, 4>(DType::f16),
    variant<__half, 256, 8>(DType::f16),         variant<__half, 256, 16>(DType::f16),
};

const Variant& find_variant(DType dtype, const NaiveConfig& c) {
  for (const Variant& v : kVariants)
    if (v.dtype == dtype && v.config.threads == c.threads && v.config.heads == c.heads) return v;
  throw Error(concat("baseline/mla_decode/naive/v1: config ", c.name(), " is not compiled for ", dtype_name(dtype)));
}

class NaiveMlaDecodePlan final : public MlaDecodePlanBase<NaiveConfig> {
 public:
  [[nodiscard]] KernelId id() const override { return {"baseline", "mla_decode", "naive", "v1"}; }
  [[nodiscard]] ArchRequirement arch() const override { return {8, 0, false}; }
  [[nodiscard]] std::string summary() const override {
    return "plain CUDA, fp32 online softmax on CUDA cores, one CTA per (request, query row, head tile)";
  }

 protected:
  [[nodiscard]] std::vector<NaiveConfig> make_configs(const MlaDecodeProblem&, const DeviceInfo&) const override {
    return {kConfigs.begin(), kConfigs.end()};
  }

  [[nodiscard]] Kernel make_kernel(const MlaDecodeProblem&, const NaiveConfig& c, MlaDecodeWorkspace& ws,
                                   const DeviceInfo&) const override {
    // Checked once here (a sync on the device values); the launch itself does no host work.
    const MlaDecodeDims d = checked_dims(ws);
    const Variant& v = find_variant(d.dtype, c);
    const NaiveParams params = make_params(ws.args(), d, c.heads);
    Kernel k;
    k.launch = [run = v.run, params, d](cudaStream_t stream) { run(params, d, stream); };
    k.resources = {v.resources()};
    return k;
  }
};

}  // namespace

CUTELAB_REGISTER_PLAN(NaiveMlaDecodePlan);

}  // namespace cutelab::mla::naive_v1
