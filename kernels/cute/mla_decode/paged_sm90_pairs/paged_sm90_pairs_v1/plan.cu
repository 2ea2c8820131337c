// The KernelPlan of paged_sm90_pairs v1 (the shared paged_sm90 plan with this design's main kernel).

#include "cute/mla_decode/paged_sm90/common/plan.hpp"
#include "cute/mla_decode/paged_sm90_pairs/paged_sm90_pairs_v1/api.hpp"
#include "cute/mla_decode/paged_sm90_pairs/paged_sm90_pairs_v1/config.hpp"
#include "cutelab/runtime/registry.hpp"

namespace cutelab::mla::paged_sm90_pairs_v1 {
namespace {

struct Version {
  using T = Traits<cute::bfloat16_t>;
  static KernelId id() { return {"cute", "mla_decode", "paged_sm90_pairs", "v1"}; }
  static std::string summary() {
    return "paged_sm90 with each page's S computed once: pages alternate between consumer warpgroups, P exchanged in smem";
  }
  static paged_sm90::MainKernel main_kernel(DType dtype) { return paged_sm90_pairs_v1::main_kernel(dtype); }
  static constexpr int kRegistersPerSm = 128 * (T::kProducerRegisters + T::kConsumerWarpgroups * T::kConsumerRegisters);
  static constexpr int kStages = T::kStages;
};

CUTELAB_REGISTER_PLAN(paged_sm90::VersionPlan<Version>);

}  // namespace
}  // namespace cutelab::mla::paged_sm90_pairs_v1
