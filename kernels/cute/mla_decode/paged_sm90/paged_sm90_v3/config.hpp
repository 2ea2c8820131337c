#pragma once
// paged_sm90 v3: every compile-time constant, layout and the shared-memory plan in one place.
//
// One CTA = 64 packed query rows (s_q x heads of one KV head) of one request piece at a time.
// Warpgroup 0 streams KV pages with TMA through a 2-stage ring; warpgroups 1 and 2 each compute
// the full S = Q K^T of a page (duplicated, so they never exchange softmax state), then
// O[:, half] += P V[:, half] with P taken straight from registers (RS wgmma). V is not loaded:
// it is the K tile read through a transposed (MN-major) view.

#include <cstddef>
#include <cstdint>

#include <cute/tensor.hpp>
#include <cute/arch/mma_sm90.hpp>
#include <cute/atom/mma_traits_sm90_gmma.hpp>

#include "cute/mla_decode/paged_sm90/paged_sm90_v3/api.hpp"
#include "mla_decode/common/problem.hpp"

namespace cutelab::mla::paged_sm90_v3 {

template <class Element_>
struct Traits {
  using Element = Element_;  // cute::bfloat16_t or cute::half_t

  static constexpr int kBlockM = 64;                   // packed query rows per CTA
  static constexpr int kBlockN = kPageSize;            // tokens per KV tile = one page
  static constexpr int kHeadDimQK = mla::kHeadDimQK;
  static constexpr int kHeadDimV = mla::kHeadDimV;
  static constexpr int kChunk = 64;                    // TMA box width: one 128-byte swizzle row
  static constexpr int kNumChunks = kHeadDimQK / kChunk;
  static constexpr int kStages = 2;
  static constexpr int kConsumerWarpgroups = 2;
  static constexpr int kThreads = 128 * (1 + kConsumerWarpgroups);
  static constexpr int kConsumerThreads = 128 * kConsumerWarpgroups;
  static constexpr int kVColsPerWarpgroup = kHeadDimV / kConsumerWarpgroups;
  static constexpr int kProducerRegisters = 40;
  static constexpr int kConsumerRegisters = 232;
  static constexpr int kTileElements = kBlockN * kHeadDimQK;
  static constexpr std::uint32_t kTileBytes = kTileElements * sizeof(Element);
  static constexpr std::uint32_t kChunkBytes = kBlockN * kChunk * sizeof(Element);
  static constexpr int kStepsPerChunk = kChunk / 16;  // k-steps of m64n64k16 per chunk

  static_assert(kThreads == paged_sm90::kThreads && kBlockM == paged_sm90::kBlockM);
  static_assert(kHeadDimQK % kChunk == 0 && kHeadDimV % (kChunk * kConsumerWarpgroups) == 0);
  static_assert(kChunk * sizeof(Element) == 128, "one TMA box row must be one 128-byte swizzle row");
  // Register budget of setmaxnreg: 65536 registers per SM, one CTA.
  static_assert(128 * (kProducerRegisters + kConsumerWarpgroups * kConsumerRegisters) <= 65536);

  // Q and K tiles: K-major (head dim contiguous), 128-byte swizzle; tiling the 8x64 atom down
  // the rows first puts each 64-column chunk in its own contiguous 8 KiB, which is exactly what
  // one TMA box of 64 tokens x 64 columns writes.
  using SmemLayoutQ = decltype(cute::tile_to_shape(cute::GMMA::Layout_K_SW128_Atom<Element>{},
                                                   cute::Shape<cute::Int<kBlockM>, cute::Int<kHeadDimQK>>{}));
  using SmemLayoutK = decltype(cute::tile_to_shape(cute::GMMA::Layout_K_SW128_Atom<Element>{},
                                                   cute::Shape<cute::Int<kBlockN>, cute::Int<kHeadDimQK>>{}));
  // One warpgroup's V half, (dims, tokens), MN-major over the same bytes: tile along the tokens
  // first (Step<_2,_1>) so chunk c of 64 dims lands where the K layout keeps it.
  using SmemLayoutV = decltype(cute::tile_to_shape(cute::GMMA::Layout_MN_SW128_Atom<Element>{},
                                                   cute::Shape<cute::Int<kVColsPerWarpgroup>, cute::Int<kBlockN>>{},
                                                   cute::Step<cute::_2, cute::_1>{}));
  static constexpr int kVHalfOffset = kVColsPerWarpgroup / kChunk * kBlockN * kChunk;  // elements

  using TiledMmaQK = decltype(cute::make_tiled_mma(
      cute::SM90::GMMA::ss_op_selector<Element, Element, float, cute::Shape<cute::Int<kBlockM>, cute::Int<kBlockN>, cute::_16>,
                                       cute::GMMA::Major::K, cute::GMMA::Major::K>()));
  using TiledMmaPV = decltype(cute::make_tiled_mma(
      cute::SM90::GMMA::rs_op_selector<Element, Element, float,
                                       cute::Shape<cute::Int<kBlockM>, cute::Int<kVColsPerWarpgroup>, cute::_16>,
                                       cute::GMMA::Major::K, cute::GMMA::Major::MN>()));

  struct alignas(1024) SharedStorage {
    alignas(1024) cute::array_aligned<Element, cute::cosize_v<SmemLayoutQ>> q;
    alignas(1024) cute::array_aligned<Element, kTileElements> kv[kStages];
    alignas(8) std::uint64_t kv_full[kStages][kNumChunks];  // TMA bytes of one chunk landed
    alignas(8) std::uint64_t kv_empty[kStages];  // every consumer warp is done with a tile
  };

  // Named barriers (ids after CUTLASS's reserved ones).
  enum Barrier : std::uint32_t {
    kQFree = 0,         // both consumer warpgroups finished the previous piece's Q K^T
    kQReady = 1,        // the new Q tile is in shared memory
    kWarpgroupSync = 2  // + warpgroup index: V tail zeroed before the warpgroup's P V
  };
  static constexpr int kConsumerWarps = kConsumerThreads / 32;
};

}  // namespace cutelab::mla::paged_sm90_v3
