// baseline/mla_decode/flashinfer_sm90/v1: FlashInfer's SM90 MLA paged decode (flashinfer-python,
// PyPI) on the lab's problem. Inputs, reference and cost come from MlaDecodePlanBase.

#include <memory>

#include "baseline/mla_decode/flashinfer_sm90/common/runner.hpp"
#include "baseline/mla_decode/flashinfer_sm90/flashinfer_sm90_v1/config.hpp"
#include "cutelab/runtime/registry.hpp"
#include "mla_decode/common/plan_base.hpp"

namespace cutelab::mla::flashinfer_sm90_v1 {
namespace {

class FlashInferMlaDecodePlan final : public MlaDecodePlanBase<FlashInferConfig> {
 public:
  [[nodiscard]] KernelId id() const override { return {"baseline", "mla_decode", "flashinfer_sm90", "v1"}; }
  [[nodiscard]] ArchRequirement arch() const override { return {9, 0, true}; }
  [[nodiscard]] std::string summary() const override {
    return "FlashInfer 0.7.2.post1 mla_hopper (PyPI headers): 2 warpgroups + cp.async, host planner, "
           "merge in the same cooperative launch";
  }

 protected:
  [[nodiscard]] std::vector<FlashInferConfig> make_configs(const MlaDecodeProblem&,
                                                           const DeviceInfo&) const override {
    return {FlashInferConfig{}};
  }

  [[nodiscard]] Kernel make_kernel(const MlaDecodeProblem&, const FlashInferConfig&, MlaDecodeWorkspace& ws,
                                   const DeviceInfo& dev) const override {
    const MlaDecodeDims d = checked_dims(ws);
    const MlaDecodeArgs args = ws.args();
    const flashinfer_sm90::KvSource kv{
        d.dtype == DType::bf16 ? flashinfer_sm90::Types::bf16 : flashinfer_sm90::Types::f16,
        args.kv_cache.data, 1.f};
    return flashinfer_sm90::make_kernel(std::make_shared<flashinfer_sm90::Runner>(args, d, kv, dev));
  }
};

}  // namespace

CUTELAB_REGISTER_PLAN(FlashInferMlaDecodePlan);

}  // namespace cutelab::mla::flashinfer_sm90_v1
