#pragma once
// paged_sm90_fp8 v17: v13's roles on an fp8_token cache (512 e4m3 latent values, 4 fp32 group
// scales and 64 bf16 RoPE values per token), up to 32 query rows a KV head, nothing requantised.
// The S owner keeps one accumulator per scale group and one for the bf16 RoPE product and sums
// them with the page's scales; warpgroup 0's O^T tiles each lie in one group, so the group's
// scales ride on that group's P^T (README.md beside this file says why).

#include <cstdint>

#include <cute/arch/mma_sm90.hpp>
#include <cute/atom/mma_traits_sm90_gmma.hpp>
#include <cute/tensor.hpp>

#include "cute/mla_decode/paged_sm90_fp8/paged_sm90_fp8_v13/config.hpp"
#include "mla_decode/fp8/kv_format.hpp"

namespace cutelab::mla::paged_sm90_fp8_v17 {

struct Traits : paged_sm90_fp8_v13::Traits {
  static constexpr bool kScaleBox = true;
  static constexpr int kQRegisterSteps = 0;  // the owner's registers hold five S accumulators
  static constexpr bool kSigmaWarp = true;   // each page's sigma record (README.md)
  // setmaxnreg within the 168 x 3 registers a thread triplet gets at launch: the producer
  // warpgroup 40 (the TMA issue loop and the sigma warp's: 24 or 32 spill), warpgroup 0 224, the
  // owner 240 (2 x 232 - 224); no spills.
  static constexpr int kProducerRegisters = 40;
  static constexpr int kConsumerRegisters = 232;
  static constexpr int kTransposerRegisters = 224;
  // A staged page: the latent bytes as v13's four 128-byte chunks (one scale group each), the bf16
  // RoPE values (one box of 128-byte rows, 128-byte swizzle, bf16 K-major), then the group scales
  // (16 bytes a token, as the entry holds them).
  static constexpr int kGroups = kFp8Groups;  // 4
  static_assert(kLatentChunk == kFp8GroupCols && kLatentChunks == kGroups);
  static constexpr int kRopeCols = kHeadDimQK - kHeadDimV;  // 64
  static constexpr int kRopeMapColumn = 0;  // the rope map spans fp8_token's bf16 RoPE values only
  static constexpr int kRopeBytes = kBlockN * kRopeCols * 2;                             // 8 KiB
  static constexpr int kScaleOffset = kRopeOffset + kRopeBytes;                          // 40 KiB
  static constexpr int kScaleRowBytes = 4 * kGroups;                                     // 16
  static constexpr std::uint32_t kStageBytes = kScaleOffset + kBlockN * kScaleRowBytes;  // 41 KiB
  static_assert(kStageBytes % 1024 == 0, "each slot's 128-byte-swizzled boxes need 1024-byte alignment");
  static constexpr int kPTBytes = kRows * kBlockN;  // one group's P^T: 2 KiB

  // Q's and a staged page's bf16 RoPE values, (rows, 64) K-major, 128-byte swizzle.
  using SmemLayoutRope = decltype(cute::tile_to_shape(
      cute::GMMA::Layout_K_SW128_Atom<Element>{}, cute::Shape<cute::Int<kBlockN>, cute::Int<kRopeCols>>{}));
  static_assert(cute::cosize_v<SmemLayoutRope> * 2 == kRopeBytes);
  using QKRopeShape = cute::Shape<cute::Int<kBlockM>, cute::Int<kBlockN>, cute::_16>;
  using TiledMmaQKRope = decltype(cute::make_tiled_mma(
      cute::SM90::GMMA::ss_op_selector<Element, Element, float, QKRopeShape, cute::GMMA::Major::K,
                                       cute::GMMA::Major::K>()));
  static_assert(cute::cosize_v<SmemLayoutPT> == kPTBytes);

  struct alignas(1024) SharedStorage {
    alignas(1024) std::uint8_t q[kStageBytes];  // Q's latent codes and bf16 RoPE values, as a page
    alignas(1024) std::uint8_t stage[kStages][kStageBytes];  // pages as TMA writes them
    alignas(1024) std::uint8_t p[2][kGroups * kPTBytes];     // P^T of page j, one tile a group (j % 2)
    float scale[2][kBlockM];   // O^T's factor before page j's P^T, per packed row (j % 2)
    float q_scale[kBlockM];    // a row's latent code scale (amax / 448; 1 for a zero row, 0 for a padded one)
    int stage_valid[kStages];  // valid tokens of the staged page (the producer writes it before the copies)
    float final_max[2][kBlockM];  // a piece's running max (log2 units) and row sum, by piece parity
    float final_sum[2][kBlockM];
    float final_sigma[2];  // the piece's reference scale at its end (P^T's unit), by piece parity
    // The sigma warp's record of the staged page: {O^T's factor sigma'_old / sigma'_new, log2 sigma',
    // sigma', unused}, sigma' P^T's unit: the piece's largest valid group scale up to this page (at
    // least 2^-100; 1 while they are all 0).
    float4 page_sigma[kStages];
    alignas(8) std::uint64_t stage_full[kStages];  // TMA bytes of a staged page landed
    alignas(8) std::uint64_t slot_free[kStages];   // S and warpgroup 0's V loads are done with a staged page
    alignas(8) std::uint64_t vt_ready[2];  // P^T buffer j % 2 free again (O^T of page j done): 128 arrivals
    alignas(8) std::uint64_t p_ready[2];   // P^T and scales of page j published: 128 arrivals
    alignas(8) std::uint64_t wg1_done[2];  // unused (TensorCoreKernel initialises it)
    alignas(8) std::uint64_t final_ready[2];
    alignas(8) std::uint64_t final_read[2];
    alignas(8) std::uint64_t sigma_ready[kStages];  // page_sigma of the staged page written: 1 arrival
  };
  static_assert(sizeof(SharedStorage) <= 232448, "more than an SM90 CTA's dynamic shared memory");
};

}  // namespace cutelab::mla::paged_sm90_fp8_v17
