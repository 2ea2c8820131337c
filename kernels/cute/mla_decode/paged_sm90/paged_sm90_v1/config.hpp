#pragma once
// paged_sm90 v1: its Q layout, P V atom, shared-memory plan and barriers, over the shared ring
// traits of paged_sm90/common/traits.hpp.
//
// One CTA = 64 packed query rows (s_q x heads of one KV head) of one request piece at a time.
// Warpgroup 0 streams KV pages with TMA through a 2-stage ring; warpgroups 1 and 2 each compute
// the full S = Q K^T of a page (duplicated, so they never exchange softmax state), then
// O[:, half] += P V[:, half] with P taken straight from registers (RS wgmma). V is not loaded:
// it is the K tile read through a transposed (MN-major) view.

#include <cstdint>

#include "cute/mla_decode/paged_sm90/common/traits.hpp"
#include "cute/mla_decode/paged_sm90/paged_sm90_v1/api.hpp"

namespace cutelab::mla::paged_sm90_v1 {

template <class Element_>
struct Traits : paged_sm90::TileConstants, paged_sm90::TraitsTypes<Element_> {
  using Element = Element_;  // cute::bfloat16_t or cute::half_t
  using Types = paged_sm90::TraitsTypes<Element_>;

  // The producer/consumer frame (common/ring.cuh): one TMA warpgroup, two consumer warpgroups,
  // registers moved from the producer to the consumers with setmaxnreg.
  static constexpr int kStages = 2;
  static constexpr int kConsumerWarpgroups = 2;
  static constexpr int kThreads = 128 * (1 + kConsumerWarpgroups);
  static constexpr int kConsumerThreads = 128 * kConsumerWarpgroups;
  static constexpr int kConsumerWarps = kConsumerThreads / 32;
  static constexpr int kProducerRegisters = 40;
  static constexpr int kConsumerRegisters = 232;
  static_assert(kVColsPerWarpgroup * kConsumerWarpgroups == kHeadDimV);
  // Register budget of setmaxnreg: 65536 registers per SM, one CTA.
  static_assert(128 * (kProducerRegisters + kConsumerWarpgroups * kConsumerRegisters) <= 65536);

  // Q tile: the K tile's layout over all 576 columns.
  using SmemLayoutQ = decltype(cute::tile_to_shape(cute::GMMA::Layout_K_SW128_Atom<Element>{},
                                                   cute::Shape<cute::Int<kBlockM>, cute::Int<kHeadDimQK>>{}));
  using TiledMmaPV = decltype(cute::make_tiled_mma(
      cute::SM90::GMMA::rs_op_selector<Element, Element, float, typename Types::PVShape, cute::GMMA::Major::K,
                                       cute::GMMA::Major::MN>()));

  struct alignas(1024) SharedStorage {
    alignas(1024) cute::array_aligned<Element, cute::cosize_v<SmemLayoutQ>> q;
    alignas(1024) cute::array_aligned<Element, kTileElements> kv[kStages];
    alignas(8) std::uint64_t kv_full[kStages];   // TMA bytes of a tile landed
    alignas(8) std::uint64_t kv_empty[kStages];  // every consumer warp is done with a tile
  };

  // Named barriers (ids after CUTLASS's reserved ones).
  enum Barrier : std::uint32_t {
    kQFree = 0,         // both consumer warpgroups finished the previous piece's Q K^T
    kQReady = 1,        // the new Q tile is in shared memory
    kWarpgroupSync = 2  // + warpgroup index: V tail zeroed before the warpgroup's P V
  };
};

}  // namespace cutelab::mla::paged_sm90_v1
