#pragma once
// paged_sm90_pairs v1: every compile-time constant, layout and the shared-memory plan in one place.
//
// paged_sm90 v1 has both consumer warpgroups compute the same S = Q K^T. This design gives each
// page to one of them: pages go in pairs, warpgroup 0 computes S for the first, warpgroup 1 for the second.
// They exchange row maxima and their P tiles through shared memory, and each multiplies both P
// tiles into its half of O (own P from registers, the other's from shared memory). To make room
// for the two P tiles, Q's RoPE columns (512..575) live in registers (RS wgmma) instead of
// shared memory.

#include <cstddef>
#include <cstdint>

#include <cute/tensor.hpp>
#include <cute/arch/mma_sm90.hpp>
#include <cute/atom/mma_traits_sm90_gmma.hpp>

#include "cute/mla_decode/paged_sm90/common/host.hpp"
#include "mla_decode/common/problem.hpp"

namespace cutelab::mla::paged_sm90_pairs_v1 {

template <class Element_>
struct Traits {
  using Element = Element_;  // cute::bfloat16_t or cute::half_t

  static constexpr int kBlockM = 64;                   // packed query rows per CTA
  static constexpr int kBlockN = kPageSize;            // tokens per KV tile = one page
  static constexpr int kHeadDimQK = mla::kHeadDimQK;
  static constexpr int kHeadDimV = mla::kHeadDimV;
  static constexpr int kChunk = 64;                    // TMA box width: one 128-byte swizzle row
  static constexpr int kNumChunks = kHeadDimQK / kChunk;
  static constexpr int kStages = 2;                    // one page per consumer warpgroup
  static constexpr int kConsumerWarpgroups = 2;
  static constexpr int kThreads = 128 * (1 + kConsumerWarpgroups);
  static constexpr int kConsumerThreads = 128 * kConsumerWarpgroups;
  static constexpr int kVColsPerWarpgroup = kHeadDimV / kConsumerWarpgroups;
  static constexpr int kProducerRegisters = 40;
  static constexpr int kConsumerRegisters = 232;
  static constexpr int kTileElements = kBlockN * kHeadDimQK;
  static constexpr std::uint32_t kTileBytes = kTileElements * sizeof(Element);

  static_assert(kThreads == paged_sm90::kThreads && kBlockM == paged_sm90::kBlockM);
  static_assert(kHeadDimV % kChunk == 0 && kHeadDimV % (kChunk * kConsumerWarpgroups) == 0);
  static_assert(kChunk * sizeof(Element) == 128, "one TMA box row must be one 128-byte swizzle row");
  static_assert(kStages == kConsumerWarpgroups, "pages are handed out one per consumer warpgroup");
  static_assert(128 * (kProducerRegisters + kConsumerWarpgroups * kConsumerRegisters) <= 65536);

  using SmemLayoutQ = decltype(cute::tile_to_shape(cute::GMMA::Layout_K_SW128_Atom<Element>{},
                                                   cute::Shape<cute::Int<kBlockM>, cute::Int<kHeadDimV>>{}));
  using SmemLayoutK = decltype(cute::tile_to_shape(cute::GMMA::Layout_K_SW128_Atom<Element>{},
                                                   cute::Shape<cute::Int<kBlockN>, cute::Int<kHeadDimQK>>{}));
  using SmemLayoutV = decltype(cute::tile_to_shape(cute::GMMA::Layout_MN_SW128_Atom<Element>{},
                                                   cute::Shape<cute::Int<kVColsPerWarpgroup>, cute::Int<kBlockN>>{},
                                                   cute::Step<cute::_2, cute::_1>{}));
  // P of one page: (rows, tokens), K-major: the A operand of the other warpgroup's P V.
  using SmemLayoutP = decltype(cute::tile_to_shape(cute::GMMA::Layout_K_SW128_Atom<Element>{},
                                                   cute::Shape<cute::Int<kBlockM>, cute::Int<kBlockN>>{}));
  static constexpr int kVHalfOffset = kVColsPerWarpgroup / kChunk * kBlockN * kChunk;  // elements

  using QKShape = cute::Shape<cute::Int<kBlockM>, cute::Int<kBlockN>, cute::_16>;
  using PVShape = cute::Shape<cute::Int<kBlockM>, cute::Int<kVColsPerWarpgroup>, cute::_16>;
  using TiledMmaQK = decltype(cute::make_tiled_mma(
      cute::SM90::GMMA::ss_op_selector<Element, Element, float, QKShape, cute::GMMA::Major::K, cute::GMMA::Major::K>()));
  using TiledMmaQKRope = decltype(cute::make_tiled_mma(
      cute::SM90::GMMA::rs_op_selector<Element, Element, float, QKShape, cute::GMMA::Major::K, cute::GMMA::Major::K>()));
  using TiledMmaPVOwn = decltype(cute::make_tiled_mma(
      cute::SM90::GMMA::rs_op_selector<Element, Element, float, PVShape, cute::GMMA::Major::K, cute::GMMA::Major::MN>()));
  using TiledMmaPVOther = decltype(cute::make_tiled_mma(
      cute::SM90::GMMA::ss_op_selector<Element, Element, float, PVShape, cute::GMMA::Major::K, cute::GMMA::Major::MN>()));

  struct alignas(1024) SharedStorage {
    alignas(1024) cute::array_aligned<Element, cute::cosize_v<SmemLayoutQ>> q;
    alignas(1024) cute::array_aligned<Element, kTileElements> kv[kStages];
    alignas(1024) cute::array_aligned<Element, cute::cosize_v<SmemLayoutP>> p[kConsumerWarpgroups];
    float row_max[kConsumerWarpgroups][kBlockM];  // this pair's page maxima, log2 units
    float row_sum[kConsumerWarpgroups][kBlockM];  // each warpgroup's share of a piece's sums
    alignas(8) std::uint64_t kv_full[kStages];
    alignas(8) std::uint64_t kv_empty[kStages];
  };

  // Named barriers (ids after CUTLASS's reserved ones).
  enum Barrier : std::uint32_t {
    kQFree = 0,         // both consumers finished the previous piece's Q K^T
    kQReady = 1,        // the new Q tile is in shared memory
    kMaxReady = 2,      // both page maxima of a pair written
    kPReady = 3,        // both P tiles of a pair written
    kSumReady = 4,      // both row-sum shares of a piece written
    kWarpgroupSync = 5  // + warpgroup index: V tail zeroed before the warpgroup's P V
  };
  static constexpr int kConsumerWarps = kConsumerThreads / 32;
};

}  // namespace cutelab::mla::paged_sm90_pairs_v1
