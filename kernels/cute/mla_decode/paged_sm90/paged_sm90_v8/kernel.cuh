#pragma once
// paged_sm90 v8 device code. config.hpp has the design in one paragraph, README.md the reasoning
// and the prediction.

#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <type_traits>

#include <cutlass/arch/barrier.h>
#include <cute/arch/copy_sm90.hpp>
#include <cute/tensor.hpp>
#include <cutlass/detail/helper_macros.hpp>

#include "cute/mla_decode/paged_sm90/common/pieces.cuh"
#include "cute/mla_decode/paged_sm90/paged_sm90_v8/config.hpp"
#include "cutelab/device/fast_math.cuh"
#include "cutelab/device/sm90/opaque.cuh"
#include "cutelab/device/sm90/pdl.cuh"

namespace cutelab::mla::paged_sm90_v8 {

using paged_sm90::Params;
using FullBarrier = cutlass::arch::ClusterTransactionBarrier;  // TMA bytes of one chunk landed
using SignalBarrier = cutlass::arch::ClusterBarrier;           // mbarrier: release on arrive, acquire on wait
using NamedBarrier = cutlass::arch::NamedBarrier;

// Two fp32 values as one register of two 16-bit values (the first in the low half).
template <class Element>
CUTE_DEVICE std::uint32_t pack2(float a, float b) {
  if constexpr (std::is_same_v<Element, cute::half_t>) {
    const __half2 h = __floats2half2_rn(a, b);
    return reinterpret_cast<const std::uint32_t&>(h);
  } else {
    const __nv_bfloat162 h = __floats2bfloat162_rn(a, b);
    return reinterpret_cast<const std::uint32_t&>(h);
  }
}

// stmatrix.trans of four 8x8 16-bit matrices (cute's SM90_U16x8_STSM_T): lane l holds row l / 4,
// columns 2 (l % 4) and + 1 of each, and addresses row l % 8 of the stored (transposed) matrix l / 8,
// at byte `offset` of `base`.
CUTE_DEVICE void stmatrix_trans_x4(char* base, int offset, const std::uint32_t (&r)[4]) {
  cute::SM90_U16x8_STSM_T::copy(r[0], r[1], r[2], r[3], *reinterpret_cast<cute::uint128_t*>(base + offset));
}

// kPartials: what split pieces write (fp32, or out's dtype: half the partial bytes).
template <class T, PartialFormat kPartials>
struct Kernel {
  static_assert(T::kStages == 2 && T::kWarpgroups == 2);
  using Element = typename T::Element;
  using SharedStorage = typename T::SharedStorage;
  static constexpr int kBlockN = T::kBlockN;
  static constexpr int kRows = T::kRows;
  static constexpr int kCols = T::kRowsPerThread;  // accumulator columns (query rows) of a thread
  static constexpr int kSteps = T::kChunk / 16;    // k-steps of S^T per 64-column chunk

  // Accumulator register i (S^T or one M tile of O^T) of a thread holds M row m0 + 8 ((i >> 1) & 1)
  // and N column n0 + (i & 1) + 8 (i >> 2); column_of(i) numbers the thread's columns 0 .. kCols - 1,
  // query_row(n0, c) is the tile row of the thread's column c.
  CUTE_DEVICE static constexpr int column_of(int i) { return (i & 1) + 2 * (i >> 2); }
  CUTE_DEVICE static int query_row(int n0, int c) { return n0 + (c & 1) + 8 * (c >> 1); }

  CUTE_DEVICE static void run(const Params& p, const CUtensorMap* kv_map, const CUtensorMap* q_map) {
    extern __shared__ __align__(1024) char smem_raw[];
    auto& smem = *reinterpret_cast<SharedStorage*>(smem_raw);
    if (threadIdx.x == 0) {
      cute::prefetch_tma_descriptor(kv_map);
      cute::prefetch_tma_descriptor(q_map);
      paged_sm90::init_page_ring_barriers<T>(smem);
    }
    // Everything above overlaps the previous kernel; the schedule is read only after it.
    sm90::wait_for_prior_grid();
    sm90::allow_dependent_launch();  // the combine's blocks wait on the device for this grid
    const PartInfo part = p.schedule.parts[blockIdx.y];
    __syncthreads();
    if (threadIdx.x < 128)
      multiply(p, kv_map, q_map, smem, part);
    else
      own_s(p, smem, part);
  }

