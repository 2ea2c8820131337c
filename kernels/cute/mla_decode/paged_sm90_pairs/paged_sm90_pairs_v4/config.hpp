#pragma once
// paged_sm90_pairs v4: every compile-time constant, layout, GEMM atom, the shared-memory plan and the
// barriers of the version (README.md beside this file gives the design and its reasoning).
//
// v3's pairs (pages a in buffer 0 and b in buffer 1, warpgroup w computes S of its buffer's page once
// and owns O[:, 256 w : 256 w + 256], each softmax under the other warpgroup's tensor work) with a
// producer warpgroup: one of its threads issues every KV copy. A buffer is two column groups (chunks 0-3:
// V columns 0-255; chunks 4-8: V columns 256-511 and RoPE); the last reader of a group only arrives on
// the group's mbarrier the moment a wgmma wait proves its read done, and the producer, which walks the
// part's pieces page by page as the consumers do, refills it. The consumers keep Q's tiles (TMA, one a
// piece) and the RoPE operand (registers). setmaxnreg: the producer 24 registers a thread, the two
// consumer warpgroups 240.
//
// v4 over v3: the copies leave the consumers' path. Issued by the consumer that freed a group (v3), a
// page's nine TMA issues and their branch cost ~200 cycles a page in a probe of the order with nothing
// else in it; from a producer ~20 (README.md). Amended (sixtieth session): P_a is published at max_a and
// warpgroup 1 multiplies it before its softmax of b, so buffer 0 is free earlier in the pair. Amended
// (sixty-second session): a finished piece's rows go out through the warpgroup's P tile in whole
// 128-byte row segments.

#include <cstdint>

#include "cute/mla_decode/paged_sm90/common/traits.hpp"

namespace cutelab::mla::paged_sm90_pairs_v4 {

template <class Element_>
struct Traits : paged_sm90::TileConstants,
                paged_sm90::TraitsTypes<Element_>,
                paged_sm90::TwoWarpgroupTypes<Element_> {
  using Element = Element_;  // cute::bfloat16_t or cute::half_t
  using Types = paged_sm90::TraitsTypes<Element_>;

  static constexpr int kLatentChunks = kHeadDimV / kChunk;  // chunks 0-7 are also V
  static constexpr int kWarpgroups = 2;  // consumers: warpgroup 2 is the producer
  static constexpr int kConsumerThreads = 128 * kWarpgroups;
  static constexpr int kThreads = kConsumerThreads + 128;
  static constexpr int kProducerRegisters = 24, kConsumerRegisters = 240;  // setmaxnreg
  // The bound is the registers the CTA was launched with (168 a thread: 65,536 / 384 rounded down to 8),
  // not the SM's 65,536: setmaxnreg's increase waits for the pool to hold them, and past it never returns
  // (a 48 / 232 split hung every call, sixty-third session).
  static constexpr int kLaunchRegisters = 65536 / kThreads / 8 * 8;
  static_assert(kProducerRegisters * 128 + kConsumerRegisters * kConsumerThreads <= kLaunchRegisters * kThreads);
  static constexpr int kStages = 2;  // KV buffers: page a, page b

  // Column group 0 of a buffer is chunks [0, kGroupSplit) (warpgroup 0's V half), group 1 the rest.
  static constexpr int kGroupSplit = kVColsPerWarpgroup / kChunk;
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
    alignas(1024) cute::array_aligned<Element, cute::cosize_v<SmemLayoutP>> p[kWarpgroups];  // P_a, P_b
    float max_a[kBlockM];    // running max after page a (log2 units of the scaled logits)
    float scale_a[kBlockM];  // exp2(max before a - max_a)
    float max_b[kBlockM];    // running max after page b (= max_a without b)
    float scale_b[kBlockM];  // exp2(max_a - max_b)
    float row_sum[kWarpgroups][kBlockM];
    // One arrival (the producer's, with the chunk's bytes) and the TMA bytes of one chunk.
    alignas(8) std::uint64_t kv_ready[kStages][kNumChunks];
    // Column group g of buffer s read for the last time by its page (one arrival: the last reader's).
    alignas(8) std::uint64_t kv_free[kStages][2];
    // max_b and scale_b published: warpgroup 1's 128 threads arrive, one phase a pair. (An mbarrier:
    // with a named barrier here compute-sanitizer's racecheck reports the reads it orders.)
    alignas(8) std::uint64_t max_b_ready;
    // A piece's row sums: warpgroup w's are in row_sum[w] (sum_ready[w], 128 arrivals) and have been
    // read by the other warpgroup (sum_read[w], 128 arrivals) before w writes the next piece's.
    alignas(8) std::uint64_t sum_ready[kWarpgroups];
    alignas(8) std::uint64_t sum_read[kWarpgroups];
    alignas(8) std::uint64_t q_ready;  // a piece's Q tile by TMA: one arrival with its bytes
  };

  // Named barriers (ids after CUTLASS's reserved ones). The hand-offs of a pair: 128 threads
  // arrive, the other consumer warpgroup's 128 wait.
  enum Barrier : std::uint32_t {
    kWarpgroupSync = 1,   // + warpgroup index: V tail zeroed before its P V; rows staged in its P tile
    kPaReady = 5,         // warpgroup 0 -> 1: max_a, scale_a and P_a (at max_a) stored
    kPbReady = 6          // warpgroup 1 -> 0: P_b stored, its P_a V done
  };
};

}  // namespace cutelab::mla::paged_sm90_pairs_v4
