#pragma once
// paged_sm90 v2: every compile-time constant, layout, GEMM atom, the shared-memory plan and the
// barriers of the version (README.md beside this file gives the design and its reasoning).
//
// Two warpgroups, no producer: pages go in pairs, warpgroup 0 computes S = Q K^T of the first
// page (buffer 0), warpgroup 1 of the second (buffer 1) — each S once. Warpgroup 0 owns
// O[:, 0:256], warpgroup 1 O[:, 256:512]; each multiplies its own P from registers and the
// other's from shared memory. The two agree on the running row max through shared memory
// (warpgroup 0 first, then warpgroup 1 on top of it), so each page's P is exponentiated once.
// Each KV buffer is two column groups, refilled by their last reader as soon as a wgmma wait
// proves the read done: group 0 (chunks 0-3, V columns 0-255) by warpgroup 0, group 1 (chunks
// 4-8: V columns 256-511 and the RoPE chunk) by warpgroup 1. Q's RoPE columns live in registers.

#include <cstdint>

#include "cute/mla_decode/paged_sm90/common/traits.hpp"

namespace cutelab::mla::paged_sm90_v2 {

template <class Element_>
struct Traits : paged_sm90::TileConstants,
                paged_sm90::TraitsTypes<Element_>,
                paged_sm90::TwoWarpgroupTypes<Element_> {
  using Element = Element_;  // cute::bfloat16_t or cute::half_t
  using Types = paged_sm90::TraitsTypes<Element_>;

  static constexpr int kLatentChunks = kHeadDimV / kChunk;  // chunks 0-7 are also V
  static constexpr int kWarpgroups = 2;
  static constexpr int kThreads = 128 * kWarpgroups;
  static constexpr int kStages = 2;  // KV buffers: one page per warpgroup

  // Column group 0 of a buffer is chunks [0, kGroupSplit), group 1 chunks [kGroupSplit, kNumChunks).
  static constexpr int kGroupSplit = kVColsPerWarpgroup / kChunk;
  CUTE_HOST_DEVICE static constexpr int group_begin(int g) { return g == 0 ? 0 : kGroupSplit; }
  CUTE_HOST_DEVICE static constexpr int group_end(int g) { return g == 0 ? kGroupSplit : kNumChunks; }
  static constexpr std::uint32_t kChunkBytes = kBlockN * kChunk * sizeof(Element);
  static constexpr int kQKStepsPerChunk = kChunk / 16;

  static_assert(kVColsPerWarpgroup * kWarpgroups == kHeadDimV);
  static_assert(kGroupSplit == 4 && kNumChunks == 9, "groups of 4 + 5 chunks: 256 V columns, then the rest");

  using Shared = paged_sm90::TwoWarpgroupTypes<Element_>;
  using typename Shared::SmemLayoutP;
  using typename Shared::SmemLayoutQ;  // (named here: a dependent base's members are not found unqualified)

  struct alignas(1024) SharedStorage {
    alignas(1024) cute::array_aligned<Element, cute::cosize_v<SmemLayoutQ>> q;
    alignas(1024) cute::array_aligned<Element, kTileElements> kv[kStages];
    alignas(1024) cute::array_aligned<Element, cute::cosize_v<SmemLayoutP>> p[kWarpgroups];  // P of buffer k
    float max_a[kBlockM];    // running max after page a (log2 units)
    float scale_a[kBlockM];  // exp2(previous max - max_a)
    float max_b[kBlockM];    // running max after page b
    float scale_b[kBlockM];  // exp2(max_a - max_b)
    float row_sum[kWarpgroups][kBlockM];
    alignas(8) std::uint64_t kv_ready[kStages][kNumChunks];  // TMA bytes of one chunk landed
    // One pair of pages: [0] warpgroup 0 published P of page a, max_a and scale_a; [1] warpgroup 1
    // published P of page b, max_b and scale_b. All 128 threads of the publisher arrive
    // (release), the other warpgroup waits (acquire): one phase per pair.
    alignas(8) std::uint64_t pair_ready[kWarpgroups];
  };

  // Named barriers (ids after CUTLASS's reserved ones).
  enum Barrier : std::uint32_t {
    kBothWarpgroups = 0,  // Q tile loaded; row sums exchanged
    kWarpgroupSync = 1    // + warpgroup index: V tail zeroed before the warpgroup's P V
  };
};

}  // namespace cutelab::mla::paged_sm90_v2
