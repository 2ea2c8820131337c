#pragma once
// paged_sm90 v3 device code. config.hpp has the design in one paragraph, README.md the
// reasoning and the measurements.

#include <cuda.h>

#include <cutlass/arch/barrier.h>
#include <cute/arch/copy_sm80.hpp>
#include <cute/tensor.hpp>
#include <cutlass/detail/helper_macros.hpp>

#include "cute/mla_decode/paged_sm90/common/pieces.cuh"
#include "cute/mla_decode/paged_sm90/paged_sm90_v3/config.hpp"
#include "cutelab/device/fast_math.cuh"
#include "cutelab/device/sm90/opaque.cuh"
#include "cutelab/device/sm90/pdl.cuh"

namespace cutelab::mla::paged_sm90_v3 {

using paged_sm90::Params;
using FullBarrier = cutlass::arch::ClusterTransactionBarrier;  // TMA bytes of one chunk landed
using SignalBarrier = cutlass::arch::ClusterBarrier;           // mbarrier: release on arrive, acquire on wait
using NamedBarrier = cutlass::arch::NamedBarrier;

// kPartials: what split pieces write (fp32, or out's dtype: half the partial bytes).
template <class T, PartialFormat kPartials>
struct Kernel {
  static_assert(T::kStages == 2 && T::kWarpgroups == 2);
  using Element = typename T::Element;
  using SharedStorage = typename T::SharedStorage;
  static constexpr int kBlockM = T::kBlockM;
  static constexpr int kBlockN = T::kBlockN;
  static constexpr int kSteps = T::kQKStepsPerChunk;

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
      consume<0>(p, kv_map, q_map, smem, part);
    else
      consume<1>(p, kv_map, q_map, smem, part);
  }

  // Loads the Q tile of request `req` (this CTA's M tile and KV head): its 512 latent columns into
  // smem.q, its 64 RoPE columns into P tile `p_buf`; one thread.
  CUTE_DEVICE static void load_q(const Params& p, const CUtensorMap* q_map, SharedStorage& smem, int req,
                                 int kv_head, int m_tile, int p_buf) {
    paged_sm90::load_q_tma<T, true>(p, q_map, &smem.q_ready, smem.q.data(), smem.p[p_buf].data(), req, kv_head,
                                    m_tile);
  }

