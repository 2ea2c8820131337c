// The KernelPlan of paged_sm90 v1 (the shared paged_sm90 plan with v1's main kernel).

#include "cute/mla_decode/paged_sm90/common/plan.hpp"
#include "cute/mla_decode/paged_sm90/paged_sm90_v1/api.hpp"
#include "cute/mla_decode/paged_sm90/paged_sm90_v1/config.hpp"
#include "cutelab/runtime/registry.hpp"

namespace cutelab::mla::paged_sm90_v1 {
namespace {

struct Version {
  using T = Traits<cute::bfloat16_t>;
  static KernelId id() { return {"cute", "mla_decode", "paged_sm90", "v1"}; }
  static std::string summary() {
    return "TMA paged KV ring + WGMMA, 1 producer + 2 consumer warpgroups (S duplicated), "
           "split-KV on the GPU";
  }
  static paged_sm90::MainKernel main_kernel(DType dtype, KvFormat kv) {
    return paged_sm90::same_as_q(dtype, kv) ? paged_sm90_v1::main_kernel(dtype) : paged_sm90::MainKernel{};
  }
  static constexpr int kRegistersPerSm =
      128 * (T::kProducerRegisters + T::kConsumerWarpgroups * T::kConsumerRegisters);
  static constexpr int kThreads = T::kThreads;
  static constexpr int kStages = T::kStages;
  static constexpr int kMinBlocksPerPart[] = {1, 8};
};

CUTELAB_REGISTER_PLAN(paged_sm90::VersionPlan<Version>);
// The design is the family default; `cutelab run mla_decode` takes its newest version.
CUTELAB_FAMILY_DEFAULT("mla_decode", "cute/mla_decode/paged_sm90");

}  // namespace
}  // namespace cutelab::mla::paged_sm90_v1
