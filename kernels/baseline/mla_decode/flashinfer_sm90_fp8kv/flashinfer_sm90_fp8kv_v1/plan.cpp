// baseline/mla_decode/flashinfer_sm90_fp8kv/v1: FlashInfer's SM90 MLA decode reading an e4m3 KV
// cache (one scale), for the lab's FP8 work to compare against. The reference is the family's,
// on the dequantised cache (Fp8KvWorkspace); the cost counts one byte per KV element. It runs
// kv-dtype same and fp8_tensor problems alike, on its own e4m3 cache (bf16-exact scale).

#include <memory>

#include "baseline/mla_decode/flashinfer_sm90/common/runner.hpp"
#include "baseline/mla_decode/flashinfer_sm90_fp8kv/flashinfer_sm90_fp8kv_v1/config.hpp"
#include "baseline/mla_decode/flashinfer_sm90_fp8kv/flashinfer_sm90_fp8kv_v1/workspace.hpp"
#include "cutelab/runtime/registry.hpp"
#include "mla_decode/common/plan_base.hpp"

namespace cutelab::mla::flashinfer_sm90_fp8kv_v1 {
namespace {

class FlashInferFp8KvPlan final : public TypedPlan<MlaDecodeProblem, FlashInferFp8KvConfig, Fp8KvWorkspace> {
 public:
  [[nodiscard]] KernelId id() const override {
    return {"baseline", "mla_decode", "flashinfer_sm90_fp8kv", "v1"};
  }
  [[nodiscard]] ArchRequirement arch() const override { return {9, 0, true}; }
  [[nodiscard]] std::string summary() const override {
    return "FlashInfer 0.7.2.post1 mla_hopper on an e4m3 KV cache (one scale), dequantised to bf16 in shared "
           "memory; reference on the dequantised cache";
  }

 protected:
  [[nodiscard]] std::unique_ptr<Fp8KvWorkspace> make_inputs(const MlaDecodeProblem& p,
                                                            std::uint64_t seed) const override {
    // Its workspace quantises the family's bf16 case itself; the family's fp8_tensor cache (an
    // fp32 scale FlashInfer's bf16 multiply would round) is not built.
    MlaDecodeCase c = problem_case(p);
    c.kv_format = KvFormat::bf16;
    return std::make_unique<Fp8KvWorkspace>(std::move(c), seed);
  }
  [[nodiscard]] std::vector<std::vector<float>> make_reference(const MlaDecodeProblem&,
                                                               Fp8KvWorkspace& ws) const override {
    return reference_outputs(ws);
  }
  [[nodiscard]] Cost make_cost(const MlaDecodeProblem& p) const override {
    // DESIGN.md's model at one byte per KV element (what it reads, whichever kv-dtype was asked).
    MlaDecodeCase c = problem_case(p);
    c.kv_format = KvFormat::fp8_tensor;
    return {.flops = mla_flops(c), .bytes = mla_bytes(c)};
  }
  [[nodiscard]] std::vector<FlashInferFp8KvConfig> make_configs(const MlaDecodeProblem&,
                                                                const DeviceInfo&) const override {
    return {FlashInferFp8KvConfig{}};
  }
  [[nodiscard]] Kernel make_kernel(const MlaDecodeProblem&, const FlashInferFp8KvConfig&, Fp8KvWorkspace& ws,
                                   const DeviceInfo& dev) const override {
    const MlaDecodeDims d = checked_dims(ws);
    if (ws.kv_e4m3.empty())
      throw UsageError("flashinfer_sm90_fp8kv: no e4m3 cache (the FP8 KV path takes bf16 cases)");
    const flashinfer_sm90::KvSource kv{flashinfer_sm90::Types::bf16_q_e4m3_kv, ws.kv_e4m3.data(),
                                       ws.kv_scale};
    return flashinfer_sm90::make_kernel(std::make_shared<flashinfer_sm90::Runner>(ws.args(), d, kv, dev));
  }
};

}  // namespace

CUTELAB_REGISTER_PLAN(FlashInferFp8KvPlan);

}  // namespace cutelab::mla::flashinfer_sm90_fp8kv_v1