  // Warpgroup 1 (kWG = 1): S, softmax, P, O[:, 256:512]. Warpgroup 0: O[:, 0:256] and the loads.
  template <int kWG>
  CUTE_DEVICE static void consume(const Params& p, const CUtensorMap* kv_map, const CUtensorMap* q_map,
                                  SharedStorage& smem, const PartInfo& part) {
    using namespace cute;
    constexpr bool kOwner = kWG == 1;  // owns S and the softmax
    const auto kv_head = [&]() CUTLASS_LAMBDA_FUNC_INLINE {
      return sm90::opaque(static_cast<int>(blockIdx.x)) / p.m_tiles;
    };
    const auto m_tile = [&]() CUTLASS_LAMBDA_FUNC_INLINE {
      return sm90::opaque(static_cast<int>(blockIdx.x)) % p.m_tiles;
    };
    const int wg_thread = threadIdx.x % 128;
    const int lane = threadIdx.x % 32;
    // Accumulator rows of this thread: r0 and r0 + 8; columns col0 + (i & 1) + 8 * (i >> 2).
    const int r0 = (wg_thread / 32) * 16 + lane / 4;
    const int col0 = 2 * (lane % 4);
    const bool elected = wg_thread == 0;

    typename T::TiledMmaQK mma_qk;
    typename T::TiledMmaQKRope mma_rope;
    typename T::TiledMmaPVRegisters mma_pv_regs;
    typename T::TiledMmaPVShared mma_pv_smem;
    auto thr_qk = mma_qk.get_thread_slice(wg_thread);
    auto thr_rope = mma_rope.get_thread_slice(wg_thread);
    auto thr_pv_regs = mma_pv_regs.get_thread_slice(wg_thread);
    auto thr_pv_smem = mma_pv_smem.get_thread_slice(wg_thread);
    const auto page_shape = Shape<Int<kBlockM>, Int<kBlockN>>{};

    Tensor tSrQRope = make_tensor<Element>(partition_shape_A(mma_rope, page_shape));  // (MMA,1,4)
    // Q's last latent chunk, also in registers: its k-steps read only K from shared memory, whose
    // bandwidth the SS steps use up (0.3-0.7% on the h_q = 128 rows alone; a second chunk was slower).
    constexpr int kRegChunk = T::kLatentChunks - 1;
    Tensor tSrQReg = make_tensor<Element>(partition_shape_A(mma_rope, page_shape));  // (MMA,1,4)
    Tensor tSrS = partition_fragment_C(mma_qk, page_shape);  // (MMA,1,1) S, then P (fp32)
    Tensor tOrP = make_tensor<Element>(partition_shape_A(mma_pv_regs, page_shape));  // (MMA,1,4)
    Tensor tOrO =
        partition_fragment_C(mma_pv_regs, Shape<Int<kBlockM>, Int<T::kVColsPerWarpgroup>>{});  // (MMA,1,1)

    // --- the page ring: warpgroup 0's elected thread loads pages in consumption order ----------
    const paged_sm90::PartWalk<1> walk{p, part, min(part.end_req, p.b - 1)};
    paged_sm90::PageCursor next = walk.start(0);
    int next_page = walk.page_id(next);
    const auto load_next = [&](int buf) CUTLASS_LAMBDA_FUNC_INLINE {
      paged_sm90::load_next_page<T>(p, kv_map, smem, walk, next, next_page, buf, kv_head());
    };
    if constexpr (!kOwner) {
      if (elected) {
        if (walk.valid(next)) load_q(p, q_map, smem, next.req, kv_head(), m_tile(), 0);
        load_next(0);
        load_next(1);
      }
    }
    int g = 0;      // pages consumed so far by this CTA: page g sits in buffer g % 2
    int piece = 0;  // pieces finished, for the parity of final_max / final_sum

    // --- S = Q K^T of buffer `buf`, chunk by chunk as the chunks land (warpgroup 1) -------------
    const auto qk = [&](int buf, int phase) CUTLASS_LAMBDA_FUNC_INLINE {
      Tensor sQo =
          make_tensor(make_smem_ptr(sm90::opaque(smem.q.data())), typename T::SmemLayoutQ{});  // (BLK_M,512)
      Tensor sK = make_tensor(make_smem_ptr(sm90::opaque(smem.kv[buf].data())),
                              typename T::SmemLayoutK{});                    // (BLK_N,576)
      Tensor tSrQ = thr_qk.make_fragment_A(thr_qk.partition_A(sQo));         // (MMA,1,32)
      Tensor tSrK = thr_qk.make_fragment_B(thr_qk.partition_B(sK));          // (MMA,1,36)
      Tensor tSrKRope = thr_rope.make_fragment_B(thr_rope.partition_B(sK));  // (MMA,1,36)
      warpgroup_fence_operand(tSrS);
      mma_qk.accumulate_ = GMMA::ScaleOut::Zero;
      CUTE_UNROLL
      for (int c = 0; c < T::kLatentChunks; ++c) {
        FullBarrier::wait(&smem.kv_ready[buf][c], phase);
        warpgroup_arrive();
        if (c == kRegChunk) {  // any chunk: as chunk 0 it starts S, and the SS steps after it add to it
          mma_rope.accumulate_ = c == 0 ? GMMA::ScaleOut::Zero : GMMA::ScaleOut::One;
          CUTE_UNROLL
          for (int k = 0; k < kSteps; ++k) {
            cute::gemm(mma_rope, tSrQReg(_, _, k), tSrKRope(_, _, c * kSteps + k), tSrS);
            mma_rope.accumulate_ = GMMA::ScaleOut::One;
          }
          mma_qk.accumulate_ = GMMA::ScaleOut::One;
          continue;
        }
        CUTE_UNROLL
        for (int k = c * kSteps; k < (c + 1) * kSteps; ++k) {
          cute::gemm(mma_qk, tSrQ(_, _, k), tSrK(_, _, k), tSrS);
          mma_qk.accumulate_ = GMMA::ScaleOut::One;
        }
      }
      constexpr int c = T::kLatentChunks;
      FullBarrier::wait(&smem.kv_ready[buf][c], phase);
      warpgroup_arrive();
      mma_rope.accumulate_ = GMMA::ScaleOut::One;
      CUTE_UNROLL
      for (int k = 0; k < kSteps; ++k)
        cute::gemm(mma_rope, tSrQRope(_, _, k), tSrKRope(_, _, c * kSteps + k), tSrS);
      warpgroup_commit_batch();
      warpgroup_wait<0>();
      warpgroup_fence_operand(tSrS);
    };
    // V columns of this warpgroup's half of O in buffer `buf`.
    const auto v_half = [&](int buf) CUTLASS_LAMBDA_FUNC_INLINE {
      return make_tensor(make_smem_ptr(sm90::opaque(smem.kv[buf].data() + kWG * T::kVHalfOffset)),
                         typename T::SmemLayoutV{});  // (256,BLK_N)
    };
    // O += P V, waited; `under` runs while its wgmmas are in flight. Warpgroup 0 multiplies the
    // published P tile (SS), warpgroup 1 its own P from registers (RS: no wait for its other warps'
    // P stores). RS measured 1.5-2.7% slower than SS at 251 registers (ninth session), 0.4-0.7%
    // faster at 213 (eleventh).
    const auto pv = [&](int buf, auto&& under) CUTLASS_LAMBDA_FUNC_INLINE {
      paged_sm90::issue_half_pv<kOwner>(
          mma_pv_regs, thr_pv_regs, mma_pv_smem, thr_pv_smem, tOrP, tOrO,
          [&]() CUTLASS_LAMBDA_FUNC_INLINE {
            return make_tensor(make_smem_ptr(sm90::opaque(smem.p[buf].data())), typename T::SmemLayoutP{});
          },
          [&]() CUTLASS_LAMBDA_FUNC_INLINE { return v_half(buf); });
      under();
      warpgroup_wait<0>();
      warpgroup_fence_operand(tOrO);
    };
    const auto scale_o = [&](const float (&s)[2]) CUTLASS_LAMBDA_FUNC_INLINE { paged_sm90::scale_rows(tOrO, s); };
    // Addresses made here (opaque), not kept live through the loop.
    const auto store_p = [&](int buf) CUTLASS_LAMBDA_FUNC_INLINE {
      paged_sm90::store_p<T, false>(smem.p[buf].data(), tOrP, sm90::opaque((wg_thread / 32) * 16),
                                    sm90::opaque(lane));
    };

    paged_sm90::for_each_piece(p, part, [&](int req, int first, int end) CUTLASS_LAMBDA_FUNC_INLINE {
      // Read here, not in the epilogue (write_piece), where it was an L2 round trip before the stores.
      const paged_sm90::PieceRequest request{p.schedule.requests[req], p.seqlens[req]};
      const int seqlen = request.seqlen;
      const int last_page = request.split.num_blocks - 1;
      // Tokens past the sequence's end may hold anything (NaN in the tests): 0 * NaN is NaN in
      // the tensor core, so each reader of a last page's V zeroes its V columns of those rows.
      const auto zero_tail = [&](int buf, int page) CUTLASS_LAMBDA_FUNC_INLINE {
        const int valid = max(0, sm90::opaque(seqlen) - page * kBlockN);  // (negative only for a stale plan)
        if (page == sm90::opaque(last_page) && valid < kBlockN)
          paged_sm90::zero_v_tail<T>(smem.kv[buf].data(), valid, kWG, T::kWarpgroupSync + kWG);
      };
      float run_max[2] = {-INFINITY, -INFINITY};  // log2 units of the scaled logits (warpgroup 1)
      float row_sum[2] = {0.f, 0.f};              // this thread's share (warpgroup 1)
      clear(tOrO);

      if constexpr (kOwner) {
        // The piece's Q tile, loaded by warpgroup 0; the RoPE operand from P tile g % 2, which this
        // piece's first P overwrites once every thread has read it.
        FullBarrier::wait(&smem.q_ready, piece & 1);
        paged_sm90::read_rope_operand<T>(smem.p[g & 1].data(), tSrQRope, sm90::opaque(r0),
                                         sm90::opaque(col0));
        paged_sm90::read_rope_operand<T>(smem.q.data() + kRegChunk * kBlockM * T::kChunk, tSrQReg,
                                         sm90::opaque(r0), sm90::opaque(col0));
        NamedBarrier::sync(128, T::kWarpgroupSync + kWG);

        int limit[2];  // keys visible to rows r0 and r0 + 8
        for (int h = 0; h < 2; ++h) {
          const int packed = min(m_tile() * kBlockM + sm90::opaque(r0) + 8 * h, p.rows_per_head - 1);
          limit[h] = p.causal ? seqlen - p.s_q + packed / p.heads_per_kv + 1 : seqlen;
        }
        const int min_limit = p.causal ? seqlen - p.s_q + 1 : seqlen;

        for (int page = first; page < end; ++page, ++g) {
          const int buf = g & 1, phase = (g >> 1) & 1;
          qk(buf, phase);
          // Softmax of the page against the running max; P in registers (bf16) and in shared memory.
          float scale[2];
          paged_sm90::softmax_page<paged_sm90::kLazyMaxSlack>(tSrS, tOrP, page * kBlockN, col0,
                                                              (page + 1) * kBlockN > min_limit, limit,
                                                              p.scale_log2, run_max, row_sum, scale);
          store_p(buf);
          if (col0 == 0)
            for (int h = 0; h < 2; ++h) smem.scale[buf][r0 + 8 * h] = scale[h];
          scale_o(scale);
          zero_tail(buf, page);
          // P is published under this warpgroup's own P V (RS: it does not read the P tile): the
          // proxy fence that the other warpgroup's SS read of the tile needs waits on the P stores
          // with the tensor pipe already busy.
          pv(buf, [&]() CUTLASS_LAMBDA_FUNC_INLINE {
            cutlass::arch::fence_view_async_shared();
            SignalBarrier::arrive(&smem.p_ready[buf]);
          });
          SignalBarrier::arrive(&smem.buffer_free[buf]);
        }
        paged_sm90::publish_piece_state(smem, piece, r0, col0, run_max, row_sum);
      } else {
        for (int page = first; page < end; ++page, ++g) {
          const int buf = g & 1, phase = (g >> 1) & 1;
          SignalBarrier::wait(&smem.p_ready[buf], phase);
          float scale[2];
          for (int h = 0; h < 2; ++h) scale[h] = smem.scale[buf][r0 + 8 * h];
          scale_o(scale);
          zero_tail(buf, page);
          pv(buf, []() CUTLASS_LAMBDA_FUNC_INLINE {});
          SignalBarrier::arrive(&smem.buffer_free[buf]);
          if (elected) {  // refill the buffer with page g + 2 once both have read it
            SignalBarrier::wait(&smem.buffer_free[buf], phase);
            load_next(buf);
          }
        }
        // The piece's last Q K^T is done (its P was published), and both P V of the page before it:
        // Q and the P tile of the next piece's first page g are free for the next piece's Q tile.
        if (elected && smem.page_req[g & 1] >= 0)
          load_q(p, q_map, smem, smem.page_req[g & 1], kv_head(), m_tile(), g & 1);
        paged_sm90::read_piece_state(smem, piece, r0, run_max, row_sum);
      }
      // Opaque row and column: their addresses are made here, not kept live through the piece.
      paged_sm90::write_piece<Element, T::kHeadDimV, kBlockM, kPartials>(
          p, sm90::opaque(req), request, kv_head(), m_tile(), blockIdx.y, sm90::opaque(r0),
          kWG * T::kVColsPerWarpgroup + sm90::opaque(col0), kOwner && col0 == 0, run_max, row_sum, tOrO);
      ++piece;
    });
  }
};

template <class T, PartialFormat kPartials>
__global__ void __launch_bounds__(T::kThreads, 1)
    paged_sm90_v3_kernel(const __grid_constant__ Params params, const __grid_constant__ CUtensorMap kv_map,
                         const __grid_constant__ CUtensorMap q_map) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  Kernel<T, kPartials>::run(params, &kv_map, &q_map);
#endif
}

}  // namespace cutelab::mla::paged_sm90_v3
