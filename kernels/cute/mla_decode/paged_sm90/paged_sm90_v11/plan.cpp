// The KernelPlan of paged_sm90 v11: v8's kernels, and above v8's rows a choice tuned per problem
// between v3's one-S-owner kernel and paged_sm90_pairs/v3's pair kernel (README.md beside this file).

#include <array>
#include <cstdint>

#include "cute/mla_decode/paged_sm90/common/plan.hpp"
#include "cute/mla_decode/paged_sm90/paged_sm90_v3/api.hpp"
#include "cute/mla_decode/paged_sm90/paged_sm90_v3/config.hpp"
#include "cute/mla_decode/paged_sm90/paged_sm90_v8/api.hpp"
#include "cute/mla_decode/paged_sm90_pairs/paged_sm90_pairs_v3/api.hpp"
#include "cutelab/core/math.hpp"
#include "cutelab/runtime/registry.hpp"

namespace cutelab::mla::paged_sm90_v11 {
namespace {

struct Version {
  static KernelId id() { return {"cute", "mla_decode", "paged_sm90", "v11"}; }
  static std::string summary() {
    return "v8 (S^T = K Q^T up to 32 query rows a KV head, v3's one S owner above), and above 32 rows "
           "paged_sm90_pairs/v3's pair kernel as a tuning choice (the untuned default where each SM "
           "has >= 192 pages at >= 128 rows); split-KV on the GPU";
  }
  static constexpr std::array<const char*, 2> kMainKernels{"owner", "pairs"};
  static constexpr int kOwner = 0, kPairs = 1;

  // `rows`: query rows a KV head (0 where no problem is known).
  static paged_sm90::MainKernel main_kernel(DType dtype, KvFormat kv, PartialFormat partials, int rows,
                                            int kernel) {
    if (!paged_sm90::same_as_q(dtype, kv)) return {};
    const paged_sm90::MainKernel v8 =
        rows > 0 ? paged_sm90_v8::main_kernel(dtype, partials, rows) : paged_sm90::MainKernel{};
    // The pair kernel's 64-row tiles where v8 has no transposed kernel for the rows.
    if (kernel == kPairs)
      return v8.function == nullptr ? paged_sm90_pairs_v3::main_kernel(dtype, partials)
                                    : paged_sm90::MainKernel{};
    return v8.function != nullptr ? v8 : paged_sm90_v3::main_kernel(dtype, partials);
  }

  // The pairs where each SM visits >= 192 pages (h_q 128: t >= 8192 at b128, s2 and s4 causal) and a KV
  // head has >= 128 rows (two M tiles: the tensor-bound rows). Below that the pair kernel's refill on
  // the path and its piece starts cost more than its shorter page saves (forty-fifth session, call e:
  // b128 h128 t4096 3.5% slower, b1 / b4 27-30% slower; t16384 2.8% faster, s2 t8192 causal 4.1%).
  // With the pairs, pieces costed at 8 pages and the KV evicted first: what the pair kernel's tuned
  // configs took on all seven rows where it won (its piece start costs more than v3's; the normal hint
  // was 1-5% slower in its tuning tables, and as the default 2-7% on three rows, call h).
  static int preferred_main_kernel(const MlaDecodeProblem& p, const DeviceInfo& dev,
                                   paged_sm90::TuneConfig& tune) {
    const int kernel = preferred_kernel(p, dev);
    if (kernel == kPairs) {
      tune.fixed_overhead_blocks = 8;
      tune.kv_evict_first = true;
    }
    return kernel;
  }
  static int preferred_kernel(const MlaDecodeProblem& p, const DeviceInfo& dev) {
    if (p.h_kv < 1 || p.h_q % p.h_kv != 0 || dev.sm_count < 1) return kOwner;
    const int rows = paged_sm90::rows_per_kv_head(p.s_q, p.h_q, p.h_kv);
    if (rows < 128) return kOwner;
    std::int64_t pages = 0;
    if (p.lens.empty())
      pages = static_cast<std::int64_t>(p.b) * ceil_div(p.t, kPageSize);
    else
      for (int len : p.lens) pages += ceil_div(len, kPageSize);
    const std::int64_t visits = pages * p.h_kv * paged_sm90::m_tiles_of(p.s_q, p.h_q, p.h_kv);
    return visits >= 192 * static_cast<std::int64_t>(dev.sm_count) ? kPairs : kOwner;
  }

  // The larger of the kernels' needs (all three: 256 threads, two KV stages, <= 255 registers).
  static constexpr int kRegistersPerSm = paged_sm90_v3::Traits<cute::bfloat16_t>::kThreads * 255;
  static constexpr int kThreads = paged_sm90_v3::Traits<cute::bfloat16_t>::kThreads;
  static constexpr int kStages = 2;
  static constexpr int kMinBlocksPerPart[] = {1, 4, 16};
};

CUTELAB_REGISTER_PLAN(paged_sm90::VersionPlan<Version>);

}  // namespace
}  // namespace cutelab::mla::paged_sm90_v11
