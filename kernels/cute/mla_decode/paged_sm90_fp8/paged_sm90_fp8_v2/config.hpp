#pragma once
// paged_sm90_fp8 v2: every compile-time constant, layout, GEMM atom, the shared-memory plan and
// the barriers of the version (README.md beside this file gives the design and its reasoning).
//
// FP8 tensor cores on an fp8_tensor cache: q is rounded to e4m3 per row (its scale beside it),
// S = Q K^T reads the TMA-staged page as it lands (K-major e4m3, swizzled), P goes to e4m3
// (times 256), and P V reads a transposed copy of the page's 512 latent columns (8-bit wgmma
// takes only K-major B) that warpgroup 0 writes. A producer thread stages the pages; warpgroup 1
// owns S, the softmax and O[:, 256:512] (P from registers); warpgroup 0 transposes and
// multiplies the published P into O[:, 0:256].

#include <cstdint>

#include <cute/arch/mma_sm90.hpp>
#include <cute/atom/mma_traits_sm90_gmma.hpp>
#include <cute/tensor.hpp>

#include "cute/mla_decode/paged_sm90/common/traits.hpp"
#include "cute/mla_decode/paged_sm90_fp8/common/tensor_core_switches.hpp"
#include "cute/mla_decode/paged_sm90_fp8/common/token_order.hpp"
#include "mla_decode/fp8/kv_format.hpp"

namespace cutelab::mla::paged_sm90_fp8_v2 {

struct Traits : paged_sm90::TileConstants, paged_sm90_fp8::TensorCoreSwitches {
  using Element = cute::bfloat16_t;  // q as given, out
  using Code = cute::float_e4m3_t;   // q, K, V, P as the tensor cores read them
  static constexpr int kWarpgroups = 2;
  // Two consumer warpgroups and a producer warpgroup (one thread issues the loads). A ninth warp
  // alone would cap every thread at 168 registers (3 warps on one scheduler's 16K registers);
  // setmaxnreg moves the producer's to the consumers instead.
  static constexpr int kThreads = 128 * (kWarpgroups + 1);
  static constexpr int kProducerRegisters = 24;
  static constexpr int kConsumerRegisters = 240;
  static_assert(128 * kProducerRegisters + 128 * kWarpgroups * kConsumerRegisters <= 65536);
  static constexpr int kStages = 3;  // staged pages: j + 1 and j + 2 load while page j is used
  // A staged page (and Q's codes): the 512 latent bytes of each token as 4 chunks of 128 bytes
  // (TMA boxes of 128 bytes x 64 tokens, 128-byte swizzle: 5 copies a page instead of nine
  // 64-byte boxes, measured ~3% faster), then the 64 RoPE bytes as one box of 64-byte rows
  // (64-byte swizzle).
  static constexpr int kLatentChunk = 128;
  static constexpr int kLatentChunks = kHeadDimV / kLatentChunk;                          // 4
  static constexpr int kLatentChunkBytes = kBlockN * kLatentChunk;                        // 8 KiB
  static constexpr int kRopeBytesPerRow = kHeadDimQK - kHeadDimV;                         // 64
  static constexpr int kRopeOffset = kLatentChunks * kLatentChunkBytes;                   // 32 KiB
  static constexpr int kRopeMapColumn = kHeadDimV;  // the RoPE box's first column in the rope map
  static constexpr std::uint32_t kStageBytes = kRopeOffset + kBlockN * kRopeBytesPerRow;  // one page, 36 KiB
  static constexpr int kVtHalfBytes = kVColsPerWarpgroup * kBlockN;                       // 16 KiB
  // P is multiplied by 2^8 before its e4m3 rounding: probabilities down to 2^-14 stay normal
  // (e4m3's smallest normal is 2^-6), and the output takes 2^-8 back.
  static constexpr float kPScale = 256.f;

