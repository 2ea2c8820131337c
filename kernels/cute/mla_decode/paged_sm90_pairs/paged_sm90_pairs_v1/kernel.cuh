#pragma once
// paged_sm90_pairs v1 device code: paged_sm90 v1's producer and ring, with the pages of each pair split between
// the two consumer warpgroups (see config.hpp and README.md).

#include <cuda.h>

#include <cute/tensor.hpp>
#include <cutlass/arch/barrier.h>

#include "cute/mla_decode/paged_sm90/common/ring.cuh"
#include "cute/mla_decode/paged_sm90_pairs/paged_sm90_pairs_v1/config.hpp"

namespace cutelab::mla::paged_sm90_pairs_v1 {

using paged_sm90::Params;

template <class Traits>
struct Kernel {
  using Element = typename Traits::Element;
  using SharedStorage = typename Traits::SharedStorage;
  using Barrier = typename Traits::Barrier;
  using NamedBarrier = cutlass::arch::NamedBarrier;
  static constexpr int kBlockM = Traits::kBlockM;
  static constexpr int kBlockN = Traits::kBlockN;
  static constexpr int kStages = Traits::kStages;

  CUTE_DEVICE static void run(const Params& p, const CUtensorMap* kv_map) {
    paged_sm90::run_warp_specialized<Traits>(
        p, kv_map, [&](SharedStorage& smem, const PartInfo& part, int kv_head, int m_tile, int wg) {
          consume(p, smem, part, kv_head, m_tile, wg);
        });
  }