  CUTE_DEVICE static int kv_head() { return sm90::opaque(static_cast<int>(blockIdx.x)); }  // one M tile

  // Loads the Q tile of request `req` (all 576 columns, chunk c at c x kRows rows); one thread. Rows
  // past the request's packed rows hold whatever they held: their results are never stored.
  CUTE_DEVICE static void load_q(const Params& p, const CUtensorMap* q_map, SharedStorage& smem, int req) {
    const paged_sm90::QBox box = paged_sm90::q_box(p.heads_per_kv, p.s_q);
    const auto hint = static_cast<std::uint64_t>(cute::TMA::CacheHintSm90::EVICT_FIRST);  // read once
    FullBarrier::arrive_and_expect_tx(&smem.q_ready, box.heads * box.tokens * 128 * T::kNumChunks);
    CUTE_UNROLL
    for (int c = 0; c < T::kNumChunks; ++c)
      cute::SM90_TMA_LOAD_4D::copy(q_map, &smem.q_ready, hint, smem.q.data() + c * kRows * T::kChunk,
                                   c * T::kChunk, 0, kv_head(), req * p.s_q);
  }

  // --- warpgroup 1: S^T = K Q^T, the softmax down its columns, P^T ---------------------------
  CUTE_DEVICE static void own_s(const Params& p, SharedStorage& smem, const PartInfo& part) {
    using namespace cute;
    const int wg_thread = threadIdx.x % 128;
    const int lane = threadIdx.x % 32;
    const int warp = wg_thread / 32;
    const int n0 = 2 * (lane % 4);  // S^T rows (tokens) warp * 16 + lane / 4 (+ 8), columns from n0

    typename T::TiledMmaST mma;
    auto thr = mma.get_thread_slice(wg_thread);
    Tensor tSrS = partition_fragment_C(mma, Shape<Int<kBlockN>, Int<kRows>>{});  // (MMA,1,1)
    static_assert(size(tSrS) == 2 * kCols);

    // S^T of buffer `buf`, chunk by chunk as the chunks land; waited.
    const auto st = [&](int buf, int phase) CUTLASS_LAMBDA_FUNC_INLINE {
      Tensor sK = make_tensor(make_smem_ptr(sm90::opaque(smem.kv[buf].data())),
                              typename T::SmemLayoutK{});  // (BLK_N,576)
      Tensor sQ =
          make_tensor(make_smem_ptr(sm90::opaque(smem.q.data())), typename T::SmemLayoutQ{});  // (kRows,576)
      Tensor tSrK = thr.make_fragment_A(thr.partition_A(sK));                                  // (MMA,1,36)
      Tensor tSrQ = thr.make_fragment_B(thr.partition_B(sQ));                                  // (MMA,1,36)
      warpgroup_fence_operand(tSrS);
      mma.accumulate_ = GMMA::ScaleOut::Zero;
      CUTE_UNROLL
      for (int c = 0; c < T::kNumChunks; ++c) {
        FullBarrier::wait(&smem.kv_ready[buf][c], phase);
        warpgroup_arrive();
        CUTE_UNROLL
        for (int k = c * kSteps; k < (c + 1) * kSteps; ++k) {
          cute::gemm(mma, tSrK(_, _, k), tSrQ(_, _, k), tSrS);
          mma.accumulate_ = GMMA::ScaleOut::One;
        }
      }
      warpgroup_commit_batch();
      warpgroup_wait<0>();
      warpgroup_fence_operand(tSrS);
    };

    int g = 0;      // pages consumed so far by this CTA: page g sits in buffer g % 2
    int piece = 0;  // pieces finished, for the parity of q_ready and final_max / final_sum
    paged_sm90::for_each_piece(p, part, [&](int req, int first, int end) CUTLASS_LAMBDA_FUNC_INLINE {
      const int seqlen = p.seqlens[req];
      int limit[kCols];  // keys visible to each of this thread's query rows
      bool live[kCols];
      CUTE_UNROLL
      for (int c = 0; c < kCols; ++c) {
        const int row = query_row(n0, c);
        live[c] = row < p.rows_per_head;
        const int packed = min(row, p.rows_per_head - 1);
        limit[c] = p.causal ? seqlen - p.s_q + packed / p.heads_per_kv + 1 : seqlen;
      }
      const int min_limit = p.causal ? seqlen - p.s_q + 1 : seqlen;
      float run_max[kCols], row_sum[kCols];  // log2 units of the scaled logits; this thread's share
      CUTE_UNROLL
      for (int c = 0; c < kCols; ++c) run_max[c] = -INFINITY, row_sum[c] = 0.f;
      FullBarrier::wait(&smem.q_ready, piece & 1);  // loaded by warpgroup 0

      for (int page = first; page < end; ++page, ++g) {
        const int buf = g & 1, phase = (g >> 1) & 1;
        st(buf, phase);
        SignalBarrier::arrive(&smem.buffer_free[buf]);  // K read; warpgroup 0 still reads V
        // Only a piece's last page or two mask: a branch, not selects on every page.
        if ((page + 1) * kBlockN > sm90::opaque(min_limit)) {
          const int key0 = page * kBlockN + warp * 16 + lane / 4;
          CUTE_UNROLL
          for (int i = 0; i < size(tSrS); ++i)
            if (key0 + 8 * ((i >> 1) & 1) >= limit[column_of(i)]) tSrS(i) = -INFINITY;
        }
        // The page max of each column: this thread's two tokens, its warp's 16, then the four warps'.
        float page_max[kCols];
        CUTE_UNROLL
        for (int c = 0; c < kCols; ++c) page_max[c] = -INFINITY;
        CUTE_UNROLL
        for (int i = 0; i < size(tSrS); ++i) page_max[column_of(i)] = fmaxf(page_max[column_of(i)], tSrS(i));
        CUTE_UNROLL
        for (int c = 0; c < kCols; ++c) {
          CUTE_UNROLL
          for (int x = 4; x < 32; x <<= 1)
            page_max[c] = fmaxf(page_max[c], __shfl_xor_sync(0xffffffffu, page_max[c], x));
        }
        float(&exchange)[4][kRows] = smem.max_part[g & 1];
        if (lane < 4) {
          CUTE_UNROLL
          for (int c = 0; c < kCols; ++c) exchange[warp][query_row(n0, c)] = page_max[c];
        }
        NamedBarrier::sync(128, T::kWarpgroupSync + 1);
        float base[kCols], scale[kCols];
        CUTE_UNROLL
        for (int c = 0; c < kCols; ++c) {
          const int row = query_row(n0, c);
          const float m =
              fmaxf(fmaxf(exchange[0][row], exchange[1][row]), fmaxf(exchange[2][row], exchange[3][row]));
          const float m_new =
              paged_sm90::next_reference_max(run_max[c], m * p.scale_log2, paged_sm90::kLazyMaxSlack);
          // A row that has seen only masked keys keeps max -inf; exp2(-inf - 0) = 0 keeps P at 0.
          base[c] = m_new == -INFINITY ? 0.f : m_new;
          scale[c] = device::ex2_approx_ftz(run_max[c] - base[c]);
          run_max[c] = m_new;
          row_sum[c] *= scale[c];
        }
        float prob[2 * kCols];
        CUTE_UNROLL
        for (int i = 0; i < size(tSrS); ++i) {
          prob[i] = device::ex2_approx_ftz(fmaf(tSrS(i), p.scale_log2, -base[column_of(i)]));
          row_sum[column_of(i)] += prob[i];
        }
        // P^T into buffer `buf`: stmatrix block b is (tokens warp * 16 + 8 (b & 1) + 0..7) x (columns
        // 8 (b >> 1) + 0..7); stored transposed, row n of it is P^T row 8 (b >> 1) + n, 16 bytes at
        // token unit 2 warp + (b & 1), swizzled by the row.
        char* const pt = reinterpret_cast<char*>(smem.pt[buf].data());
        CUTE_UNROLL
        for (int call = 0; call < kCols / 4; ++call) {
          std::uint32_t frag[4];
          CUTE_UNROLL
          for (int k = 0; k < 4; ++k) {
            const int b = 4 * call + k, i0 = 2 * (b & 1) + 4 * (b >> 1);
            frag[k] = pack2<Element>(prob[i0], prob[i0 + 1]);
          }
          const int b = 4 * call + lane / 8, n = 8 * (b >> 1) + lane % 8;
          stmatrix_trans_x4(pt, n * 128 + ((((2 * warp + (b & 1)) ^ n) & 7) << 4), frag);
        }
        // Columns of no query row keep O^T's scale at 1 (their garbage would defeat the rescale skip).
        if (warp == 0 && lane < 4) {
          CUTE_UNROLL
          for (int c = 0; c < kCols; ++c) smem.scale[buf][query_row(n0, c)] = live[c] ? scale[c] : 1.f;
        }
        cutlass::arch::fence_view_async_shared();  // generic stores, then warpgroup 0's wgmma reads
        SignalBarrier::arrive(&smem.p_ready[buf]);
      }

      // The piece's row state for warpgroup 0: the sums of all 64 tokens' shares, the running max.
      CUTE_UNROLL
      for (int c = 0; c < kCols; ++c) {
        CUTE_UNROLL
        for (int x = 4; x < 32; x <<= 1) row_sum[c] += __shfl_xor_sync(0xffffffffu, row_sum[c], x);
      }
      if (lane < 4) {
        CUTE_UNROLL
        for (int c = 0; c < kCols; ++c) smem.sum_part[warp][query_row(n0, c)] = row_sum[c];
      }
      NamedBarrier::sync(128, T::kWarpgroupSync + 1);
      const int slot = piece & 1;
      if (piece >= 2) SignalBarrier::wait(&smem.final_read[slot], ((piece - 2) >> 1) & 1);
      if (warp == 0 && lane < 4) {
        CUTE_UNROLL
        for (int c = 0; c < kCols; ++c) {
          const int row = query_row(n0, c);
          smem.final_max[slot][row] = run_max[c];
          smem.final_sum[slot][row] = (smem.sum_part[0][row] + smem.sum_part[1][row]) +
                                      (smem.sum_part[2][row] + smem.sum_part[3][row]);
        }
      }
      SignalBarrier::arrive(&smem.final_ready[slot]);
      ++piece;
    });
  }

