#pragma once
// The plan of the paged_sm90 versions whose main kernel is a tuning choice (v11, v12): v8's kernels at
// <= 32 query rows a KV head, above them v3's one-S-owner kernel (`owner`) or a pair kernel (`pairs`,
// config names ending `_pairs`). A version derives from OwnerOrPairs with its pair kernel and adds its
// id, summary and resource needs (paged_sm90_v11/README.md has the reasoning and the crossover).

#include <array>
#include <cstdint>
#include <string>

#include "cute/mla_decode/paged_sm90/common/plan.hpp"
#include "cute/mla_decode/paged_sm90/paged_sm90_v3/api.hpp"
#include "cute/mla_decode/paged_sm90/paged_sm90_v8/api.hpp"
#include "cutelab/core/error.hpp"
#include "cutelab/core/math.hpp"

namespace cutelab::mla::paged_sm90 {

// The untuned default's pairs: from this many page visits an SM (pages x KV heads x M tiles / SMs) and
// two M tiles a KV head, bf16 (v11's crossover; with pairs/v4 the b128 h128 t4096 rows, 124 visits an
// SM, still run faster with the owner).
inline constexpr int kPairsFromPagesPerSm = 192;
inline constexpr int kPairsFromRows = 128;

// kPairsKernel: the pair design's main kernel for (dtype, partial rows).
template <MainKernel (*kPairsKernel)(DType, PartialFormat)>
struct OwnerOrPairs {
  static constexpr int kOwner = 0, kPairs = 1;  // indices into kMainKernels
  static constexpr std::array<const char*, 2> kMainKernels{"owner", "pairs"};
  static constexpr int kStages = 2;
  static constexpr int kMinBlocksPerPart[] = {1, 4, 16};

  // The summary's words for the untuned default.
  static std::string default_rule() {
    return concat("the untuned default with bf16 where each SM visits >= ", kPairsFromPagesPerSm,
                  " pages at >= ", kPairsFromRows, " rows");
  }

  static int default_main_kernel(const MlaDecodeProblem& p, const DeviceInfo& dev) {
    if (p.dtype != DType::bf16 || p.h_kv < 1 || p.h_q % p.h_kv != 0 || dev.sm_count < 1) return kOwner;
    if (rows_per_kv_head(p.s_q, p.h_q, p.h_kv) < kPairsFromRows) return kOwner;
    std::int64_t pages = 0;
    if (p.lens.empty())
      pages = static_cast<std::int64_t>(p.b) * ceil_div(p.t, kPageSize);
    else
      for (int len : p.lens) pages += ceil_div(len, kPageSize);
    const std::int64_t visits = pages * p.h_kv * m_tiles_of(p.s_q, p.h_q, p.h_kv);
    return visits >= kPairsFromPagesPerSm * static_cast<std::int64_t>(dev.sm_count) ? kPairs : kOwner;
  }

  // `rows`: query rows a KV head (0 where no problem is known).
  static MainKernel main_kernel(DType dtype, KvFormat kv, PartialFormat partials, int rows, int kernel) {
    if (!same_as_q(dtype, kv)) return {};
    // The pair kernel's 64-row tiles above v8's rows (also for f16, where v8 runs v3's kernel).
    if (kernel == kPairs)
      return rows == 0 || rows > paged_sm90_v8::kMaxRows ? kPairsKernel(dtype, partials) : MainKernel{};
    const MainKernel v8 = rows > 0 ? paged_sm90_v8::main_kernel(dtype, partials, rows) : MainKernel{};
    return v8.function != nullptr ? v8 : paged_sm90_v3::main_kernel(dtype, partials);
  }

  // With the pairs, pieces costed at 8 pages and the KV evicted first: what the pair kernel's tuning
  // took on every row it won (its piece start costs more than v3's).
  static int preferred_main_kernel(const MlaDecodeProblem& p, const DeviceInfo& dev, TuneConfig& tune) {
    const int kernel = default_main_kernel(p, dev);
    if (kernel == kPairs) {
      tune.fixed_overhead_blocks = 8;
      tune.kv_evict_first = true;
    }
    return kernel;
  }
};

}  // namespace cutelab::mla::paged_sm90
