#pragma once
// paged_sm90 v3: every compile-time constant, layout, GEMM atom, the shared-memory plan and the
// barriers of the version (README.md beside this file gives the design and its reasoning).
//
// Two warpgroups, no producer warp. Warpgroup 1 owns S = Q K^T and the softmax of every page:
// it publishes P (bf16) and the rows' rescale factors in shared memory (one-way: it never waits
// for warpgroup 0) and multiplies its P from registers into O[:, 256:512]; warpgroup 0 multiplies
// the published P into O[:, 0:256]; it publishes P after issuing its own P V, so the proxy fence
// the other warpgroup's read of the P tile needs waits under tensor work. The two KV buffers are a ring
// consumed page by page: page g sits in buffer g % 2, and once both warpgroups have finished reading it,
// warpgroup 0 refills the buffer with page g + 2, so a whole page's time is always there for the next load.
// The same thread loads each piece's Q tile by TMA once warpgroup 0 has finished the previous piece's pages
// (its RoPE columns into the free P tile the piece's first page will use; warpgroup 1 takes them
// into registers from there): the load runs under both warpgroups' epilogues instead of starting
// the piece with a round trip to memory. Warpgroup 1 also keeps Q's last latent chunk in registers
// (an RS step of Q K^T): Q K^T's SS steps read 128 bytes of shared memory a tensor clock, all of it.

#include <cstdint>

#include "cute/mla_decode/paged_sm90/common/traits.hpp"

namespace cutelab::mla::paged_sm90_v3 {

template <class Element_>
struct Traits : paged_sm90::TileConstants,
                paged_sm90::TraitsTypes<Element_>,
                paged_sm90::TwoWarpgroupTypes<Element_> {
  using Element = Element_;  // cute::bfloat16_t or cute::half_t
  using Types = paged_sm90::TraitsTypes<Element_>;

  static constexpr int kLatentChunks = kHeadDimV / kChunk;  // chunks 0-7 are also V
  static constexpr int kWarpgroups = 2;
  static constexpr int kThreads = 128 * kWarpgroups;
  static constexpr int kStages = 2;  // KV buffers: page g in buffer g % 2
  static constexpr std::uint32_t kChunkBytes = kBlockN * kChunk * sizeof(Element);
  static constexpr int kQKStepsPerChunk = kChunk / 16;

  static_assert(kVColsPerWarpgroup * kWarpgroups == kHeadDimV);

  using Shared = paged_sm90::TwoWarpgroupTypes<Element_>;
  using typename Shared::SmemLayoutP;
  using typename Shared::SmemLayoutQ;  // (named here: a dependent base's members are not found unqualified)

  struct alignas(1024) SharedStorage {
    alignas(1024) cute::array_aligned<Element, cute::cosize_v<SmemLayoutQ>> q;
    alignas(1024) cute::array_aligned<Element, kTileElements> kv[kStages];
    // P of buffer s's page.
    alignas(1024) cute::array_aligned<Element, cute::cosize_v<SmemLayoutP>> p[kStages];
    float scale[kStages][kBlockM];  // exp2(previous max - max after the page), per row
    float final_max[2][kBlockM];    // a piece's running max (log2 units) and row sum, by piece parity
    float final_sum[2][kBlockM];
    alignas(8) std::uint64_t kv_ready[kStages][kNumChunks];  // TMA bytes of one chunk landed
    alignas(8) std::uint64_t q_ready;                        // TMA bytes of a piece's Q tile landed
    int page_req[kStages];  // request of the page loaded into buffer s (-1: none); the loading thread's own
    // Warpgroup 1 published P and the scales of buffer s's page: its 128 threads arrive.
    alignas(8) std::uint64_t p_ready[kStages];
    // Both warpgroups finished reading buffer s (their P V waited): 256 arrivals.
    alignas(8) std::uint64_t buffer_free[kStages];
    // final_max / final_sum slot s: written by warpgroup 1 (ready, 128 arrivals), read by
    // warpgroup 0 (read, 128 arrivals) before warpgroup 1 may write it again two pieces later.
    alignas(8) std::uint64_t final_ready[2];
    alignas(8) std::uint64_t final_read[2];
  };

  // Named barriers (ids after CUTLASS's reserved ones): one per warpgroup, for its own threads
  // (RoPE operand read, V tail zeroed).
  enum Barrier : std::uint32_t { kWarpgroupSync = 1 };
};

}  // namespace cutelab::mla::paged_sm90_v3
