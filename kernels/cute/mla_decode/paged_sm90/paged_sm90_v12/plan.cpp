// The KernelPlan of paged_sm90 v12: v11 with paged_sm90_pairs/v4's pair kernel (a producer warpgroup) in
// place of pairs/v3's: v8's kernels, and above v8's rows a choice tuned per problem between v3's
// one-S-owner kernel and the pairs (README.md beside this file).

#include <array>

#include "cute/mla_decode/paged_sm90/common/owner_or_pairs.hpp"
#include "cute/mla_decode/paged_sm90/paged_sm90_v3/config.hpp"
#include "cute/mla_decode/paged_sm90_pairs/paged_sm90_pairs_v4/api.hpp"
#include "cute/mla_decode/paged_sm90_pairs/paged_sm90_pairs_v4/config.hpp"
#include "cutelab/runtime/registry.hpp"

namespace cutelab::mla::paged_sm90_v12 {
namespace {

struct Version : paged_sm90::OwnerOrPairs<&paged_sm90_pairs_v4::main_kernel> {
  static KernelId id() { return {"cute", "mla_decode", "paged_sm90", "v12"}; }
  static std::string summary() {
    return concat(
        "v8 (S^T = K Q^T up to 32 query rows a KV head, v3's one S owner above), and above 32 rows "
        "paged_sm90_pairs/v4's pair kernel (a producer warpgroup) as a tuning choice (",
        default_rule(), "); split-KV on the GPU");
  }
  // The larger of the kernels' needs: v8's and v3's 256 threads with <= 255 registers, the pairs' 384
  // after setmaxnreg.
  using Owner = paged_sm90_v3::Traits<cute::bfloat16_t>;
  using Pairs = paged_sm90_pairs_v4::Traits<cute::bfloat16_t>;
  static constexpr int kRegistersPerSm = Owner::kThreads * 255;
  static_assert(kRegistersPerSm >=
                Pairs::kProducerRegisters * 128 + Pairs::kConsumerRegisters * Pairs::kConsumerThreads);
  static constexpr int kThreads = Pairs::kThreads;
  static constexpr std::array<int, 2> kMainKernelThreads{Owner::kThreads, Pairs::kThreads};
};

CUTELAB_REGISTER_PLAN(paged_sm90::VersionPlan<Version>);

}  // namespace
}  // namespace cutelab::mla::paged_sm90_v12
