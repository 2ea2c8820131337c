#pragma once
// Device pieces every paged_sm90 version shares: walking a part's request pieces and its pages,
// the packed row -> (query token, head) map and the address of a q row, the Q tile load, P to
// shared memory, the O rescale, zeroing the V rows past a sequence's end, and writing a finished
// piece (final output or split partial).

#include <cstdint>
#include <type_traits>

#include <cuda_bf16.h>

#include <cutlass/arch/barrier.h>
#include <cute/arch/copy_sm80.hpp>
#include <cute/arch/copy_sm90.hpp>
#include <cute/arch/copy_sm90_tma.hpp>
#include <cute/tensor.hpp>

#include "cute/mla_decode/paged_sm90/common/p_tile.hpp"
#include "cute/mla_decode/paged_sm90/common/params.hpp"
#include "cute/mla_decode/paged_sm90/common/traits.hpp"
#include "cutelab/device/fast_math.cuh"

namespace cutelab::mla::paged_sm90 {

// Visits the pieces of part `pi` in order: (request, first block, end block).
// The pages [piece_first, piece_end) of request `req` that part `pi` covers.
CUTE_DEVICE int piece_first(const PartInfo& pi, int req) { return req == pi.begin_req ? pi.begin_blk : 0; }
CUTE_DEVICE int piece_end(const Params& p, const PartInfo& pi, int req) {
  // Clamped to the block table's width: a plan whose lengths went stale must not read past it.
  const int n = min(p.schedule.requests[req].num_blocks, p.max_blocks);
  return req == pi.end_req ? min(pi.end_blk, n) : n;
}

template <class F>
CUTE_DEVICE void for_each_piece(const Params& p, const PartInfo& pi, F&& f) {
  for (int req = pi.begin_req; req <= pi.end_req && req < p.b; ++req) {
    const int first = piece_first(pi, req), end = piece_end(p, pi, req);
    if (first < end) f(req, first, end);
  }
}

// What a piece needs of its request beyond its pages: the schedule's entry and the call's length.
// Read where the piece starts, they are off the path from its last P V through its epilogue to the
// next piece's first Q K^T (write_piece reading them there put one dependent L2 round trip on it).
struct PieceRequest {
  RequestSplit split;
  int seqlen;
};

// A part's pages in the order a version loads them, across its request pieces (so the loads run
// into the next piece while the current one finishes): every kStride-th page from `offset` of
// each piece (v2: stride 2, one stream per buffer; v3: stride 1).
struct PageCursor {
  int req = 0;  // past the part's last request: nothing left to load
  int blk = 0;
};

template <int kStride>
struct PartWalk {
  const Params& p;
  PartInfo part;
  int last_req;  // last request of the part (the schedule may end a part at request b)