  CUTE_DEVICE static void consume(const Params& p, SharedStorage& smem, const PartInfo& part, int kv_head,
                                  int m_tile, int wg) {
    using namespace cute;
    const int wg_thread = threadIdx.x % 128;
    const int lane = threadIdx.x % 32;
    // Accumulator rows of this thread: r0 and r0 + 8 (layout checked by the host test).
    const int r0 = (wg_thread / 32) * 16 + lane / 4;
    const int col0 = 2 * (lane % 4);

    typename Traits::TiledMmaQK mma_qk;
    typename Traits::TiledMmaQKRope mma_rope;
    typename Traits::TiledMmaPVOwn mma_pv_own;
    typename Traits::TiledMmaPVOther mma_pv_other;
    auto thr_qk = mma_qk.get_thread_slice(wg_thread);
    auto thr_rope = mma_rope.get_thread_slice(wg_thread);
    auto thr_own = mma_pv_own.get_thread_slice(wg_thread);
    auto thr_other = mma_pv_other.get_thread_slice(wg_thread);

    Tensor sQ = make_tensor(make_smem_ptr(smem.q.data()), typename Traits::SmemLayoutQ{});        // (BLK_M,512)
    Tensor tSrQ = thr_qk.make_fragment_A(thr_qk.partition_A(sQ));                                  // (MMA,1,32)
    auto page_shape = Shape<Int<kBlockM>, Int<kBlockN>>{};
    Tensor tSrQRope = make_tensor<Element>(partition_shape_A(mma_rope, page_shape));               // (MMA,1,4)
    Tensor tScQRope = thr_rope.partition_A(make_identity_tensor(page_shape));                      // (MMA,1,4)
    Tensor sP_mine = make_tensor(make_smem_ptr(smem.p[wg].data()), typename Traits::SmemLayoutP{});     // (BLK_M,BLK_N)
    Tensor sP_other = make_tensor(make_smem_ptr(smem.p[1 - wg].data()), typename Traits::SmemLayoutP{});  // (BLK_M,BLK_N)
    Tensor tOrPOther = thr_other.make_fragment_A(thr_other.partition_A(sP_other));                // (MMA,1,4)
    constexpr int kQKSteps = Traits::kHeadDimV / 16;

    int iter = 0;  // ring position of the piece's first page
    paged_sm90::for_each_piece(p, part, [&](int req, int first, int end) {
      NamedBarrier::sync(Traits::kConsumerThreads, Barrier::kQFree);
      paged_sm90::load_q_tile<Traits>(p, smem, req, kv_head, m_tile);
      CUTE_UNROLL
      for (int i = 0; i < size(tSrQRope); ++i) {
        const int packed = m_tile * kBlockM + get<0>(tScQRope(i));
        tSrQRope(i) = packed < p.rows_per_head ? paged_sm90::q_row<Element>(p, req, kv_head, packed)[Traits::kHeadDimV + get<1>(tScQRope(i))]
                                               : Element(0);
      }
      cutlass::arch::fence_view_async_shared();
      NamedBarrier::sync(Traits::kConsumerThreads, Barrier::kQReady);

      const int seqlen = p.seqlens[req];
      int limit[2];  // keys visible to rows r0 and r0 + 8
      for (int h = 0; h < 2; ++h) {
        const int packed = min(m_tile * kBlockM + r0 + 8 * h, p.rows_per_head - 1);
        limit[h] = p.causal ? seqlen - p.s_q + packed / p.heads_per_kv + 1 : seqlen;
      }
      const int min_limit = p.causal ? seqlen - p.s_q + 1 : seqlen;
      const int last_blk = (seqlen - 1) / kBlockN;

      float row_max[2] = {-INFINITY, -INFINITY};  // running max of S * scale * log2(e)
      float row_sum[2] = {0.f, 0.f};              // this warpgroup's share of the running sum
      Tensor tOrO = partition_fragment_C(mma_pv_own, Shape<Int<kBlockM>, Int<Traits::kVColsPerWarpgroup>>{});  // (MMA,1,1)
      clear(tOrO);
      Tensor tOrP = make_tensor<Element>(partition_shape_A(mma_pv_own, page_shape));  // (MMA,1,4)

      for (int pair = first; pair < end; pair += 2) {
        const bool has_b = pair + 1 < end;
        const int own_blk = pair + wg;
        const bool has_own = own_blk < end;

        // S = Q K^T of this warpgroup's page: 32 SS steps over Q's latent part, 4 RS steps over RoPE.
        float page_max[2] = {-INFINITY, -INFINITY};
        Tensor tSrS = partition_fragment_C(mma_qk, page_shape);  // (MMA,1,1)
        if (has_own) {
          paged_sm90::wait_page<Traits>(smem, iter + wg);
          Tensor sK = make_tensor(make_smem_ptr(smem.kv[(iter + wg) % kStages].data()), typename Traits::SmemLayoutK{});  // (BLK_N,576)
          Tensor tSrK = thr_qk.make_fragment_B(thr_qk.partition_B(sK));        // (MMA,1,36)
          Tensor tSrKRope = thr_rope.make_fragment_B(thr_rope.partition_B(sK));  // (MMA,1,36)
          warpgroup_fence_operand(tSrS);
          warpgroup_fence_operand(tSrQRope);
          warpgroup_arrive();
          mma_qk.accumulate_ = GMMA::ScaleOut::Zero;
          CUTE_UNROLL
          for (int k = 0; k < kQKSteps; ++k) {
            cute::gemm(mma_qk, tSrQ(_, _, k), tSrK(_, _, k), tSrS);
            mma_qk.accumulate_ = GMMA::ScaleOut::One;
          }
          mma_rope.accumulate_ = GMMA::ScaleOut::One;
          CUTE_UNROLL
          for (int k = 0; k < size<2>(tSrQRope); ++k) cute::gemm(mma_rope, tSrQRope(_, _, k), tSrKRope(_, _, kQKSteps + k), tSrS);
          warpgroup_commit_batch();
          warpgroup_wait<0>();
          warpgroup_fence_operand(tSrS);
          warpgroup_fence_operand(tSrQRope);

          const bool needs_mask = (own_blk + 1) * kBlockN > min_limit;
          CUTE_UNROLL
          for (int i = 0; i < size(tSrS); ++i) {
            const int h = (i >> 1) & 1;
            if (needs_mask && own_blk * kBlockN + col0 + (i & 1) + 8 * (i >> 2) >= limit[h]) tSrS(i) = -INFINITY;
            page_max[h] = fmaxf(page_max[h], tSrS(i));
          }
          for (int h = 0; h < 2; ++h) page_max[h] = paged_sm90::quad_max(page_max[h]);
        }
        if (col0 == 0) {
          smem.row_max[wg][r0] = page_max[0];
          smem.row_max[wg][r0 + 8] = page_max[1];
        }
        NamedBarrier::sync(Traits::kConsumerThreads, Barrier::kMaxReady);

        float base[2], correction[2];
        CUTE_UNROLL
        for (int h = 0; h < 2; ++h) {
          const float pair_max = fmaxf(page_max[h], smem.row_max[1 - wg][r0 + 8 * h]);
          const float new_max = fmaxf(row_max[h], pair_max * p.scale_log2);
          // A row that has seen only masked keys keeps max -inf; exp2(-inf - 0) = 0 keeps P at 0.
          base[h] = new_max == -INFINITY ? 0.f : new_max;
          correction[h] = exp2f(row_max[h] - base[h]);
          row_max[h] = new_max;
          row_sum[h] *= correction[h];
        }
        if (has_own) {
          CUTE_UNROLL
          for (int i = 0; i < size(tSrS); i += 2) {
            const int h = (i >> 1) & 1;
            const float p0 = exp2f(fmaf(tSrS(i), p.scale_log2, -base[h]));
            const float p1 = exp2f(fmaf(tSrS(i + 1), p.scale_log2, -base[h]));
            row_sum[h] += p0 + p1;
            // Accumulator register order is the RS A-operand order (host-tested).
            tOrP(i) = static_cast<Element>(p0);
            tOrP(i + 1) = static_cast<Element>(p1);
            const int r = r0 + 8 * h, c = col0 + 8 * (i >> 2);
            *reinterpret_cast<cute::array<Element, 2>*>(&sP_mine(r, c)) = cute::array<Element, 2>{tOrP(i), tOrP(i + 1)};
          }
        }
        cutlass::arch::fence_view_async_shared();
        NamedBarrier::sync(Traits::kConsumerThreads, Barrier::kPReady);

        CUTE_UNROLL
        for (int i = 0; i < size(tOrO); ++i) tOrO(i) *= correction[(i >> 1) & 1];

        // Both pages must have landed before this warpgroup reads their V halves.
        paged_sm90::wait_page<Traits>(smem, iter);
        if (has_b) paged_sm90::wait_page<Traits>(smem, iter + 1);
        const int tail_page = last_blk - pair;  // 0 or 1 when the sequence ends in this pair
        if ((tail_page == 0 || (tail_page == 1 && has_b)) && seqlen % kBlockN != 0)
          paged_sm90::zero_v_tail<Traits>(smem.kv[(iter + tail_page) % kStages].data(), seqlen % kBlockN, wg,
                                          Barrier::kWarpgroupSync + wg);

        // O[:, half] += P_a V_a[:, half] + P_b V_b[:, half]; page a first so its stage frees first.
        Tensor sVa = make_tensor(make_smem_ptr(smem.kv[iter % kStages].data() + wg * Traits::kVHalfOffset),
                                 typename Traits::SmemLayoutV{});  // (256,BLK_N)
        Tensor sVb = make_tensor(make_smem_ptr(smem.kv[(iter + 1) % kStages].data() + wg * Traits::kVHalfOffset),
                                 typename Traits::SmemLayoutV{});  // (256,BLK_N)
        // Own P from registers, the other warpgroup's from shared memory.
        const auto pv_own = [&](auto& sV) {
          Tensor tOrV = thr_own.make_fragment_B(thr_own.partition_B(sV));  // (MMA,1,4)
          CUTE_UNROLL
          for (int k = 0; k < size<2>(tOrP); ++k) cute::gemm(mma_pv_own, tOrP(_, _, k), tOrV(_, _, k), tOrO);
        };
        const auto pv_other = [&](auto& sV) {
          Tensor tOrV = thr_other.make_fragment_B(thr_other.partition_B(sV));  // (MMA,1,4)
          CUTE_UNROLL
          for (int k = 0; k < size<2>(tOrPOther); ++k) cute::gemm(mma_pv_other, tOrPOther(_, _, k), tOrV(_, _, k), tOrO);
        };
        warpgroup_fence_operand(tOrO);
        warpgroup_fence_operand(tOrP);
        warpgroup_arrive();
        if (wg == 0)
          pv_own(sVa);
        else
          pv_other(sVa);
        warpgroup_commit_batch();
        if (has_b) {
          if (wg == 0)
            pv_other(sVb);
          else
            pv_own(sVb);
          warpgroup_commit_batch();
          warpgroup_wait<1>();
          paged_sm90::release_page<Traits>(smem, iter);
          warpgroup_wait<0>();
          paged_sm90::release_page<Traits>(smem, iter + 1);
        } else {
          warpgroup_wait<0>();
          paged_sm90::release_page<Traits>(smem, iter);
        }
        warpgroup_fence_operand(tOrO);
        warpgroup_fence_operand(tOrP);
        iter += has_b ? 2 : 1;
      }

      // Each warpgroup summed only its own pages' probabilities.
      for (int h = 0; h < 2; ++h) row_sum[h] = paged_sm90::quad_sum(row_sum[h]);
      if (col0 == 0) {
        smem.row_sum[wg][r0] = row_sum[0];
        smem.row_sum[wg][r0 + 8] = row_sum[1];
      }
      NamedBarrier::sync(Traits::kConsumerThreads, Barrier::kSumReady);
      for (int h = 0; h < 2; ++h) row_sum[h] += smem.row_sum[1 - wg][r0 + 8 * h];
      paged_sm90::write_piece<Element, Traits::kHeadDimV, kBlockM>(p, req, kv_head, m_tile, blockIdx.y, r0,
                                                                   wg * Traits::kVColsPerWarpgroup + col0,
                                                                   wg == 0 && col0 == 0, row_max, row_sum, tOrO);
    });
  }
};

template <class Traits>
__global__ void __launch_bounds__(Traits::kThreads, 1)
paged_sm90_pairs_v1_kernel(const __grid_constant__ Params params, const __grid_constant__ CUtensorMap kv_map) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  Kernel<Traits>::run(params, &kv_map);
#endif
}

}  // namespace cutelab::mla::paged_sm90_pairs_v1