  // Q codes and a staged page, (rows, columns) K-major: the latent columns with the 128-byte
  // swizzle, tiling the 8 x 128 atom down the rows first (each 128-column chunk in its own 8 KiB,
  // as one TMA box writes it), the RoPE columns after them with the 64-byte swizzle.
  using SmemLayoutLatent = decltype(cute::tile_to_shape(
      cute::GMMA::Layout_K_SW128_Atom<Code>{}, cute::Shape<cute::Int<kBlockM>, cute::Int<kHeadDimV>>{}));
  using SmemLayoutRope =
      decltype(cute::tile_to_shape(cute::GMMA::Layout_K_SW64_Atom<Code>{},
                                   cute::Shape<cute::Int<kBlockM>, cute::Int<kRopeBytesPerRow>>{}));
  static_assert(kBlockM == kBlockN);
  // V^T of one warpgroup's half: (256 dims, 64 token positions) K-major, 64-byte swizzle. The
  // positions are the page's tokens in the order P's registers hold them (token_at, common/codes.cuh).
  using SmemLayoutVt =
      decltype(cute::tile_to_shape(cute::GMMA::Layout_K_SW64_Atom<Code>{},
                                   cute::Shape<cute::Int<kVColsPerWarpgroup>, cute::Int<kBlockN>>{}));
  // P codes, (rows, positions) K-major: warpgroup 0's A operand.
  using SmemLayoutP = decltype(cute::tile_to_shape(cute::GMMA::Layout_K_SW64_Atom<Code>{},
                                                   cute::Shape<cute::Int<kBlockM>, cute::Int<kBlockN>>{}));

  using QKShape = cute::Shape<cute::Int<kBlockM>, cute::Int<kBlockN>, cute::_32>;
  using PVShape = cute::Shape<cute::Int<kBlockM>, cute::Int<kVColsPerWarpgroup>, cute::_32>;
  using TiledMmaQK = decltype(cute::make_tiled_mma(
      cute::SM90::GMMA::ss_op_selector<Code, Code, float, QKShape, cute::GMMA::Major::K,
                                       cute::GMMA::Major::K>()));
  using TiledMmaPVRegisters = decltype(cute::make_tiled_mma(
      cute::SM90::GMMA::rs_op_selector<Code, Code, float, PVShape, cute::GMMA::Major::K,
                                       cute::GMMA::Major::K>()));
  using TiledMmaPVShared = decltype(cute::make_tiled_mma(
      cute::SM90::GMMA::ss_op_selector<Code, Code, float, PVShape, cute::GMMA::Major::K,
                                       cute::GMMA::Major::K>()));

  static_assert(kVColsPerWarpgroup * kWarpgroups == kHeadDimV);
  static_assert(cute::cosize_v<SmemLayoutLatent> == kRopeOffset);
  static_assert(cute::cosize_v<SmemLayoutRope> == kBlockN * kRopeBytesPerRow);
  static_assert(cute::cosize_v<SmemLayoutVt> == kVtHalfBytes);

  struct alignas(1024) SharedStorage {
    alignas(1024) std::uint8_t q[kStageBytes];               // Q codes, laid out like a staged page
    alignas(1024) std::uint8_t stage[kStages][kStageBytes];  // pages as TMA writes them
    alignas(1024) std::uint8_t vt[2][2 * kVtHalfBytes];      // V^T of pages j (j % 2)
    alignas(1024) std::uint8_t p[2][kBlockM * kBlockN];      // P codes of page j (j % 2)
    float scale[2][kBlockM];   // exp2(previous max - max after page j), per row (j % 2)
    float q_scale[kBlockM];    // a row's q code scale (amax / 448; 0 for a zero or padded row)
    int stage_valid[kStages];  // valid tokens of the staged page (the producer writes it before the copies)
    float final_max[2][kBlockM];  // a piece's running max (log2 units) and row sum, by piece parity
    float final_sum[2][kBlockM];
    alignas(8) std::uint64_t stage_full[kStages];  // TMA bytes of a staged page landed
    alignas(8) std::uint64_t slot_free[kStages];   // S and the transpose are done with a staged page
    alignas(8) std::uint64_t vt_ready[2];  // V^T of page j written (and P V of j - 2 done): 128 arrivals
    alignas(8) std::uint64_t p_ready[2];   // P and scales of page j published: 128 arrivals
    alignas(8) std::uint64_t wg1_done[2];  // warpgroup 1's P V of page j completed: 128 arrivals
    alignas(8) std::uint64_t final_ready[2];
    alignas(8) std::uint64_t final_read[2];
  };

  // Named barrier (id after CUTLASS's reserved ones; kWarpgroupSync + 1 for warpgroup 1's
  // threads): its Q codes and scales written, and read before the next piece's are.
  enum Barrier : std::uint32_t { kWarpgroupSync = 1 };
};

using paged_sm90_fp8::token_at;

}  // namespace cutelab::mla::paged_sm90_fp8_v2