  // The same pieces as for_each_piece walks: the two must agree page for page.
  CUTE_DEVICE int first(int req) const { return piece_first(part, req); }
  CUTE_DEVICE int end(int req) const { return piece_end(p, part, req); }
  CUTE_DEVICE bool valid(const PageCursor& c) const { return c.req <= last_req; }
  // Moves c forward to the first piece (from c.req on) that has a page `offset`, offset + kStride, ...
  CUTE_DEVICE void settle(PageCursor& c, int offset) const {
    while (c.req <= last_req && c.blk >= end(c.req)) {
      ++c.req;
      c.blk = first(c.req) + offset;
    }
  }
  CUTE_DEVICE PageCursor start(int offset) const {
    PageCursor c{part.begin_req, first(part.begin_req) + offset};
    settle(c, offset);
    return c;
  }
  CUTE_DEVICE void advance(PageCursor& c, int offset) const {
    c.blk += kStride;
    settle(c, offset);
  }
  CUTE_DEVICE int page_id(const PageCursor& c) const {
    return valid(c) ? p.block_table[static_cast<int64_t>(c.req) * p.max_blocks + c.blk] : 0;
  }
};

// Chunks [kBegin, kEnd) of KV page `page` (KV head `kv_head`) into `tile` (the K layout: chunk c of 64
// columns at c x 64 tokens x 64 elements), one TMA box each, chunk c announced on ready[c]; one thread.
// kPostBytes = false: bare copies, the chunk's reader posts its bytes (arrive.expect_tx) before it waits.
template <class Traits, int kBegin = 0, int kEnd = Traits::kNumChunks, bool kPostBytes = true>
CUTE_DEVICE void load_page_chunks(const Params& p, const CUtensorMap* kv_map, typename Traits::Element* tile,
                                  std::uint64_t* ready, int page, int kv_head) {
  CUTE_UNROLL
  for (int c = kBegin; c < kEnd; ++c) {
    if constexpr (kPostBytes)
      cutlass::arch::ClusterTransactionBarrier::arrive_and_expect_tx(&ready[c], Traits::kChunkBytes);
    cute::SM90_TMA_LOAD_4D::copy(kv_map, &ready[c], p.kv_cache_hint,
                                 tile + c * Traits::kBlockN * Traits::kChunk, c * Traits::kChunk, kv_head, 0,
                                 page);
  }
}

// Loads the page at cursor `next` (page id `next_page`) into buffer `buf` of the two-deep ring of the
// designs consumed page by page (v3, v8), records its request (-1: past the part's end), and moves the
// cursor and its page id on to the next page; one thread.
template <class Traits>
CUTE_DEVICE void load_next_page(const Params& p, const CUtensorMap* kv_map,
                                typename Traits::SharedStorage& smem, const PartWalk<1>& walk,
                                PageCursor& next, int& next_page, int buf, int kv_head) {
  smem.page_req[buf] = walk.valid(next) ? next.req : -1;
  if (walk.valid(next))
    load_page_chunks<Traits>(p, kv_map, smem.kv[buf].data(), smem.kv_ready[buf], next_page, kv_head);
  walk.advance(next, 0);
  next_page = walk.page_id(next);
}

// The barriers of the designs with one S owner and a page ring consumed page by page (v3, v8): a
// piece's Q tile and each page chunk by TMA (one arrival with bytes), P published by the owner's 128
// threads, a buffer freed by every thread, a piece's row state handed over by 128 threads each way.
// One thread, before the CTA's first barrier.
template <class Traits>
CUTE_DEVICE void init_page_ring_barriers(typename Traits::SharedStorage& smem) {
  using TxBarrier = cutlass::arch::ClusterTransactionBarrier;
  using SignalBarrier = cutlass::arch::ClusterBarrier;
  TxBarrier::init(&smem.q_ready, 1);
  for (int s = 0; s < Traits::kStages; ++s) {
    for (int c = 0; c < Traits::kNumChunks; ++c) TxBarrier::init(&smem.kv_ready[s][c], 1);
    SignalBarrier::init(&smem.p_ready[s], 128);
    SignalBarrier::init(&smem.buffer_free[s], Traits::kThreads);
  }
  for (int s = 0; s < 2; ++s) {
    SignalBarrier::init(&smem.final_ready[s], 128);
    SignalBarrier::init(&smem.final_read[s], 128);
  }
  cutlass::arch::fence_barrier_init();
}

// Packed query row -> (query token s, head) of this KV head.
CUTE_DEVICE void row_coords(const Params& p, int packed_row, int kv_head, int& s, int& head) {
  s = packed_row / p.heads_per_kv;
  head = kv_head * p.heads_per_kv + packed_row % p.heads_per_kv;
}

// Where packed query row `packed` of request `req`, KV head `kv_head` goes: its row of out (of
// kHeadDimV values) and its lse element.
struct OutRow {
  int64_t out, lse;
};
CUTE_DEVICE OutRow out_row(const Params& p, int req, int kv_head, int packed) {
  int s, head;
  row_coords(p, packed, kv_head, s, head);
  return {(static_cast<int64_t>(req) * p.s_q + s) * p.h_q + head,
          (static_cast<int64_t>(req) * p.h_q + head) * p.s_q + s};
}

// Row of split-piece slot `slot` for packed row `packed` of KV head `kv_head` in the partial rows
// (and their lse).
CUTE_DEVICE int64_t partial_row(const Params& p, int slot, int kv_head, int packed) {
  return (static_cast<int64_t>(slot) * p.h_kv + kv_head) * p.partials.rows_per_head + packed;
}

// Start of packed query row `packed` of request `req`, KV head `kv_head`, in q.
template <class Element>
CUTE_DEVICE const Element* q_row(const Params& p, int req, int kv_head, int packed) {
  int s, head;
  row_coords(p, packed, kv_head, s, head);
  return static_cast<const Element*>(p.q) +
         ((static_cast<int64_t>(req) * p.s_q + s) * p.h_q + head) * kHeadDimQK;
}

// This thread's RoPE operand of the RS wgmma for the Q tile of request `req` straight from q: rows r0
// and r0 + 8 of the M tile, 16 columns; register i holds row r0 + 8 * ((i >> 1) & 1), column
// col0 + (i & 1) + 8 * (i >> 2), like the accumulator (host-tested); padded rows are 0. kZeroPadded =
// false: padded rows take row 0's values instead (for callers that never store their results), so nothing
// reads the loaded registers before the wgmma that needs them and the loads stall no instruction before it
// (the zeroing selects held up pairs v4's last pair ~2-3.5k cycles where pieces meet, sixty-first session).
template <class Traits, bool kZeroPadded = true, class FragRope>
CUTE_DEVICE void load_rope_operand(const Params& p, int req, int kv_head, int m_tile, int r0, int col0,
                                   FragRope& tSrQRope) {
  using Element = typename Traits::Element;
  const int packed0 = m_tile * Traits::kBlockM + r0;
  const bool live0 = packed0 < p.rows_per_head, live8 = packed0 + 8 < p.rows_per_head;
  const Element* rope0 = q_row<Element>(p, req, kv_head, live0 ? packed0 : 0) + Traits::kHeadDimV;
  const Element* rope8 = q_row<Element>(p, req, kv_head, live8 ? packed0 + 8 : 0) + Traits::kHeadDimV;
  CUTE_UNROLL
  for (int i = 0; i < cute::size(tSrQRope); i += 2) {  // column pairs: one 4-byte load
    const int c = col0 + 8 * (i >> 2);
    const bool upper = (i >> 1) & 1;
    const auto pair = *reinterpret_cast<const cute::array<Element, 2>*>((upper ? rope8 : rope0) + c);
    const bool live = !kZeroPadded || (upper ? live8 : live0);
    tSrQRope(i) = live ? pair[0] : Element(0);
    tSrQRope(i + 1) = live ? pair[1] : Element(0);
  }
}

// The Q tile of request `req` (M tile `m_tile`, KV head `kv_head`) by TMA, one thread: its 512 latent
// columns into q_smem (SmemLayoutQ) and, with kRope, its 64 RoPE columns into the 64 x 64 tile
// rope_smem (SmemLayoutP); `ready` gets one arrival with the bytes. Rows past the request's packed
// rows hold what q has there or what they held: their results are never stored.
template <class Traits, bool kRope>
CUTE_DEVICE void load_q_tma(const Params& p, const CUtensorMap* q_map, std::uint64_t* ready,
                            typename Traits::Element* q_smem, typename Traits::Element* rope_smem, int req,
                            int kv_head, int m_tile) {
  const QBox box = q_box(p.heads_per_kv, p.s_q);
  const int packed0 = m_tile * Traits::kBlockM;
  const int head0 = packed0 % p.heads_per_kv, token0 = req * p.s_q + packed0 / p.heads_per_kv;
  const auto hint = static_cast<std::uint64_t>(cute::TMA::CacheHintSm90::EVICT_FIRST);  // read once
  constexpr int kChunks = Traits::kLatentChunks + (kRope ? 1 : 0);
  cutlass::arch::ClusterTransactionBarrier::arrive_and_expect_tx(ready, box.heads * box.tokens * 128 * kChunks);
  CUTE_UNROLL
  for (int c = 0; c < Traits::kLatentChunks; ++c)
    cute::SM90_TMA_LOAD_4D::copy(q_map, ready, hint, q_smem + c * Traits::kBlockM * Traits::kChunk, c * Traits::kChunk,
                                 head0, kv_head, token0);
  if constexpr (kRope)
    cute::SM90_TMA_LOAD_4D::copy(q_map, ready, hint, rope_smem, Traits::kLatentChunks * Traits::kChunk, head0,
                                 kv_head, token0);
}

// Loads the Q tile of a piece: its 512 latent columns into shared memory (16-byte cp.async by
// `threads` threads from `thread`, padded rows zero-filled) and this thread's RoPE operand of the
// RS wgmma into registers (load_rope_operand). Returns with the cp.async writes complete and fenced
// for wgmma reads; the caller's barrier makes them visible to the other threads.
template <class Traits, class FragRope>
CUTE_DEVICE void load_q_tile(const Params& p, typename Traits::Element* q_smem, int req, int kv_head, int m_tile,
                             int thread, int threads, int r0, int col0, FragRope& tSrQRope) {
  using namespace cute;
  using Element = typename Traits::Element;
  constexpr int kBlockM = Traits::kBlockM;
  constexpr int kVecs = Traits::kHeadDimV / 8;
  Tensor sQ = make_tensor(make_smem_ptr(q_smem), typename Traits::SmemLayoutQ{});  // (BLK_M,512)
  // A thread's rows advance by threads / kVecs (threads is a multiple of kVecs): its row's
  // (query token, head) follow by additions, one division per piece instead of one per row.
  const int row_step = threads / kVecs, v = thread % kVecs;
  int r = thread / kVecs, packed = m_tile * kBlockM + r;
  int s = packed / p.heads_per_kv, within = packed % p.heads_per_kv;
  const Element* q_req =
      static_cast<const Element*>(p.q) + static_cast<int64_t>(req) * p.s_q * p.h_q * kHeadDimQK;
  for (; r < kBlockM; r += row_step) {
    const bool live = packed < p.rows_per_head;
    const Element* src =
        live ? q_req + (static_cast<int64_t>(s) * p.h_q + kv_head * p.heads_per_kv + within) * kHeadDimQK +
                   v * 8
             : static_cast<const Element*>(p.q);
    SM80_CP_ASYNC_CACHEGLOBAL_ZFILL<uint128_t>::copy(*reinterpret_cast<const uint128_t*>(src),
                                                     *reinterpret_cast<uint128_t*>(&sQ(r, v * 8)), live);
    packed += row_step;
    for (within += row_step; within >= p.heads_per_kv; within -= p.heads_per_kv) ++s;
  }
  cp_async_fence();
  load_rope_operand<Traits>(p, req, kv_head, m_tile, r0, col0, tSrQRope);
  cp_async_wait<0>();
  cutlass::arch::fence_view_async_shared();  // cp.async writes, then wgmma reads
}

// Reads this thread's RoPE operand of the RS Q K^T (register order as load_q_tile's) from a Q tile's
// RoPE columns staged in a P tile (K-major, the layout a TMA box of 64 rows x 64 columns writes).
// Any 64-column chunk of a Q tile in that layout reads the same way (v3: its last latent chunk).
template <class Traits, class FragRope>
CUTE_DEVICE void read_rope_operand(const typename Traits::Element* staged, FragRope& tSrQRope, int r0,
                                   int col0) {
  using namespace cute;
  Tensor sR = make_tensor(make_smem_ptr(staged), typename Traits::SmemLayoutP{});  // (BLK_M,64)
  CUTE_UNROLL
  for (int i = 0; i < size(tSrQRope); i += 2) {  // column pairs: adjacent in the swizzled layout
    const int r = r0 + 8 * ((i >> 1) & 1), c = col0 + 8 * (i >> 2);
    const auto pair = *reinterpret_cast<const cute::array<typename Traits::Element, 2>*>(&sR(r, c));
    tSrQRope(i) = pair[0];
    tSrQRope(i + 1) = pair[1];
  }
}

// Stores this thread's P (the RS operand, accumulator order) into the K-major P tile for another
// warpgroup's SS wgmma: four stmatrix.x4, whose 8x8 fragments are the accumulator's (lane l holds
// row l / 4, columns 2 (l % 4) and + 1 of each): 16 generic 4-byte stores with their swizzle
// arithmetic were ~100 instructions more on the S owner's path between S and P. kFence = false
// leaves the proxy fence that the other warpgroup's wgmma reads need to the caller, who may issue
// its own wgmmas first (v3's S owner: fifty-second session).
template <class Traits, bool kFence = true, class FragP>
CUTE_DEVICE void store_p(typename Traits::Element* p_smem, const FragP& tOrP, int warp_row0, int lane) {
  using Element = typename Traits::Element;
  static_assert(
      std::is_same_v<typename Traits::SmemLayoutP, typename TwoWarpgroupTypes<Element>::SmemLayoutP>,
      "p_matrix_row_offset is the 64 x 64 K-major 128-byte-swizzled P tile");
  char* const tile = reinterpret_cast<char*>(p_smem);
  const int row = p_matrix_row_offset(warp_row0, lane, 0);
  CUTE_UNROLL
  for (int j = 0; j < 8; j += 2) {
    std::uint32_t frag[4];
    CUTE_UNROLL
    for (int m = 0; m < 4; ++m) {  // (rows 0-7, group j), (8-15, j), (0-7, j + 1), (8-15, j + 1)
      const int i = 4 * (j + (m >> 1)) + 2 * (m & 1);
      __nv_bfloat162 pair;  // same bits for half_t: only moved, never converted
      reinterpret_cast<Element*>(&pair)[0] = tOrP(i);
      reinterpret_cast<Element*>(&pair)[1] = tOrP(i + 1);
      frag[m] = *reinterpret_cast<const std::uint32_t*>(&pair);
    }
    cute::SM90_U32x4_STSM_N::copy(frag[0], frag[1], frag[2], frag[3],
                                  *reinterpret_cast<cute::uint128_t*>(tile + (row ^ (j << 4))));
  }
  if constexpr (kFence)
    cutlass::arch::fence_view_async_shared();  // generic stores, then the other warpgroup's wgmma reads
}

// O rows r0 and r0 + 8 times s[0] and s[1]. Once the running max settles most scales are exactly
// 1: the 128 multiplies are skipped then (a warp-uniform branch; no wgmma may be in flight on O).
template <class FragO>
CUTE_DEVICE void scale_rows(FragO& tOrO, const float (&s)[2]) {
  if (__any_sync(0xffffffffu, s[0] != 1.f || s[1] != 1.f)) {
    CUTE_UNROLL
    for (int i = 0; i < cute::size(tOrO); ++i) tOrO(i) *= s[(i >> 1) & 1];
  }
}

// O[:, half] += P V of one page, issued and committed, not waited, for the two-warpgroup designs
// that split P V by O columns: the S owner (kFromRegisters) multiplies P from its registers (RS),
// the other warpgroup the published P tile (SS). p_tile() and v_half() make the shared-memory
// tensors right where they are read (from opaque addresses: not hoisted out of the page loop).
template <bool kFromRegisters, class MmaRegs, class ThrRegs, class MmaSmem, class ThrSmem, class FragP,
          class FragO, class PTile, class VHalf>
CUTE_DEVICE void issue_half_pv(MmaRegs& mma_regs, const ThrRegs& thr_regs, MmaSmem& mma_smem,
                               const ThrSmem& thr_smem, FragP& tOrP, FragO& tOrO, PTile&& p_tile,
                               VHalf&& v_half) {
  using namespace cute;
  warpgroup_fence_operand(tOrO);
  if constexpr (kFromRegisters) {
    Tensor tOrV = thr_regs.make_fragment_B(thr_regs.partition_B(v_half()));
    warpgroup_fence_operand(tOrP);
    warpgroup_arrive();
    CUTE_UNROLL
    for (int k = 0; k < size<2>(tOrP); ++k) cute::gemm(mma_regs, tOrP(_, _, k), tOrV(_, _, k), tOrO);
    warpgroup_fence_operand(tOrP);
  } else {
    Tensor sP = p_tile();
    Tensor tOrPs = thr_smem.make_fragment_A(thr_smem.partition_A(sP));
    Tensor tOrV = thr_smem.make_fragment_B(thr_smem.partition_B(v_half()));
    warpgroup_arrive();
    CUTE_UNROLL
    for (int k = 0; k < size<2>(tOrPs); ++k) cute::gemm(mma_smem, tOrPs(_, _, k), tOrV(_, _, k), tOrO);
  }
  warpgroup_commit_batch();
}

// Tokens past a sequence's end hold anything (NaN in the tests): P is 0 there, but 0 * NaN is
// NaN in the tensor core, so each consumer warpgroup zeroes its own V columns of those rows of
// the page before its P V. The other warpgroup may be reading the same rows in its Q K^T at that
// moment: harmless, those tokens are masked to -inf by a select, whatever it reads.
template <class Traits>
CUTE_DEVICE void zero_v_tail(typename Traits::Element* tile, int valid, int wg,
                             std::uint32_t warpgroup_barrier) {
  using namespace cute;
  Tensor sRows = make_tensor(make_smem_ptr(tile), typename Traits::SmemLayoutK{});  // (BLK_N,576)
  constexpr int kVecs = Traits::kVColsPerWarpgroup / 8;
  for (int idx = threadIdx.x % 128; idx < (Traits::kBlockN - valid) * kVecs; idx += 128)
    *reinterpret_cast<uint4*>(&sRows(
        valid + idx / kVecs, wg * Traits::kVColsPerWarpgroup + (idx % kVecs) * 8)) = make_uint4(0, 0, 0, 0);
  cutlass::arch::fence_view_async_shared();  // generic stores, then wgmma (async proxy) reads
  cutlass::arch::NamedBarrier::sync(128, warpgroup_barrier);
}

// Stores row r0 + 8 * h of this thread's accumulators (times `inv`) at dst (the row's column
// col_base) in Element. A quad holds columns 2t, 2t + 1 (t = lane % 4) of each 8-column group.
// Lanes t and t ^ 1 swap one pair so that each writes four adjacent columns (8 bytes): the even
// lane of group k, the odd lane of group k + 1. A warp's store then fills whole 32-byte sectors
// (pair by pair, half of each sector came from another instruction: 2x the L2 sectors and the
// largest stall of short pieces, measured). Every lane shuffles, live row or not.
template <class Element, class FragO>
CUTE_DEVICE void store_row_sectors(Element* dst, const FragO& tOrO, int h, float inv, bool live) {
  const bool odd = threadIdx.x & 1;
  CUTE_UNROLL
  for (int i = 2 * h; i < cute::size(tOrO); i += 8) {  // groups k = i >> 2 and k + 1
    const cute::array<Element, 2> a{static_cast<Element>(tOrO(i) * inv),
                                    static_cast<Element>(tOrO(i + 1) * inv)};
    const cute::array<Element, 2> b{static_cast<Element>(tOrO(i + 4) * inv),
                                    static_cast<Element>(tOrO(i + 5) * inv)};
    const uint32_t a_bits = reinterpret_cast<const uint32_t&>(a),
                   b_bits = reinterpret_cast<const uint32_t&>(b);
    const uint32_t got = __shfl_xor_sync(0xffffffffu, odd ? a_bits : b_bits, 1);
    const int group = (i >> 2) + (odd ? 1 : 0);
    if (live)
      *reinterpret_cast<uint2*>(dst + 8 * group + (odd ? -2 : 0)) =
          odd ? make_uint2(got, b_bits) : make_uint2(a_bits, got);
  }
}

// Whether a piece's call length needs another page count than the plan covered (its rows are then
// written as NaN: refused loudly); raises the plan's reuse flag (one thread a warpgroup).
CUTE_DEVICE bool stale_piece(const Params& p, const PieceRequest& request) {
  const bool stale = planned_pages(request.seqlen) != request.split.num_blocks;
  if (stale && p.schedule.reuse_error && threadIdx.x % 128 == 0) *p.schedule.reuse_error = 1;
  return stale;
}

// A finished row's output factor and lse (write_piece's rules): NaN for a stale piece; a row that saw
// no key gets factor 0 and lse +inf as a final result, -inf (weight 0) as a partial.
struct RowFinish {
  float inv;
  float lse;
};
CUTE_DEVICE RowFinish finish_row(float row_max, float row_sum, bool stale, bool split, float out_scale) {
  const bool any = row_sum > 0.f;
  return {stale ? NAN : any ? out_scale / row_sum : 0.f,
          stale ? NAN
          : any ? (row_max + log2f(row_sum)) * 0.69314718055994530942f
                : (split ? -INFINITY : INFINITY)};
}

// Writes one warpgroup's O columns [col_base, col_base + N) of a finished piece. Accumulator
// register i holds packed row r0 + row_step * ((i >> 1) & 1) of the M tile (row_step 8 unless a
// design spreads its rows), column col_base + (i & 1) + 8 * (i >> 2).
// `row_max` is in log2 units of the scaled logits; `row_sum` the complete sum of the row's
// probabilities. A row that saw no key gets lse +inf as a final result, -inf (weight 0) as a
// partial; its output is 0 either way. `out_scale` multiplies the output (an FP8 cache's
// per-tensor scale, which the tile's values leave out). A split request's piece writes its
// partial row in kPartials (p.partials.format says the same to the combine).
// `request`: the piece's PieceRequest (as read when the piece started).
template <class Element, int kHeadDimV, int kBlockM, PartialFormat kPartials = PartialFormat::fp32,
          class FragO>
CUTE_DEVICE void write_piece(const Params& p, int req, const PieceRequest& request, int kv_head, int m_tile,
                             int part, int r0, int col_base, bool writes_lse, const float (&row_max)[2],
                             const float (&row_sum)[2], const FragO& tOrO, float out_scale = 1.f,
                             int row_step = 8) {
  const RequestSplit& rs = request.split;
  const bool split = rs.num_splits > 1;
  const int slot = rs.split_offset + part - rs.first_part;
  const bool stale = stale_piece(p, request);
  float inv[2], lse[2];
  CUTE_UNROLL
  for (int h = 0; h < 2; ++h) {
    const RowFinish f = finish_row(row_max[h], row_sum[h], stale, split, out_scale);
    inv[h] = f.inv;
    lse[h] = f.lse;
  }
  CUTE_UNROLL
  for (int h = 0; h < 2; ++h) {
    const int packed = m_tile * kBlockM + r0 + row_step * h;
    if (!split) {
      const OutRow at = out_row(p, req, kv_head, min(packed, p.rows_per_head - 1));
      Element* dst = static_cast<Element*>(p.out) + at.out * kHeadDimV + col_base;
      const bool live = packed < p.rows_per_head;
      store_row_sectors(dst, tOrO, h, inv[h], live);
      if (live && writes_lse) p.lse[at.lse] = lse[h];
      continue;
    }
    if constexpr (kPartials == PartialFormat::out_dtype) {
      const int64_t slot_row = partial_row(p, slot, kv_head, packed);
      const bool live = packed < p.rows_per_head;
      store_row_sectors(static_cast<Element*>(p.partials.out) + slot_row * kHeadDimV + col_base, tOrO, h,
                        inv[h], live);
      if (live && writes_lse) p.partials.lse[slot_row] = lse[h];
      continue;
    }
    if (packed >= p.rows_per_head) continue;
    {
      const int64_t slot_row = partial_row(p, slot, kv_head, packed);
      float* dst = static_cast<float*>(p.partials.out) + slot_row * kHeadDimV + col_base;
      CUTE_UNROLL
      for (int i = 2 * h; i < cute::size(tOrO); i += 4)  // i and i + 1: adjacent columns
        *reinterpret_cast<float2*>(dst + 8 * (i >> 2)) = make_float2(tOrO(i) * inv[h], tOrO(i + 1) * inv[h]);
      if (writes_lse) p.partials.lse[slot_row] = lse[h];
    }
  }
}

// write_piece reading the piece's PieceRequest here.
template <class Element, int kHeadDimV, int kBlockM, PartialFormat kPartials = PartialFormat::fp32,
          class FragO>
CUTE_DEVICE void write_piece(const Params& p, int req, int kv_head, int m_tile, int part, int r0,
                             int col_base, bool writes_lse, const float (&row_max)[2],
                             const float (&row_sum)[2], const FragO& tOrO, float out_scale = 1.f,
                             int row_step = 8) {
  const PieceRequest request{p.schedule.requests[req], p.seqlens[req]};
  write_piece<Element, kHeadDimV, kBlockM, kPartials>(p, req, request, kv_head, m_tile, part, r0, col_base,
                                                      writes_lse, row_max, row_sum, tOrO, out_scale,
                                                      row_step);
}

// Sum over the 4 lanes that share an accumulator row.
CUTE_DEVICE float quad_sum(float v) {
  v += __shfl_xor_sync(0xffffffffu, v, 1);
  return v + __shfl_xor_sync(0xffffffffu, v, 2);
}
CUTE_DEVICE float quad_max(float v) {
  v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 1));
  return fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 2));
}

