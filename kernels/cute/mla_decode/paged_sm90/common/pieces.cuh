#pragma once
// Device pieces every paged_sm90 version shares: walking a part's request pieces, the packed
// row -> (query token, head) map and the address of a q row, zeroing the V rows past a
// sequence's end, and writing a finished piece (final output or split partial).

#include <cstdint>

#include <cutlass/arch/barrier.h>
#include <cute/tensor.hpp>

#include "cute/mla_decode/paged_sm90/common/params.hpp"

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

// Packed query row -> (query token s, head) of this KV head.
CUTE_DEVICE void row_coords(const Params& p, int packed_row, int kv_head, int& s, int& head) {
  s = packed_row / p.heads_per_kv;
  head = kv_head * p.heads_per_kv + packed_row % p.heads_per_kv;
}

// Start of packed query row `packed` of request `req`, KV head `kv_head`, in q.
template <class Element>
CUTE_DEVICE const Element* q_row(const Params& p, int req, int kv_head, int packed) {
  int s, head;
  row_coords(p, packed, kv_head, s, head);
  return static_cast<const Element*>(p.q) +
         ((static_cast<int64_t>(req) * p.s_q + s) * p.h_q + head) * kHeadDimQK;
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

// Writes one warpgroup's O columns [col_base, col_base + N) of a finished piece. Accumulator
// register i holds row r0 + 8 * ((i >> 1) & 1), column col_base + (i & 1) + 8 * (i >> 2).
// `row_max` is in log2 units of the scaled logits; `row_sum` the complete sum of the row's
// probabilities. A row that saw no key gets lse +inf as a final result, -inf (weight 0) as a
// partial; its output is 0 either way.
template <class Element, int kHeadDimV, int kBlockM, class FragO>
CUTE_DEVICE void write_piece(const Params& p, int req, int kv_head, int m_tile, int part, int r0, int col_base,
                             bool writes_lse, const float (&row_max)[2], const float (&row_sum)[2],
                             const FragO& tOrO) {
  const RequestSplit rs = p.schedule.requests[req];
  const bool split = rs.num_splits > 1;
  const int slot = rs.split_offset + part - rs.first_part;
  // The call's length needs another page count than the plan covered: refuse loudly (NaN).
  const bool stale = planned_pages(p.seqlens[req]) != rs.num_blocks;
  if (stale && p.schedule.reuse_error && threadIdx.x % 128 == 0) *p.schedule.reuse_error = 1;
  float inv[2], lse[2];
  CUTE_UNROLL
  for (int h = 0; h < 2; ++h) {
    const bool any = row_sum[h] > 0.f;
    inv[h] = stale ? NAN : any ? 1.f / row_sum[h] : 0.f;
    lse[h] = stale ? NAN
             : any ? (row_max[h] + log2f(row_sum[h])) * 0.69314718055994530942f
                   : (split ? -INFINITY : INFINITY);
  }
  CUTE_UNROLL
  for (int h = 0; h < 2; ++h) {
    const int packed = m_tile * kBlockM + r0 + 8 * h;
    if (packed >= p.rows_per_head) continue;
    if (split) {
      const int64_t slot_row = (static_cast<int64_t>(slot) * p.h_kv + kv_head) * p.partials.rows_per_head + packed;
      float* dst = p.partials.out + slot_row * kHeadDimV + col_base;
      CUTE_UNROLL
      for (int i = 2 * h; i < cute::size(tOrO); i += 4)  // i and i + 1: adjacent columns
        *reinterpret_cast<float2*>(dst + 8 * (i >> 2)) = make_float2(tOrO(i) * inv[h], tOrO(i + 1) * inv[h]);
      if (writes_lse) p.partials.lse[slot_row] = lse[h];
    } else {
      int s, head;
      row_coords(p, packed, kv_head, s, head);
      Element* dst = static_cast<Element*>(p.out) +
                     ((static_cast<int64_t>(req) * p.s_q + s) * p.h_q + head) * kHeadDimV + col_base;
      CUTE_UNROLL
      for (int i = 2 * h; i < cute::size(tOrO); i += 4) {
        cute::array<Element, 2> pair{static_cast<Element>(tOrO(i) * inv[h]), static_cast<Element>(tOrO(i + 1) * inv[h])};
        *reinterpret_cast<cute::array<Element, 2>*>(dst + 8 * (i >> 2)) = pair;
      }
      if (writes_lse) p.lse[(static_cast<int64_t>(req) * p.h_q + head) * p.s_q + s] = lse[h];
    }
  }
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

}  // namespace cutelab::mla::paged_sm90