  // --- warpgroup 0: O^T = V^T P^T, out, and the loads ---------------------------------------
  CUTE_DEVICE static void multiply(const Params& p, const CUtensorMap* kv_map, const CUtensorMap* q_map,
                                   SharedStorage& smem, const PartInfo& part) {
    using namespace cute;
    const int wg_thread = threadIdx.x % 128;
    const int lane = threadIdx.x % 32;
    const int warp = wg_thread / 32;
    const int n0 = 2 * (lane % 4);
    const bool elected = wg_thread == 0;

    typename T::TiledMmaOT mma;
    auto thr = mma.get_thread_slice(wg_thread);
    Tensor acc = partition_fragment_C(mma, Shape<Int<T::kHeadDimV>, Int<kRows>>{});  // (MMA,8,1) O^T
    static_assert(size<0>(acc) == 2 * kCols && size<1>(acc) == T::kHeadDimV / 64);
    mma.accumulate_ = GMMA::ScaleOut::One;

    // --- the page ring: this warpgroup's elected thread loads pages in consumption order ------
    const paged_sm90::PartWalk<1> walk{p, part, min(part.end_req, p.b - 1)};
    paged_sm90::PageCursor next = walk.start(0);
    int next_page = walk.page_id(next);
    const auto load_next = [&](int buf) CUTLASS_LAMBDA_FUNC_INLINE {
      paged_sm90::load_next_page<T>(p, kv_map, smem, walk, next, next_page, buf, kv_head());
    };
    if (elected) {
      if (walk.valid(next)) load_q(p, q_map, smem, next.req);
      load_next(0);
      load_next(1);
    }

    int g = 0;
    int piece = 0;
    paged_sm90::for_each_piece(p, part, [&](int req, int first, int end) CUTLASS_LAMBDA_FUNC_INLINE {
      const paged_sm90::PieceRequest request{p.schedule.requests[req], p.seqlens[req]};
      const int last_page = request.split.num_blocks - 1;
      clear(acc);
      for (int page = first; page < end; ++page, ++g) {
        const int buf = g & 1, phase = (g >> 1) & 1;
        SignalBarrier::wait(&smem.p_ready[buf], phase);
        float scale[kCols];
        bool rescale = false;
        CUTE_UNROLL
        for (int c = 0; c < kCols; ++c) {
          scale[c] = smem.scale[buf][query_row(n0, c)];
          rescale |= scale[c] != 1.f;
        }
        // Once the running max settles most scales are exactly 1: the multiplies are skipped then.
        if (__any_sync(0xffffffffu, rescale)) {
          CUTE_UNROLL
          for (int mt = 0; mt < size<1>(acc); ++mt) {
            CUTE_UNROLL
            for (int i = 0; i < size<0>(acc); ++i) acc(i, mt, 0) *= scale[column_of(i)];
          }
        }
        // Tokens past the sequence's end may hold anything (NaN in the tests): 0 * NaN is NaN in the
        // tensor core, so their V rows are zeroed (S^T has read the page: only this warpgroup reads it now).
        const int valid = max(0, sm90::opaque(request.seqlen) - page * kBlockN);
        if (page == sm90::opaque(last_page) && valid < kBlockN) {
          paged_sm90::zero_v_tail<T>(smem.kv[buf].data(), valid, 0, T::kWarpgroupSync);
          paged_sm90::zero_v_tail<T>(smem.kv[buf].data(), valid, 1, T::kWarpgroupSync);
        }
        Tensor sVT = make_tensor(make_smem_ptr(sm90::opaque(smem.kv[buf].data())),
                                 typename T::SmemLayoutVT{});  // (512,BLK_N)
        Tensor sPT = make_tensor(make_smem_ptr(sm90::opaque(smem.pt[buf].data())),
                                 typename T::SmemLayoutPT{});     // (kRows,BLK_N)
        Tensor tOrV = thr.make_fragment_A(thr.partition_A(sVT));  // (MMA,8,4)
        Tensor tOrP = thr.make_fragment_B(thr.partition_B(sPT));  // (MMA,1,4)
        warpgroup_fence_operand(acc);
        warpgroup_arrive();
        CUTE_UNROLL
        for (int k = 0; k < size<2>(tOrV); ++k) cute::gemm(mma, tOrV(_, _, k), tOrP(_, _, k), acc);
        warpgroup_commit_batch();
        warpgroup_wait<0>();
        warpgroup_fence_operand(acc);
        SignalBarrier::arrive(&smem.buffer_free[buf]);
        if (elected) {  // refill the buffer with page g + 2 once both have read it
          SignalBarrier::wait(&smem.buffer_free[buf], phase);
          load_next(buf);
        }
      }
      // The piece's last S^T is done (its P^T was published): Q is free for the next piece's tile.
      if (elected && smem.page_req[g & 1] >= 0) load_q(p, q_map, smem, smem.page_req[g & 1]);
      write_piece(p, smem, req, request, piece, lane, warp, acc);
      ++piece;
    });
  }

