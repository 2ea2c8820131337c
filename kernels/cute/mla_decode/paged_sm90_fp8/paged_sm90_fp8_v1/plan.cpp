// The KernelPlan of paged_sm90_fp8 v1 (the shared paged_sm90 plan with this version's main kernels).

#include "cute/mla_decode/paged_sm90/common/plan.hpp"
#include "cute/mla_decode/paged_sm90_fp8/paged_sm90_fp8_v1/api.hpp"
#include "cute/mla_decode/paged_sm90_fp8/paged_sm90_fp8_v1/config.hpp"
#include "cutelab/runtime/registry.hpp"

namespace cutelab::mla::paged_sm90_fp8_v1 {
namespace {

struct Version {
  using T = Traits<KvFormat::fp8_token>;
  static KernelId id() { return {"cute", "mla_decode", "paged_sm90_fp8", "v1"}; }
  static std::string summary() {
    return "FP8 KV (fp8_tensor, fp8_token): v3's two warpgroups over one bf16 tile that warpgroup 0 fills by "
           "dequantising TMA-staged e4m3 pages chunk by chunk; split-KV on the GPU";
  }
  static paged_sm90::MainKernel main_kernel(DType dtype, KvFormat kv) {
    return paged_sm90_fp8_v1::main_kernel(dtype, kv);
  }
  static constexpr int kRegistersPerSm = T::kThreads * 255;  // no setmaxnreg: __launch_bounds__(256, 1)
  static constexpr int kThreads = T::kThreads;
  static constexpr int kStages = T::kStages;
  static constexpr int kMinBlocksPerPart[] = {1, 4, 16};
};

CUTELAB_REGISTER_PLAN(paged_sm90::VersionPlan<Version>);

}  // namespace
}  // namespace cutelab::mla::paged_sm90_fp8_v1