// The running max of the bf16 / f16 kernels' online softmax as a lazy reference: it moves only where
// a page's max passes it by more than this (log2 units), so O's rescale (scale_rows, which a warp
// whose factors are all 1 skips) runs on few pages instead of most. P is then at most 2^8, far inside
// bf16 / f16; softmax does not depend on the reference (lse = max + log2(sum) of the same pair). On
// the H200, b128 h128 t4096: 257.5 -> 249.8 µs in v3's kernel (fifty-first session); the v3 of
// 2026-11-23, whose S owner waited on its wgmmas rather than on its instructions, gained nothing.
inline constexpr int kLazyMaxSlack = 8;

// The reference max after a page whose max is m_page (log2 units): moved only past `slack` (0: the
// exact running max). While the reference is -inf any finite m_page moves it.
CUTE_DEVICE float next_reference_max(float reference, float m_page, int slack) {
  return m_page > reference + slack ? m_page : reference;
}

// The online softmax of one page by the S owner (rows r0 and r0 + 8 of this thread): keys at or
// past limit[h] are masked (only where needs_mask: the page reaches a row's limit), the running
// max (log2 units of the scaled logits) and this thread's share of the row sums advance, P goes
// to the RS operand tOrP (the accumulator's order is its A-operand order), and scale[h] is the
// factor O's rows must be multiplied by. `key0` is the page's first key. kMaxSlack: 0 (the exact
// running max) or kLazyMaxSlack (a reference max; scale is then 1 on most pages).
template <int kMaxSlack = 0, class FragS, class FragP>
CUTE_DEVICE void softmax_page(FragS& tSrS, FragP& tOrP, int key0, int col0, bool needs_mask,
                              const int (&limit)[2], float scale_log2, float (&run_max)[2],
                              float (&row_sum)[2], float (&scale)[2]) {
  using Element = typename FragP::value_type;
  // Only a piece's last page or two mask: a branch, not 64 selects on every page.
  if (needs_mask) {
    CUTE_UNROLL
    for (int i = 0; i < cute::size(tSrS); ++i)
      if (key0 + col0 + (i & 1) + 8 * (i >> 2) >= limit[(i >> 1) & 1]) tSrS(i) = -INFINITY;
  }
  float page_max[2] = {-INFINITY, -INFINITY};
  CUTE_UNROLL
  for (int i = 0; i < cute::size(tSrS); ++i) page_max[(i >> 1) & 1] = fmaxf(page_max[(i >> 1) & 1], tSrS(i));
  float base[2];
  CUTE_UNROLL
  for (int h = 0; h < 2; ++h) {
    const float m_new = next_reference_max(run_max[h], quad_max(page_max[h]) * scale_log2, kMaxSlack);
    // A row that has seen only masked keys keeps max -inf; exp2(-inf - 0) = 0 keeps P at 0.
    base[h] = m_new == -INFINITY ? 0.f : m_new;
    scale[h] = device::ex2_approx_ftz(run_max[h] - base[h]);
    run_max[h] = m_new;
    row_sum[h] *= scale[h];
  }
  CUTE_UNROLL
  for (int i = 0; i < cute::size(tSrS); ++i) {
    const int h = (i >> 1) & 1;
    const float prob = device::ex2_approx_ftz(fmaf(tSrS(i), scale_log2, -base[h]));
    row_sum[h] += prob;
    tOrP(i) = static_cast<Element>(prob);
  }
}