  // A finished piece's O^T into out, or into its partial rows when the request is split: rows of 16-bit
  // values through shared memory (stmatrix.trans, then whole 16-byte units a thread), fp32 partial rows
  // straight from the accumulators (eight lanes write a 32-byte sector of a row).
  template <class FragO>
  CUTE_DEVICE static void write_piece(const Params& p, SharedStorage& smem, int req,
                                      const paged_sm90::PieceRequest& request, int piece, int lane, int warp,
                                      const FragO& acc) {
    const int wg_thread = threadIdx.x % 128;
    const int n0 = 2 * (lane % 4);
    const int slot_state = piece & 1;
    SignalBarrier::wait(&smem.final_ready[slot_state], (piece >> 1) & 1);
    float row_max[kCols], row_sum[kCols];
    CUTE_UNROLL
    for (int c = 0; c < kCols; ++c) {
      row_max[c] = smem.final_max[slot_state][query_row(n0, c)];
      row_sum[c] = smem.final_sum[slot_state][query_row(n0, c)];
    }
    SignalBarrier::arrive(&smem.final_read[slot_state]);

    const RequestSplit& rs = request.split;
    const bool split = rs.num_splits > 1;
    const int slot = rs.split_offset + static_cast<int>(blockIdx.y) - rs.first_part;
    const bool stale = paged_sm90::stale_piece(p, request);
    float inv[kCols], lse[kCols];
    CUTE_UNROLL
    for (int c = 0; c < kCols; ++c) {
      const paged_sm90::RowFinish f = paged_sm90::finish_row(row_max[c], row_sum[c], stale, split, 1.f);
      inv[c] = f.inv;
      lse[c] = f.lse;
    }
    const auto partial_row = [&](int row) CUTLASS_LAMBDA_FUNC_INLINE {
      return paged_sm90::partial_row(p, slot, kv_head(), row);
    };
    if (warp == 0 && lane < 4) {
      CUTE_UNROLL
      for (int c = 0; c < kCols; ++c) {
        const int row = query_row(n0, c);
        if (row >= p.rows_per_head) continue;
        if (!split)
          p.lse[paged_sm90::out_row(p, req, kv_head(), row).lse] = lse[c];
        else
          p.partials.lse[partial_row(row)] = lse[c];
      }
    }

    const int m0 = warp * 16 + lane / 4;  // O^T rows (dims) m0 + 64 mt (+ 8) of this thread
    if (split && kPartials == PartialFormat::fp32) {
      float* const rows = static_cast<float*>(p.partials.out);
      CUTE_UNROLL
      for (int c = 0; c < kCols; ++c) {
        const int row = query_row(n0, c);
        if (row >= p.rows_per_head) continue;
        float* const dst = rows + partial_row(row) * T::kHeadDimV + m0;
        CUTE_UNROLL
        for (int mt = 0; mt < cute::size<1>(acc); ++mt) {
          CUTE_UNROLL
          for (int h = 0; h < 2; ++h)
            dst[64 * mt + 8 * h] = acc((c & 1) + 2 * h + 4 * (c >> 1), mt, 0) * inv[c];
        }
      }
      return;
    }
    // 16-bit rows: stmatrix block (mt, b) is dims 64 mt + 16 warp + 8 (b & 1) + 0..7 x columns
    // 8 (b >> 1) + 0..7; stored transposed, row n of it is staged row 8 (b >> 1) + n, 16 bytes at
    // unit (8 mt + 2 warp + (b & 1)) ^ (row % 8).
    char* const staged = smem.out_rows.data();
    NamedBarrier::sync(128, T::kWarpgroupSync);  // the previous piece's rows have been read out
    CUTE_UNROLL
    for (int mt = 0; mt < cute::size<1>(acc); ++mt) {
      CUTE_UNROLL
      for (int call = 0; call < kCols / 4; ++call) {
        std::uint32_t frag[4];
        CUTE_UNROLL
        for (int k = 0; k < 4; ++k) {
          const int b = 4 * call + k, i0 = 2 * (b & 1) + 4 * (b >> 1), c = column_of(i0);
          frag[k] = pack2<Element>(acc(i0, mt, 0) * inv[c], acc(i0 + 1, mt, 0) * inv[c + 1]);
        }
        const int b = 4 * call + lane / 8, n = 8 * (b >> 1) + lane % 8;
        const int unit = 8 * mt + 2 * warp + (b & 1);
        stmatrix_trans_x4(staged, n * T::kStageRowBytes + ((unit ^ (n & 7)) << 4), frag);
      }
    }
    NamedBarrier::sync(128, T::kWarpgroupSync);
    constexpr int kUnits = T::kStageRowBytes / 16;
    Element* const base = static_cast<Element*>(split ? p.partials.out : p.out);
    for (int idx = wg_thread; idx < p.rows_per_head * kUnits; idx += 128) {
      const int row = idx / kUnits, unit = idx % kUnits;
      const uint4 v =
          *reinterpret_cast<const uint4*>(staged + row * T::kStageRowBytes + ((unit ^ (row & 7)) << 4));
      const int64_t dst_row = split ? partial_row(row) : paged_sm90::out_row(p, req, kv_head(), row).out;
      reinterpret_cast<uint4*>(base + dst_row * T::kHeadDimV)[unit] = v;
    }
  }
};

template <class T, PartialFormat kPartials>
__global__ void __launch_bounds__(T::kThreads, 1)
    paged_sm90_v8_kernel(const __grid_constant__ Params params, const __grid_constant__ CUtensorMap kv_map,
                         const __grid_constant__ CUtensorMap q_map) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  Kernel<T, kPartials>::run(params, &kv_map, &q_map);
#endif
}

}  // namespace cutelab::mla::paged_sm90_v8
