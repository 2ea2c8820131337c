#pragma once
// paged_sm90_pairs v1: its Q and P layouts, GEMM atoms, shared-memory plan and barriers, over the
// shared ring traits of paged_sm90/common/traits.hpp.
//
// paged_sm90 v1 has both consumer warpgroups compute the same S = Q K^T. This design gives each
// page to one of them: pages go in pairs, warpgroup 0 computes S for the first, warpgroup 1 for the second.
// They exchange row maxima and their P tiles through shared memory, and each multiplies both P
// tiles into its half of O (own P from registers, the other's from shared memory). To make room
// for the two P tiles, Q's RoPE columns (512..575) live in registers (RS wgmma) instead of
// shared memory.

#include <cstdint>

#include "cute/mla_decode/paged_sm90/common/traits.hpp"

namespace cutelab::mla::paged_sm90_pairs_v1 {

template <class Element_>
struct Traits : paged_sm90::TraitsConstants, paged_sm90::TraitsTypes<Element_> {
  using Element = Element_;  // cute::bfloat16_t or cute::half_t
  using Types = paged_sm90::TraitsTypes<Element_>;
  static_assert(kStages == kConsumerWarpgroups, "pages are handed out one per consumer warpgroup");

  // Q tile in shared memory: the 512 latent columns only (the RoPE columns live in registers).
  using SmemLayoutQ = decltype(cute::tile_to_shape(cute::GMMA::Layout_K_SW128_Atom<Element>{},
                                                   cute::Shape<cute::Int<kBlockM>, cute::Int<kHeadDimV>>{}));
  // P of one page: (rows, tokens), K-major: the A operand of the other warpgroup's P V.
  using SmemLayoutP = decltype(cute::tile_to_shape(cute::GMMA::Layout_K_SW128_Atom<Element>{},
                                                   cute::Shape<cute::Int<kBlockM>, cute::Int<kBlockN>>{}));

  using TiledMmaQKRope = decltype(cute::make_tiled_mma(
      cute::SM90::GMMA::rs_op_selector<Element, Element, float, typename Types::QKShape, cute::GMMA::Major::K,
                                       cute::GMMA::Major::K>()));
  using TiledMmaPVOwn = decltype(cute::make_tiled_mma(
      cute::SM90::GMMA::rs_op_selector<Element, Element, float, typename Types::PVShape, cute::GMMA::Major::K,
                                       cute::GMMA::Major::MN>()));
  using TiledMmaPVOther = decltype(cute::make_tiled_mma(
      cute::SM90::GMMA::ss_op_selector<Element, Element, float, typename Types::PVShape, cute::GMMA::Major::K,
                                       cute::GMMA::Major::MN>()));

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
};

}  // namespace cutelab::mla::paged_sm90_pairs_v1
