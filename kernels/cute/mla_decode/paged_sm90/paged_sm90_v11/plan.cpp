// The KernelPlan of paged_sm90 v11: v8's kernels, and above v8's rows a choice tuned per problem
// between v3's one-S-owner kernel and paged_sm90_pairs/v3's pair kernel (README.md beside this file).

#include "cute/mla_decode/paged_sm90/common/owner_or_pairs.hpp"
#include "cute/mla_decode/paged_sm90/paged_sm90_v3/config.hpp"
#include "cute/mla_decode/paged_sm90_pairs/paged_sm90_pairs_v3/api.hpp"
#include "cutelab/runtime/registry.hpp"

namespace cutelab::mla::paged_sm90_v11 {
namespace {

struct Version : paged_sm90::OwnerOrPairs<&paged_sm90_pairs_v3::main_kernel> {
  static KernelId id() { return {"cute", "mla_decode", "paged_sm90", "v11"}; }
  static std::string summary() {
    return concat(
        "v8 (S^T = K Q^T up to 32 query rows a KV head, v3's one S owner above), and above 32 rows "
        "paged_sm90_pairs/v3's pair kernel as a tuning choice (",
        default_rule(), "); split-KV on the GPU");
  }
  // The larger of the kernels' needs (all three: 256 threads, two KV stages, <= 255 registers).
  static constexpr int kRegistersPerSm = paged_sm90_v3::Traits<cute::bfloat16_t>::kThreads * 255;
  static constexpr int kThreads = paged_sm90_v3::Traits<cute::bfloat16_t>::kThreads;
};

CUTELAB_REGISTER_PLAN(paged_sm90::VersionPlan<Version>);

}  // namespace
}  // namespace cutelab::mla::paged_sm90_v11
