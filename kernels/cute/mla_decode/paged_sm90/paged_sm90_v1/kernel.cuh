#pragma once
// paged_sm90 v1 device code. See config.hpp for the design in one paragraph and README.md for
// the reasoning and the measurements.

#include <cuda.h>

#include <cute/tensor.hpp>
#include <cutlass/arch/barrier.h>

#include "cute/mla_decode/paged_sm90/paged_sm90_v1/config.hpp"
#include "cute/mla_decode/paged_sm90/common/ring.cuh"

namespace cutelab::mla::paged_sm90_v1 {

using paged_sm90::Params;

template <class Traits>
struct Kernel {
  using Element = typename Traits::Element;
  using SharedStorage = typename Traits::SharedStorage;
  using Barrier = typename Traits::Barrier;
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
    const int warp_in_wg = wg_thread / 32;
    // Accumulator rows of this thread: r0 and r0 + 8 (SM90 GMMA C layout, see README).
    const int r0 = warp_in_wg * 16 + lane / 4;
    const int col0 = 2 * (lane % 4);

    typename Traits::TiledMmaQK mma_qk;
    typename Traits::TiledMmaPV mma_pv;
    auto thr_qk = mma_qk.get_thread_slice(wg_thread);
    auto thr_pv = mma_pv.get_thread_slice(wg_thread);

    Tensor sQ = make_tensor(make_smem_ptr(smem.q.data()), typename Traits::SmemLayoutQ{});  // (BLK_M,576)
    Tensor tSrQ = thr_qk.make_fragment_A(thr_qk.partition_A(sQ));                            // (MMA,1,36)

