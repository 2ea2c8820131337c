#pragma once
// paged_sm90_fp8 v18: fp8_token (512 e4m3 latent values, 4 fp32 group scales, 64 bf16 RoPE values a
// token) at 64 query rows a CTA, nothing requantised. v17's page, producer and sigma warp; O^T = V^T P^T
// split by scale group between the two consumer warpgroups (warpgroup 0 groups 0-1, the S owner groups
// 2-3), each reading V from the staged page into its A registers; S in two accumulators, the group
// scales applied between the group products by per-token ratios (README.md beside this file says why).

#include <cstdint>

#include <cute/arch/mma_sm90.hpp>
#include <cute/atom/mma_traits_sm90_gmma.hpp>
#include <cute/tensor.hpp>

#include "cute/mla_decode/paged_sm90_fp8/paged_sm90_fp8_v17/config.hpp"

namespace cutelab::mla::paged_sm90_fp8_v18 {

struct Traits : paged_sm90_fp8_v17::Traits {
  static constexpr int kRows = kBlockM;  // O^T's N: every row of the M tile is live
  static constexpr int kGroupsPerWarpgroup = kGroups / kWarpgroups;  // 2: 256 O^T dims each
  // setmaxnreg within the 168 x 3 a thread triplet gets at launch: the producer warpgroup 40 (v17's),
  // warpgroup 0 208 (O^T 128, V 32), the owner 256 (O^T 128, V 32, two S accumulators 64).
  static constexpr int kProducerRegisters = 40;
  static constexpr int kConsumerRegisters = 232;
  static constexpr int kTransposerRegisters = 208;

  // O^T = V^T P^T: A = V^T from registers (M = 64 dims a tile, K = 32 positions a step), B = P^T of one
  // scale group (N = the 64 rows, K-major: a row's 64 position bytes, 64-byte swizzle).
  using OTShape = cute::Shape<cute::Int<kBlockM>, cute::Int<kRows>, cute::_32>;
  using TiledMmaOT = decltype(cute::make_tiled_mma(
      cute::SM90::GMMA::rs_op_selector<Code, Code, float, OTShape, cute::GMMA::Major::K,
                                       cute::GMMA::Major::K>()));
  using SmemLayoutPT = decltype(cute::tile_to_shape(cute::GMMA::Layout_K_SW64_Atom<Code>{},
                                                    cute::Shape<cute::Int<kRows>, cute::Int<kBlockN>>{}));
  static constexpr int kPTBytes = kRows * kBlockN;  // one group's P^T: 4 KiB
  static_assert(cute::cosize_v<SmemLayoutPT> == kPTBytes);

  struct alignas(1024) SharedStorage {
    alignas(1024) std::uint8_t q[kStageBytes];  // Q's latent codes and bf16 RoPE values, as a page
    alignas(1024) std::uint8_t stage[kStages][kStageBytes];  // pages as TMA writes them
    alignas(1024) std::uint8_t p[2][kGroups * kPTBytes];     // P^T of page j, one tile a group (j % 2)
    // The sigma warp's copy of staged page j's scales (j % 3), read by the owner after it has
    // released the page's slot: by token, the four group scales (0 past the valid tokens) and the
    // factors S takes between its group products, by factor: {s0 / s2, s1 / s3, s2, s3}.
    float4 token_scales[kStages][kBlockN];
    float s_factors[kStages][4][kBlockN];
    float scale[2][kBlockM];   // O^T's factor before page j's P^T, per packed row (j % 2)
    float q_scale[kBlockM];    // a row's latent code scale (amax / 448; 1 for a zero or padded row)
    int stage_valid[kStages];  // valid tokens of the staged page (the producer writes it before the copies)
    float final_max[2][kBlockM];  // a piece's running max (log2 units) and row sum, by piece parity
    float final_sum[2][kBlockM];
    float final_sigma[2];  // the piece's reference scale at its end (P^T's unit), by piece parity
    // The sigma warp's record of the staged page: {O^T's factor sigma'_old / sigma'_new, log2 sigma',
    // sigma', unused} (v17's).
    float4 page_sigma[kStages];
    alignas(8) std::uint64_t stage_full[kStages];  // TMA bytes of a staged page landed
    alignas(8) std::uint64_t slot_free[kStages];   // S and both warpgroups' V loads are done with a page
    alignas(8) std::uint64_t vt_ready[2];  // warpgroup 0's O^T of page j done with P^T buffer j % 2: 128
    alignas(8) std::uint64_t p_ready[2];   // P^T and factors of page j published: 128 arrivals
    alignas(8) std::uint64_t wg1_done[2];  // the owner's O^T of page j done with P^T buffer j % 2: 128
    alignas(8) std::uint64_t final_ready[2];
    alignas(8) std::uint64_t final_read[2];
    alignas(8) std::uint64_t sigma_ready[kStages];   // unused (TensorCoreKernel initialises it)
    alignas(8) std::uint64_t copies_ready[kStages];  // page_sigma and the scale copies written: 32
    alignas(8) std::uint64_t scales_free[kStages];   // the owner is done with them: 128 arrivals
  };
  static_assert(sizeof(SharedStorage) <= 232448, "more than an SM90 CTA's dynamic shared memory");
};

}  // namespace cutelab::mla::paged_sm90_fp8_v18
