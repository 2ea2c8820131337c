#pragma once
// paged_sm90 v8: every compile-time constant, layout, GEMM atom, the shared-memory plan and the
// barriers of the version (README.md beside this file gives the design and its prediction).
//
// For at most kRows (16 or 32) packed query rows a KV head. Both products are computed transposed so
// that N, not a padded m64 tile, is the query rows: warpgroup 1 computes S^T = K Q^T (M = the page's
// 64 tokens, N = kRows) and the softmax down S^T's columns (one exchange of page maxima between its
// warps), and publishes P^T; warpgroup 0 computes all of O^T = V^T P^T (M = V's 512 dims in eight m64
// tiles, V^T an MN-major view of the staged page) and writes out. The page ring, the Q tile by TMA
// and the per-piece state hand-off are v3's.

#include <cstdint>

#include <cute/arch/mma_sm90.hpp>
#include <cute/atom/mma_traits_sm90_gmma.hpp>
#include <cute/tensor.hpp>

#include "cute/mla_decode/paged_sm90/common/traits.hpp"

namespace cutelab::mla::paged_sm90_v8 {

template <class Element_, int kRows_>
struct Traits : paged_sm90::TileConstants, paged_sm90::TraitsTypes<Element_> {
  using Element = Element_;             // cute::bfloat16_t or cute::half_t
  static constexpr int kRows = kRows_;  // N of S^T and O^T: the packed query rows a CTA serves
  static_assert(kRows == 16 || kRows == 32);

  static constexpr int kLatentChunks = kHeadDimV / kChunk;  // chunks 0-7 are also V
  static constexpr int kWarpgroups = 2;
  static constexpr int kThreads = 128 * kWarpgroups;
  static constexpr int kStages = 2;  // KV buffers: page g in buffer g % 2
  static constexpr std::uint32_t kChunkBytes = kBlockN * kChunk * sizeof(Element);
  static constexpr int kRowsPerThread = kRows / 4;  // S^T / O^T columns a thread holds

  // Q as S^T's B operand: (rows, 576) K-major, 128-byte swizzle; chunk c of 64 columns is its own
  // contiguous kRows x 128 bytes, where one TMA box of the Q tile lands.
  using SmemLayoutQ = decltype(cute::tile_to_shape(cute::GMMA::Layout_K_SW128_Atom<Element>{},
                                                   cute::Shape<cute::Int<kRows>, cute::Int<kHeadDimQK>>{}));
  // P^T of one page as O^T's B operand: (rows, tokens) K-major, 128-byte swizzle.
  using SmemLayoutPT = decltype(cute::tile_to_shape(cute::GMMA::Layout_K_SW128_Atom<Element>{},
                                                    cute::Shape<cute::Int<kRows>, cute::Int<kBlockN>>{}));
  // V^T as O^T's A operand: (512 dims, tokens), MN-major over the K tile's bytes (chunk c of 64 dims
  // where the K layout keeps it: tiled along the tokens first).
  using SmemLayoutVT = decltype(cute::tile_to_shape(cute::GMMA::Layout_MN_SW128_Atom<Element>{},
                                                    cute::Shape<cute::Int<kHeadDimV>, cute::Int<kBlockN>>{},
                                                    cute::Step<cute::_2, cute::_1>{}));

  using STShape = cute::Shape<cute::Int<kBlockN>, cute::Int<kRows>, cute::_16>;
  using OTShape = cute::Shape<cute::_64, cute::Int<kRows>, cute::_16>;
  using TiledMmaST = decltype(cute::make_tiled_mma(
      cute::SM90::GMMA::ss_op_selector<Element, Element, float, STShape, cute::GMMA::Major::K,
                                       cute::GMMA::Major::K>()));
  using TiledMmaOT = decltype(cute::make_tiled_mma(
      cute::SM90::GMMA::ss_op_selector<Element, Element, float, OTShape, cute::GMMA::Major::MN,
                                       cute::GMMA::Major::K>()));

  // Out rows of a finished piece staged for whole-row stores: kRows rows of 512 values, 16-byte
  // unit u of row n at unit u ^ (n % 8) (the eight rows one stmatrix writes fall on distinct banks).
  static constexpr int kStageRowBytes = kHeadDimV * static_cast<int>(sizeof(Element));

  struct alignas(1024) SharedStorage {
    alignas(1024) cute::array_aligned<Element, cute::cosize_v<SmemLayoutQ>> q;
    alignas(1024) cute::array_aligned<Element, kTileElements> kv[kStages];
    alignas(1024)
        cute::array_aligned<Element, cute::cosize_v<SmemLayoutPT>> pt[kStages];  // P^T of buffer s's page
    alignas(1024) cute::array_aligned<char, kRows * kStageRowBytes> out_rows;
    float scale[kStages][kRows];  // exp2(previous max - max after the page), per row
    float max_part[2][4][kRows];  // each warp's page maxima (raw logits), by page parity
    float sum_part[4][kRows];     // each warp's share of a finished piece's row sums
    float final_max[2][kRows];    // a piece's running max (log2 units) and row sum, by piece parity
    float final_sum[2][kRows];
    alignas(8) std::uint64_t kv_ready[kStages][kNumChunks];  // TMA bytes of one chunk landed
    alignas(8) std::uint64_t q_ready;                        // TMA bytes of a piece's Q tile landed
    int page_req[kStages];  // request of the page loaded into buffer s (-1: none); the loading thread's own
    // Warpgroup 1 published P^T and the scales of buffer s's page: its 128 threads arrive.
    alignas(8) std::uint64_t p_ready[kStages];
    // Both warpgroups finished reading buffer s (S^T and O^T waited): 256 arrivals.
    alignas(8) std::uint64_t buffer_free[kStages];
    // final_max / final_sum slot s: written by warpgroup 1 (ready, 128 arrivals), read by warpgroup 0
    // (read, 128 arrivals) before warpgroup 1 may write it again two pieces later.
    alignas(8) std::uint64_t final_ready[2];
    alignas(8) std::uint64_t final_read[2];
  };

  // Named barriers (ids after CUTLASS's reserved ones): one per warpgroup, for its own threads.
  enum Barrier : std::uint32_t { kWarpgroupSync = 1 };
};

}  // namespace cutelab::mla::paged_sm90_v8