    int iter = 0;
    paged_sm90::for_each_piece(p, part, [&](int req, int first, int end) {
      cutlass::arch::NamedBarrier::sync(Traits::kConsumerThreads, Barrier::kQFree);
      paged_sm90::load_q_tile<Traits>(p, smem, req, kv_head, m_tile);
      cutlass::arch::fence_view_async_shared();
      cutlass::arch::NamedBarrier::sync(Traits::kConsumerThreads, Barrier::kQReady);

      const int seqlen = p.seqlens[req];
      // Keys visible to a row: seqlen, or seqlen - s_q + s + 1 when causal.
      int limit[2];
      for (int h = 0; h < 2; ++h) {
        const int packed = min(m_tile * kBlockM + r0 + 8 * h, p.rows_per_head - 1);
        const int s = packed / p.heads_per_kv;
        limit[h] = p.causal ? seqlen - p.s_q + s + 1 : seqlen;
      }
      const int min_limit = p.causal ? seqlen - p.s_q + 1 : seqlen;

      float row_max[2] = {-INFINITY, -INFINITY};  // running max of S * scale * log2(e)
      float row_sum[2] = {0.f, 0.f};              // this thread's share of the running sum
      Tensor tOrO = partition_fragment_C(mma_pv, Shape<Int<kBlockM>, Int<Traits::kVColsPerWarpgroup>>{});  // (MMA,1,1)
      clear(tOrO);

      for (int blk = first; blk < end; ++blk, ++iter) {
        const int stage = iter % kStages;
        paged_sm90::wait_page<Traits>(smem, iter);
        Element* tile = smem.kv[stage].data();

        // S = Q K^T over the full page (each consumer warpgroup computes all of it).
        Tensor sK = make_tensor(make_smem_ptr(tile), typename Traits::SmemLayoutK{});  // (BLK_N,576)
        Tensor tSrK = thr_qk.make_fragment_B(thr_qk.partition_B(sK));                  // (MMA,1,36)
        Tensor tSrS = partition_fragment_C(mma_qk, Shape<Int<kBlockM>, Int<kBlockN>>{});  // (MMA,1,1)
        warpgroup_fence_operand(tSrS);
        warpgroup_arrive();
        mma_qk.accumulate_ = GMMA::ScaleOut::Zero;
        CUTE_UNROLL
        for (int k = 0; k < size<2>(tSrQ); ++k) {
          cute::gemm(mma_qk, tSrQ(_, _, k), tSrK(_, _, k), tSrS);
          mma_qk.accumulate_ = GMMA::ScaleOut::One;
        }
        warpgroup_commit_batch();
        warpgroup_wait<0>();
        warpgroup_fence_operand(tSrS);

        const int valid = seqlen - blk * kBlockN;  // tokens of this page inside the sequence
        if (valid < kBlockN) paged_sm90::zero_v_tail<Traits>(tile, valid, wg, Barrier::kWarpgroupSync + wg);

        // Online softmax. Register i of the accumulator holds row r0 + 8 * ((i >> 1) & 1) and
        // column col0 + (i & 1) + 8 * (i >> 2).
        const bool needs_mask = (blk + 1) * kBlockN > min_limit;
        float block_max[2] = {-INFINITY, -INFINITY};
        CUTE_UNROLL
        for (int i = 0; i < size(tSrS); ++i) {
          const int h = (i >> 1) & 1;
          if (needs_mask) {
            const int token = blk * kBlockN + col0 + (i & 1) + 8 * (i >> 2);
            if (token >= limit[h]) tSrS(i) = -INFINITY;
          }
          block_max[h] = fmaxf(block_max[h], tSrS(i));
        }
        float base[2], correction[2];
        CUTE_UNROLL
        for (int h = 0; h < 2; ++h) {
          block_max[h] = paged_sm90::quad_max(block_max[h]);
          const float new_max = fmaxf(row_max[h], block_max[h] * p.scale_log2);
          // A row that has seen only masked keys keeps max -inf; exp2(-inf - 0) = 0 keeps P at 0.
          base[h] = new_max == -INFINITY ? 0.f : new_max;
          correction[h] = exp2f(row_max[h] - base[h]);
          row_max[h] = new_max;
          row_sum[h] *= correction[h];
        }
        Tensor tOrP = make_tensor<Element>(partition_shape_A(mma_pv, Shape<Int<kBlockM>, Int<kBlockN>>{}));  // (MMA,1,4)
        CUTE_UNROLL
        for (int i = 0; i < size(tSrS); ++i) {
          const int h = (i >> 1) & 1;
          const float prob = exp2f(fmaf(tSrS(i), p.scale_log2, -base[h]));
          row_sum[h] += prob;
          // The accumulator's register order is the RS A-operand order, 16 columns at a time.
          tOrP(i) = static_cast<Element>(prob);
        }
        CUTE_UNROLL
        for (int i = 0; i < size(tOrO); ++i) tOrO(i) *= correction[(i >> 1) & 1];

        // O[:, half] += P V[:, half], V read in place through the MN-major view.
        Tensor sV = make_tensor(make_smem_ptr(tile + wg * Traits::kVHalfOffset), typename Traits::SmemLayoutV{});  // (256,BLK_N)
        Tensor tOrV = thr_pv.make_fragment_B(thr_pv.partition_B(sV));  // (MMA,1,4)
        warpgroup_fence_operand(tOrP);
        warpgroup_fence_operand(tOrO);
        warpgroup_arrive();
        CUTE_UNROLL
        for (int k = 0; k < size<2>(tOrP); ++k) cute::gemm(mma_pv, tOrP(_, _, k), tOrV(_, _, k), tOrO);
        warpgroup_commit_batch();
        warpgroup_wait<0>();
        warpgroup_fence_operand(tOrO);
        warpgroup_fence_operand(tOrP);

        paged_sm90::release_page<Traits>(smem, iter);
      }

      for (int h = 0; h < 2; ++h) row_sum[h] = paged_sm90::quad_sum(row_sum[h]);
      paged_sm90::write_piece<Element, Traits::kHeadDimV, kBlockM>(p, req, kv_head, m_tile, blockIdx.y, r0,
                                                                   wg * Traits::kVColsPerWarpgroup + col0,
                                                                   wg == 0 && col0 == 0, row_max, row_sum, tOrO);
    });
  }

};

template <class Traits>
__global__ void __launch_bounds__(Traits::kThreads, 1)
paged_sm90_v1_kernel(const __grid_constant__ Params params, const __grid_constant__ CUtensorMap kv_map) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  Kernel<Traits>::run(params, &kv_map);
#endif
}

}  // namespace cutelab::mla::paged_sm90_v1
