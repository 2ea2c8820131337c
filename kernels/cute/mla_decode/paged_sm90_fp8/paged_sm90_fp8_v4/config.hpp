#pragma once
// paged_sm90_fp8 v4: every compile-time constant, layout, GEMM atom, the shared-memory plan and
// the barriers of the version (README.md beside this file gives the design and its reasoning).
//
// fp8_token caches (512 e4m3 latent values, 4 fp32 group scales and 64 bf16 RoPE values per
// token) on FP8 tensor cores, v3's page loop. The third warpgroup stages the pages and then
// requantises each in place to one reference scale M, the largest group scale of the piece so
// far: code' = e4m3(code x s[token][group] / M), and the bf16 RoPE values divided by M. One S
// per page then comes out of one accumulator: S = q_scale x M x (Q8 . K'^T) + Q_rope . K_rope^T,
// Q's latent columns as e4m3 codes in shared memory, its RoPE columns (divided by q_scale) as
// the bf16 A operand of an RS wgmma into the same accumulator. Warpgroup 0 transposes the
// requantised page into V^T as v3 does; O takes M / 2^8 at the end and M_old / M whenever M moves.

#include <cstdint>

#include <cute/arch/mma_sm90.hpp>
#include <cute/atom/mma_traits_sm90_gmma.hpp>
#include <cute/tensor.hpp>

#include "cute/mla_decode/paged_sm90/common/traits.hpp"
#include "cute/mla_decode/paged_sm90_fp8/common/tensor_core_switches.hpp"
#include "cute/mla_decode/paged_sm90_fp8/common/token_order.hpp"
#include "mla_decode/fp8/kv_format.hpp"

namespace cutelab::mla::paged_sm90_fp8_v4 {

// What the thread issuing the page loads keeps in shared memory: the end of the piece its next
// page is in, and how many loads it has issued.
struct IssueState {
  int end, issued;
};

struct Traits : paged_sm90::TileConstants, paged_sm90_fp8::TensorCoreSwitches {
  using Element = cute::bfloat16_t;  // q as given, the RoPE operands, out
  using Code = cute::float_e4m3_t;   // Q's and the page's latent columns, V^T, P
  static constexpr int kWarpgroups = 2;
  static constexpr int kThreads = 128 * (kWarpgroups + 1);
  // setmaxnreg per warpgroup: the third requantises (v3's only issued loads: 24), and the two
  // consumers differ: warpgroup 1 holds O's half, S, P and Q's RoPE operand (16 more than v3),
  // warpgroup 0 O's half and the transposer's rows. The three share what the CTA got at launch:
  // 168 registers a thread (65,536 / 384 rounded down to 8), 504 for one thread of each.
  static constexpr int kProducerRegisters = 56;
  static constexpr int kTransposerRegisters = 216;
  static constexpr int kOwnerRegisters = 232;
  static_assert(kProducerRegisters + kTransposerRegisters + kOwnerRegisters <= 3 * 168);
  static constexpr int kStages = 3;
  // A staged page: the 512 latent bytes of each token as 4 chunks of 128 bytes (one scale group
  // each: TMA boxes of 128 bytes x 64 tokens, 128-byte swizzle), then the 64 bf16 RoPE values as
  // one box of 128-byte rows (128-byte swizzle, bf16 K-major). The scales stay in global memory:
  // the requantising threads read them (from L2: the page's copies just brought their sectors).
  static constexpr int kLatentChunk = kFp8GroupCols;                      // 128
  static constexpr int kLatentChunks = kHeadDimV / kLatentChunk;          // 4
  static constexpr int kLatentChunkBytes = kBlockN * kLatentChunk;        // 8 KiB
  static constexpr int kRopeCols = kHeadDimQK - kHeadDimV;                // 64
  static constexpr int kRopeOffset = kLatentChunks * kLatentChunkBytes;   // 32 KiB
  static constexpr int kRopeMapColumn = 0;  // the rope map spans fp8_token's bf16 RoPE values only
  static constexpr int kRopeBytes = kBlockN * kRopeCols * 2;              // 8 KiB
  static constexpr std::uint32_t kStageBytes = kRopeOffset + kRopeBytes;  // 40 KiB
  static constexpr int kVtHalfBytes = kVColsPerWarpgroup * kBlockN;       // 16 KiB
  static constexpr float kPScale = 256.f;  // P x 2^8 before its e4m3 rounding (v2's reasoning)
  static_assert(kLatentChunks == kFp8Groups);

  // Byte offset in a staged page of the k-th (0-7) 16-byte unit that requantising thread
  // (token, half) rewrites in scale group 2 half + g: a unit of its token's row in that group's
  // chunk (one scale for the whole unit), the row's units visited in the order k ^ (token % 8) so
  // that a warp's accesses fall on all banks (host-tested: every unit once, 4 wavefronts a warp).
  static constexpr std::uint32_t requant_unit(int token, int half, int g, int k) {
    return static_cast<std::uint32_t>(((2 * half + g) * kLatentChunkBytes + token * 128) ^
                                      (((token % 8) ^ k) << 4));
  }

