// The KernelPlan of paged_sm90_pairs v4 (the shared paged_sm90 plan with its main kernel).

#include "cute/mla_decode/paged_sm90/common/plan.hpp"
#include "cute/mla_decode/paged_sm90_pairs/paged_sm90_pairs_v4/api.hpp"
#include "cute/mla_decode/paged_sm90_pairs/paged_sm90_pairs_v4/config.hpp"
#include "cutelab/runtime/registry.hpp"

namespace cutelab::mla::paged_sm90_pairs_v4 {
namespace {

struct Version {
  using T = Traits<cute::bfloat16_t>;
  static KernelId id() { return {"cute", "mla_decode", "paged_sm90_pairs", "v4"}; }
  static std::string summary() {
    return "v3's pairs (each S once, each softmax under the other consumer warpgroup's tensor work) with a "
           "producer warpgroup issuing every KV copy as the last reader frees a column group; split-KV on "
           "the GPU";
  }
  static paged_sm90::MainKernel main_kernel(DType dtype, KvFormat kv, PartialFormat partials) {
    return paged_sm90::same_as_q(dtype, kv) ? paged_sm90_pairs_v4::main_kernel(dtype, partials)
                                            : paged_sm90::MainKernel{};
  }
  static constexpr int kRegistersPerSm =  // after setmaxnreg
      T::kProducerRegisters * 128 + T::kConsumerRegisters * T::kConsumerThreads;
  static constexpr int kThreads = T::kThreads;
  static constexpr int kStages = T::kStages;
  // Short parts (1) spread small batches over every SM; longer ones (4, 16) cut the partials.
  static constexpr int kMinBlocksPerPart[] = {1, 4, 16};
};

CUTELAB_REGISTER_PLAN(paged_sm90::VersionPlan<Version>);

}  // namespace
}  // namespace cutelab::mla::paged_sm90_pairs_v4