// A finished piece's row state (running max, complete row sums), handed from the S owner to the
// other warpgroup through slot piece % 2 of the storage's final_max / final_sum. The owner
// writes a slot once the reader has read what it held two pieces earlier (final_read); the j-th
// use of slot s is piece s + 2j, parity j & 1. Storage: final_max, final_sum [2][rows],
// final_ready, final_read [2] (mbarriers of 128 arrivals).
template <class Storage>
CUTE_DEVICE void publish_piece_state(Storage& smem, int piece, int r0, int col0, const float (&run_max)[2],
                                     float (&row_sum)[2]) {
  using SignalBarrier = cutlass::arch::ClusterBarrier;
  for (int h = 0; h < 2; ++h) row_sum[h] = quad_sum(row_sum[h]);
  const int slot = piece & 1;
  if (piece >= 2) SignalBarrier::wait(&smem.final_read[slot], ((piece - 2) >> 1) & 1);
  if (col0 == 0)
    for (int h = 0; h < 2; ++h) {
      smem.final_max[slot][r0 + 8 * h] = run_max[h];
      smem.final_sum[slot][r0 + 8 * h] = row_sum[h];
    }
  SignalBarrier::arrive(&smem.final_ready[slot]);
}

template <class Storage>
CUTE_DEVICE void read_piece_state(Storage& smem, int piece, int r0, float (&run_max)[2],
                                  float (&row_sum)[2]) {
  using SignalBarrier = cutlass::arch::ClusterBarrier;
  const int slot = piece & 1;
  SignalBarrier::wait(&smem.final_ready[slot], (piece >> 1) & 1);
  for (int h = 0; h < 2; ++h) {
    run_max[h] = smem.final_max[slot][r0 + 8 * h];
    row_sum[h] = smem.final_sum[slot][r0 + 8 * h];
  }
  SignalBarrier::arrive(&smem.final_read[slot]);
}

}  // namespace cutelab::mla::paged_sm90
