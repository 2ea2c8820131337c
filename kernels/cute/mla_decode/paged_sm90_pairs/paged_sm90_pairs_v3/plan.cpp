// The KernelPlan of paged_sm90_pairs v3 (the shared paged_sm90 plan with its main kernel).

#include "cute/mla_decode/paged_sm90/common/plan.hpp"
#include "cute/mla_decode/paged_sm90_pairs/paged_sm90_pairs_v3/api.hpp"
#include "cute/mla_decode/paged_sm90_pairs/paged_sm90_pairs_v3/config.hpp"
#include "cutelab/runtime/registry.hpp"

namespace cutelab::mla::paged_sm90_pairs_v3 {
namespace {

struct Version {
  using T = Traits<cute::bfloat16_t>;
  static KernelId id() { return {"cute", "mla_decode", "paged_sm90_pairs", "v3"}; }
  static std::string summary() {
    return "2 warpgroups, pages in pairs, each S once, in an order that puts each softmax under the other "
           "warpgroup's tensor work; column groups refilled by their last reader; split-KV on the GPU";
  }
  static paged_sm90::MainKernel main_kernel(DType dtype, KvFormat kv, PartialFormat partials) {
    return paged_sm90::same_as_q(dtype, kv) ? paged_sm90_pairs_v3::main_kernel(dtype, partials)
                                            : paged_sm90::MainKernel{};
  }
  static constexpr int kRegistersPerSm = T::kThreads * 255;  // no setmaxnreg: __launch_bounds__(256, 1)
  static constexpr int kThreads = T::kThreads;
  static constexpr int kStages = T::kStages;
  // Short parts (1) spread small batches over every SM; longer ones (4, 16) cut the partials.
  static constexpr int kMinBlocksPerPart[] = {1, 4, 16};
};

CUTELAB_REGISTER_PLAN(paged_sm90::VersionPlan<Version>);

}  // namespace
}  // namespace cutelab::mla::paged_sm90_pairs_v3
