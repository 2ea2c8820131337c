// The KernelPlan of paged_sm90 v12: v11 with paged_sm90_pairs/v4's pair kernel (a producer warpgroup) in
// place of pairs/v3's: v8's kernels, and above v8's rows a choice tuned per problem between v3's
// one-S-owner kernel and the pairs (README.md beside this file).

#include <array>
#include <cstdint>

#include "cute/mla_decode/paged_sm90/common/plan.hpp"
#include "cute/mla_decode/paged_sm90/paged_sm90_v3/api.hpp"
#include "cute/mla_decode/paged_sm90/paged_sm90_v3/config.hpp"
#include "cute/mla_decode/paged_sm90/paged_sm90_v8/api.hpp"
#include "cute/mla_decode/paged_sm90_pairs/paged_sm90_pairs_v4/api.hpp"
#include "cute/mla_decode/paged_sm90_pairs/paged_sm90_pairs_v4/config.hpp"
#include "cutelab/core/error.hpp"
#include "cutelab/core/math.hpp"
#include "cutelab/runtime/registry.hpp"

namespace cutelab::mla::paged_sm90_v12 {
namespace {

constexpr int kOwner = 0, kPairs = 1;  // indices into Version::kMainKernels

// The untuned default's pairs: from this many page visits an SM (pages x KV heads x M tiles / SMs) and
// two M tiles a KV head, bf16 (v11's crossover; with pairs/v4 the b128 h128 t4096 rows, 124 visits an
// SM, still run faster with the owner: README.md).
constexpr int kPairsFromPagesPerSm = 192;
constexpr int kPairsFromRows = 128;

int default_main_kernel(const MlaDecodeProblem& p, const DeviceInfo& dev) {
  if (p.dtype != DType::bf16 || p.h_kv < 1 || p.h_q % p.h_kv != 0 || dev.sm_count < 1) return kOwner;
  if (paged_sm90::rows_per_kv_head(p.s_q, p.h_q, p.h_kv) < kPairsFromRows) return kOwner;
  std::int64_t pages = 0;
  if (p.lens.empty())
    pages = static_cast<std::int64_t>(p.b) * ceil_div(p.t, kPageSize);
  else
    for (int len : p.lens) pages += ceil_div(len, kPageSize);
  const std::int64_t visits = pages * p.h_kv * paged_sm90::m_tiles_of(p.s_q, p.h_q, p.h_kv);
  return visits >= kPairsFromPagesPerSm * static_cast<std::int64_t>(dev.sm_count) ? kPairs : kOwner;
}

struct Version {
  static KernelId id() { return {"cute", "mla_decode", "paged_sm90", "v12"}; }
  static std::string summary() {
    return concat(
        "v8 (S^T = K Q^T up to 32 query rows a KV head, v3's one S owner above), and above 32 rows "
        "paged_sm90_pairs/v4's pair kernel (a producer warpgroup) as a tuning choice (the untuned "
        "default with bf16 where each SM visits >= ",
        kPairsFromPagesPerSm, " pages at >= ", kPairsFromRows, " rows); split-KV on the GPU");
  }
  static constexpr std::array<const char*, 2> kMainKernels{"owner", "pairs"};

  // `rows`: query rows a KV head (0 where no problem is known).
  static paged_sm90::MainKernel main_kernel(DType dtype, KvFormat kv, PartialFormat partials, int rows,
                                            int kernel) {
    if (!paged_sm90::same_as_q(dtype, kv)) return {};
    // The pair kernel's 64-row tiles above v8's rows (also for f16, where v8 runs v3's kernel).
    if (kernel == kPairs)
      return rows == 0 || rows > paged_sm90_v8::kMaxRows ? paged_sm90_pairs_v4::main_kernel(dtype, partials)
                                                         : paged_sm90::MainKernel{};
    const paged_sm90::MainKernel v8 =
        rows > 0 ? paged_sm90_v8::main_kernel(dtype, partials, rows) : paged_sm90::MainKernel{};
    return v8.function != nullptr ? v8 : paged_sm90_v3::main_kernel(dtype, partials);
  }

  // With the pairs, pieces costed at 8 pages and the KV evicted first: what the pair kernel's tuning
  // took on every row it won (its piece start costs more than v3's).
  static int preferred_main_kernel(const MlaDecodeProblem& p, const DeviceInfo& dev,
                                   paged_sm90::TuneConfig& tune) {
    const int kernel = default_main_kernel(p, dev);
    if (kernel == kPairs) {
      tune.fixed_overhead_blocks = 8;
      tune.kv_evict_first = true;
    }
    return kernel;
  }

  // The larger of the kernels' needs (two KV stages each; v8's and v3's 256 threads with <= 255
  // registers, the pairs' 384 after setmaxnreg).
  using Pairs = paged_sm90_pairs_v4::Traits<cute::bfloat16_t>;
  static constexpr int kRegistersPerSm = paged_sm90_v3::Traits<cute::bfloat16_t>::kThreads * 255;
  static_assert(kRegistersPerSm >=
                Pairs::kProducerRegisters * 128 + Pairs::kConsumerRegisters * Pairs::kConsumerThreads);
  static constexpr int kThreads = Pairs::kThreads;
  static constexpr std::array<int, 2> kMainKernelThreads{paged_sm90_v3::Traits<cute::bfloat16_t>::kThreads,
                                                         Pairs::kThreads};
  static constexpr int kStages = 2;
  static constexpr int kMinBlocksPerPart[] = {1, 4, 16};
};

CUTELAB_REGISTER_PLAN(paged_sm90::VersionPlan<Version>);

}  // namespace
}  // namespace cutelab::mla::paged_sm90_v12