  // Q's latent codes and a staged page's latent columns, (rows, bytes) K-major, 128-byte swizzle,
  // each 128-column chunk in its own 8 KiB (as one TMA box writes it).
  using SmemLayoutLatent = decltype(cute::tile_to_shape(
      cute::GMMA::Layout_K_SW128_Atom<Code>{}, cute::Shape<cute::Int<kBlockM>, cute::Int<kHeadDimV>>{}));
  // A staged page's RoPE values, (tokens, 64) bf16 K-major, 128-byte swizzle.
  using SmemLayoutRope = decltype(cute::tile_to_shape(
      cute::GMMA::Layout_K_SW128_Atom<Element>{}, cute::Shape<cute::Int<kBlockN>, cute::Int<kRopeCols>>{}));
  static_assert(kBlockM == kBlockN);
  // V^T of one warpgroup's half and P: as in v2 (64-byte swizzle, P's token order: token_at).
  using SmemLayoutVt =
      decltype(cute::tile_to_shape(cute::GMMA::Layout_K_SW64_Atom<Code>{},
                                   cute::Shape<cute::Int<kVColsPerWarpgroup>, cute::Int<kBlockN>>{}));
  using SmemLayoutP = decltype(cute::tile_to_shape(cute::GMMA::Layout_K_SW64_Atom<Code>{},
                                                   cute::Shape<cute::Int<kBlockM>, cute::Int<kBlockN>>{}));

  using QKShape = cute::Shape<cute::Int<kBlockM>, cute::Int<kBlockN>, cute::_32>;
  using QKRopeShape = cute::Shape<cute::Int<kBlockM>, cute::Int<kBlockN>, cute::_16>;
  using PVShape = cute::Shape<cute::Int<kBlockM>, cute::Int<kVColsPerWarpgroup>, cute::_32>;
  using TiledMmaQK = decltype(cute::make_tiled_mma(
      cute::SM90::GMMA::ss_op_selector<Code, Code, float, QKShape, cute::GMMA::Major::K,
                                       cute::GMMA::Major::K>()));
  // bf16 RoPE product into S's accumulator (an m64n64 fp32 accumulator has one layout for both).
  using TiledMmaQKRope = decltype(cute::make_tiled_mma(
      cute::SM90::GMMA::rs_op_selector<Element, Element, float, QKRopeShape, cute::GMMA::Major::K,
                                       cute::GMMA::Major::K>()));
  using TiledMmaPVRegisters = decltype(cute::make_tiled_mma(
      cute::SM90::GMMA::rs_op_selector<Code, Code, float, PVShape, cute::GMMA::Major::K,
                                       cute::GMMA::Major::K>()));
  using TiledMmaPVShared = decltype(cute::make_tiled_mma(
      cute::SM90::GMMA::ss_op_selector<Code, Code, float, PVShape, cute::GMMA::Major::K,
                                       cute::GMMA::Major::K>()));

  static_assert(kVColsPerWarpgroup * kWarpgroups == kHeadDimV);
  static_assert(cute::cosize_v<SmemLayoutLatent> == kRopeOffset);
  static_assert(cute::cosize_v<SmemLayoutRope> * 2 == kRopeBytes);
  static_assert(cute::cosize_v<SmemLayoutVt> == kVtHalfBytes);

  struct alignas(1024) SharedStorage {
    alignas(1024) std::uint8_t q[kRopeOffset];               // Q's latent codes (its RoPE: registers)
    alignas(1024) std::uint8_t stage[kStages][kStageBytes];  // pages as TMA writes them, then requantised
    alignas(1024) std::uint8_t vt[2][2 * kVtHalfBytes];      // V^T of pages j (j % 2)
    alignas(1024) std::uint8_t p[2][kBlockM * kBlockN];      // P codes of page j (j % 2)
    float scale[2][kBlockM];      // O's factor before page j's P V, per row (j % 2)
    float q_scale[kBlockM];       // a row's q code scale (latent amax / 448; 1 for a zero or padded row)
    int stage_valid[kStages];     // valid tokens of the staged page (the issuing thread writes it)
    float page_ref[kStages];      // M the staged page was requantised to (the requantiser's)
    float page_m[2];              // M of page j, published with its P (j % 2)
    float ref_part[2][4];         // per producer warp, a page's largest scale (page parity)
    IssueState issue;             // the issuing thread's: its piece end, loads issued
    float final_max[2][kBlockM];  // a piece's running max (log2 units) and row sum, by piece parity
    float final_sum[2][kBlockM];
    alignas(8) std::uint64_t stage_full[kStages];  // TMA bytes of a staged page landed
    alignas(8) std::uint64_t k_ready[kStages];     // the staged page requantised: 128 arrivals
    alignas(8) std::uint64_t slot_free[kStages];   // S and the transpose are done with a staged page
    alignas(8) std::uint64_t vt_ready[2];  // V^T of page j written (and P V of j - 2 done): 128 arrivals
    alignas(8) std::uint64_t p_ready[2];   // P and scales of page j published: 128 arrivals
    alignas(8) std::uint64_t wg1_done[2];  // warpgroup 1's P V of page j completed: 128 arrivals
    alignas(8) std::uint64_t final_ready[2];
    alignas(8) std::uint64_t final_read[2];
  };
  static_assert(sizeof(SharedStorage) <= 232448, "more than an SM90 CTA's dynamic shared memory");

  // Named barriers (ids after CUTLASS's reserved ones), one per warpgroup for its own threads:
  // kWarpgroupSync + 0/1 the consumers (as v2), + 2 the requantising warpgroup.
  enum Barrier : std::uint32_t { kWarpgroupSync = 1 };
};

using paged_sm90_fp8::token_at;

}  // namespace cutelab::mla::paged_sm90_fp8_v4
