// The KernelPlan of paged_sm90 v4 (the shared paged_sm90 plan with v4's main kernel).

#include "cute/mla_decode/paged_sm90/common/plan.hpp"
#include "cute/mla_decode/paged_sm90/paged_sm90_v4/api.hpp"
#include "cute/mla_decode/paged_sm90/paged_sm90_v4/config.hpp"
#include "cutelab/runtime/registry.hpp"

namespace cutelab::mla::paged_sm90_v4 {
namespace {

struct Version {
  using T = Traits<cute::bfloat16_t>;
  static KernelId id() { return {"cute", "mla_decode", "paged_sm90", "v4"}; }
  static std::string summary() {
    return "v3 with warpgroup 1's next Q K^T queued behind its P V (S software-pipelined by one page); "
           "one S owner, P V split by O columns, two-page ring consumed page by page; split-KV on the GPU";
  }
  static paged_sm90::MainKernel main_kernel(DType dtype) { return paged_sm90_v4::main_kernel(dtype); }
  static constexpr int kRegistersPerSm = T::kThreads * 255;  // no setmaxnreg: __launch_bounds__(256, 1)
  static constexpr int kThreads = T::kThreads;
  static constexpr int kStages = T::kStages;
  // Short parts (1) spread small batches over every SM; longer ones (4, 16) cut the partials.
  static constexpr int kMinBlocksPerPart[] = {1, 4, 16};
};

CUTELAB_REGISTER_PLAN(paged_sm90::VersionPlan<Version>);

}  // namespace
}  // namespace cutelab::mla::paged_sm90_v4
