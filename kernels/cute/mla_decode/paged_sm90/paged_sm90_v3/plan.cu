// The KernelPlan of paged_sm90 v3 (the shared paged_sm90 plan with v3's main kernel).

#include "cute/mla_decode/paged_sm90/common/plan.hpp"
#include "cute/mla_decode/paged_sm90/paged_sm90_v3/api.hpp"
#include "cute/mla_decode/paged_sm90/paged_sm90_v3/config.hpp"
#include "cutelab/runtime/registry.hpp"

namespace cutelab::mla::paged_sm90_v3 {
namespace {

struct Version {
  using T = Traits<cute::bfloat16_t>;
  static KernelId id() { return {"cute", "mla_decode", "paged_sm90", "v3"}; }
  static std::string summary() {
    return "v1 with a full mbarrier per 64-column chunk: Q K^T starts while the rest of the page lands";
  }
  static paged_sm90::MainKernel main_kernel(DType dtype) { return paged_sm90_v3::main_kernel(dtype); }
  static constexpr int kRegistersPerSm = 128 * (T::kProducerRegisters + T::kConsumerWarpgroups * T::kConsumerRegisters);
  static constexpr int kStages = T::kStages;
};

CUTELAB_REGISTER_PLAN(paged_sm90::VersionPlan<Version>);

}  // namespace
}  // namespace cutelab::mla::paged_sm90_v3
