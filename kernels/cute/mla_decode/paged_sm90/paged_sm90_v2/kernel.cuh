#pragma once
// paged_sm90 v2 device code. config.hpp has the design in one paragraph, README.md the
// reasoning, the order of the barriers of one pair of pages and the measurements.

#include <cuda.h>

#include <type_traits>

#include <cute/tensor.hpp>
#include <cute/arch/copy_sm80.hpp>
#include <cutlass/arch/barrier.h>
#include <cutlass/detail/helper_macros.hpp>

#include "cute/mla_decode/paged_sm90/common/pieces.cuh"
#include "cute/mla_decode/paged_sm90/paged_sm90_v2/config.hpp"
#include "cutelab/device/fast_math.cuh"
#include "cutelab/device/sm90/opaque.cuh"
#include "cutelab/device/sm90/pdl.cuh"

namespace cutelab::mla::paged_sm90_v2 {

using paged_sm90::Params;
using FullBarrier = cutlass::arch::ClusterTransactionBarrier;  // TMA bytes of one chunk landed
using PairBarrier = cutlass::arch::ClusterBarrier;  // mbarrier: release on arrive, acquire on wait
using NamedBarrier = cutlass::arch::NamedBarrier;

template <class T>
struct Kernel {
  // Two buffers, one page each per pair: buffer k holds pages k, k + 2, ... (PartWalk), and
  // warpgroup w computes S of buffer w and refills column group w.
  static_assert(T::kStages == 2 && T::kWarpgroups == 2);
  using Element = typename T::Element;
  using SharedStorage = typename T::SharedStorage;
  static constexpr int kBlockM = T::kBlockM;
  static constexpr int kBlockN = T::kBlockN;
  static constexpr int kSteps = T::kQKStepsPerChunk;

  CUTE_DEVICE static float base_of(float running_max) { return running_max == -INFINITY ? 0.f : running_max; }

  CUTE_DEVICE static void run(const Params& p, const CUtensorMap* kv_map) {
    extern __shared__ __align__(1024) char smem_raw[];
    auto& smem = *reinterpret_cast<SharedStorage*>(smem_raw);
    if (threadIdx.x == 0) {
      cute::prefetch_tma_descriptor(kv_map);
      for (int s = 0; s < T::kStages; ++s)
        for (int c = 0; c < T::kNumChunks; ++c) FullBarrier::init(&smem.kv_ready[s][c], 1);
      for (int w = 0; w < T::kWarpgroups; ++w) PairBarrier::init(&smem.pair_ready[w], 128);
      cutlass::arch::fence_barrier_init();
    }
    // Everything above overlaps the previous kernel; the schedule is read only after it.
    sm90::wait_for_prior_grid();
    sm90::allow_dependent_launch();  // the combine's blocks wait on the device for this grid
    const PartInfo part = p.schedule.parts[blockIdx.y];
    __syncthreads();
    if (threadIdx.x < 128)
      consume<0>(p, kv_map, smem, part);
    else
      consume<1>(p, kv_map, smem, part);
  }

  // Loads column group kGroup of page `page` into buffer `buf`; one thread.
  template <int kGroup>
  CUTE_DEVICE static void load_group(const Params& p, const CUtensorMap* kv_map, SharedStorage& smem, int buf,
                                     int page, int kv_head) {
    paged_sm90::load_page_chunks<T, T::group_begin(kGroup), T::group_end(kGroup)>(
        p, kv_map, smem.kv[buf].data(), smem.kv_ready[buf], page, kv_head);
  }

  // Warpgroup kWG: computes S of the pair's page in buffer kWG, owns O[:, 256 kWG : 256 kWG + 256]
  // and refills column group kWG of both buffers.
  template <int kWG>
  CUTE_DEVICE static void consume(const Params& p, const CUtensorMap* kv_map, SharedStorage& smem,
                                  const PartInfo& part) {
    using namespace cute;
    // Recomputed where used (opaque): kept live through the page loop they would spill.
    const auto kv_head = [&]() CUTLASS_LAMBDA_FUNC_INLINE { return sm90::opaque(static_cast<int>(blockIdx.x)) / p.m_tiles; };
    const auto m_tile = [&]() CUTLASS_LAMBDA_FUNC_INLINE { return sm90::opaque(static_cast<int>(blockIdx.x)) % p.m_tiles; };
    const int wg_thread = threadIdx.x % 128;
    const int lane = threadIdx.x % 32;
    // Accumulator rows of this thread: r0 and r0 + 8; columns col0 + (i & 1) + 8 * (i >> 2).
    const int r0 = (wg_thread / 32) * 16 + lane / 4;
    const int col0 = 2 * (lane % 4);
    const bool elected = wg_thread == 0;

    typename T::TiledMmaQK mma_qk;
    typename T::TiledMmaQKRope mma_rope;
    typename T::TiledMmaPVRegisters mma_local;
    typename T::TiledMmaPVShared mma_remote;
    auto thr_qk = mma_qk.get_thread_slice(wg_thread);
    auto thr_rope = mma_rope.get_thread_slice(wg_thread);
    auto thr_local = mma_local.get_thread_slice(wg_thread);
    auto thr_remote = mma_remote.get_thread_slice(wg_thread);
    const auto page_shape = Shape<Int<kBlockM>, Int<kBlockN>>{};

    Tensor tSrQRope = make_tensor<Element>(partition_shape_A(mma_rope, page_shape));   // (MMA,1,4)
    // Shared-memory operand descriptors are made where they are used, from sm90::opaque
    // addresses (see that header): hoisted out of the page loop they would spill.

    Tensor tSrS = partition_fragment_C(mma_qk, page_shape);                            // (MMA,1,1) S, then P (fp32)
    Tensor tOrP = make_tensor<Element>(partition_shape_A(mma_local, page_shape));      // (MMA,1,4)
    Tensor tOrO = partition_fragment_C(mma_local, Shape<Int<kBlockM>, Int<T::kVColsPerWarpgroup>>{});  // (MMA,1,1)

    // --- KV loads: this warpgroup refills column group kWG of both buffers ---------------------
    const paged_sm90::PartWalk<2> walk{p, part, min(part.end_req, p.b - 1)};
    paged_sm90::PageCursor next[T::kStages] = {walk.start(0), walk.start(1)};
    int next_page[T::kStages] = {walk.page_id(next[0]), walk.page_id(next[1])};  // read a pair ahead
    const auto refill = [&](int buf) CUTLASS_LAMBDA_FUNC_INLINE {
      if (elected && walk.valid(next[buf])) load_group<kWG>(p, kv_map, smem, buf, next_page[buf], kv_head());
      walk.advance(next[buf], buf);
      next_page[buf] = walk.page_id(next[buf]);
    };
    refill(0);
    refill(1);
    int phase = 0;       // of this warpgroup's buffer's chunk barriers
    int pair_phase = 0;  // of the pair barriers

    // --- S = Q K^T of this warpgroup's buffer, chunk by chunk as the chunks land ---------------
    const auto qk_latent = [&](auto first_chunk, auto end_chunk) CUTLASS_LAMBDA_FUNC_INLINE {
      Tensor sQo = make_tensor(make_smem_ptr(sm90::opaque(smem.q.data())), typename T::SmemLayoutQ{});  // (BLK_M,512)
      Tensor sK = make_tensor(make_smem_ptr(sm90::opaque(smem.kv[kWG].data())), typename T::SmemLayoutK{});  // (BLK_N,576)
      Tensor tSrQ = thr_qk.make_fragment_A(thr_qk.partition_A(sQo));  // (MMA,1,32)
      Tensor tSrK = thr_qk.make_fragment_B(thr_qk.partition_B(sK));   // (MMA,1,36)
      CUTE_UNROLL
      for (int c = decltype(first_chunk)::value; c < decltype(end_chunk)::value; ++c) {
        FullBarrier::wait(&smem.kv_ready[kWG][c], phase);
        warpgroup_arrive();
        CUTE_UNROLL
        for (int k = c * kSteps; k < (c + 1) * kSteps; ++k) {
          cute::gemm(mma_qk, tSrQ(_, _, k), tSrK(_, _, k), tSrS);
          mma_qk.accumulate_ = GMMA::ScaleOut::One;
        }
      }
    };
    const auto qk_rope = [&]() CUTLASS_LAMBDA_FUNC_INLINE {
      constexpr int c = T::kLatentChunks;
      Tensor sK = make_tensor(make_smem_ptr(sm90::opaque(smem.kv[kWG].data())), typename T::SmemLayoutK{});  // (BLK_N,576)
      Tensor tSrKRope = thr_rope.make_fragment_B(thr_rope.partition_B(sK));  // (MMA,1,36)
      FullBarrier::wait(&smem.kv_ready[kWG][c], phase);
      warpgroup_arrive();
      CUTE_UNROLL
      for (int k = 0; k < kSteps; ++k) cute::gemm(mma_rope, tSrQRope(_, _, k), tSrKRope(_, _, c * kSteps + k), tSrS);
    };
    mma_rope.accumulate_ = GMMA::ScaleOut::One;  // the RoPE chunk never comes first
    // Warpgroup 0 takes the chunks it refilled itself (group 0) first, warpgroup 1 group 1 first.
    const auto qk_first_group = [&]() CUTLASS_LAMBDA_FUNC_INLINE {
      warpgroup_fence_operand(tSrS);
      mma_qk.accumulate_ = GMMA::ScaleOut::Zero;
      if constexpr (kWG == 0) {
        qk_latent(Int<0>{}, Int<T::kGroupSplit>{});
      } else {
        qk_latent(Int<T::kGroupSplit>{}, Int<T::kLatentChunks>{});
        qk_rope();
      }
    };
    const auto qk_second_group = [&]() CUTLASS_LAMBDA_FUNC_INLINE {
      if constexpr (kWG == 0) {
        qk_latent(Int<T::kGroupSplit>{}, Int<T::kLatentChunks>{});
        qk_rope();
      } else {
        qk_latent(Int<0>{}, Int<T::kGroupSplit>{});
      }
    };

    // --- P V halves -----------------------------------------------------------------------------
    // V columns of this warpgroup's half of O in the 64 x 576 tile at `tile`.
    const auto v_half = [&](Element* tile) CUTLASS_LAMBDA_FUNC_INLINE {
      return make_tensor(make_smem_ptr(sm90::opaque(tile + kWG * T::kVHalfOffset)),
                         typename T::SmemLayoutV{});  // (256,BLK_N)
    };
    const auto pv_registers = [&](Element* tile) CUTLASS_LAMBDA_FUNC_INLINE {  // O += tOrP V
      Tensor tOrV = thr_local.make_fragment_B(thr_local.partition_B(v_half(tile)));  // (MMA,1,4)
      warpgroup_fence_operand(tOrP);
      warpgroup_arrive();
      CUTE_UNROLL
      for (int k = 0; k < size<2>(tOrP); ++k) cute::gemm(mma_local, tOrP(_, _, k), tOrV(_, _, k), tOrO);
      warpgroup_fence_operand(tOrP);
    };
    const auto pv_shared = [&](Element* tile) CUTLASS_LAMBDA_FUNC_INLINE {  // O += (the other's P) V
      Tensor sPOther = make_tensor(make_smem_ptr(sm90::opaque(smem.p[1 - kWG].data())),
                                   typename T::SmemLayoutP{});                          // (BLK_M,BLK_N)
      Tensor tOrPOther = thr_remote.make_fragment_A(thr_remote.partition_A(sPOther));  // (MMA,1,4)
      Tensor tOrV = thr_remote.make_fragment_B(thr_remote.partition_B(v_half(tile)));  // (MMA,1,4)
      warpgroup_arrive();
      CUTE_UNROLL
      for (int k = 0; k < size<2>(tOrPOther); ++k) cute::gemm(mma_remote, tOrPOther(_, _, k), tOrV(_, _, k), tOrO);
    };
    const auto scale_o = [&](const float (&s)[2]) CUTLASS_LAMBDA_FUNC_INLINE { paged_sm90::scale_rows(tOrO, s); };
    // Addresses made here (opaque), not kept live through the loop.
    const auto store_p = [&]() CUTLASS_LAMBDA_FUNC_INLINE {
      paged_sm90::store_p<T>(smem.p[kWG].data(), tOrP, sm90::opaque((wg_thread / 32) * 16),
                             sm90::opaque(lane));
    };

    paged_sm90::for_each_piece(p, part, [&](int req, int first, int end) CUTLASS_LAMBDA_FUNC_INLINE {
      // Q tile (all 256 threads) and each warpgroup's RoPE operand; both warpgroups compute S.
      {
        paged_sm90::load_q_tile<T>(p, sm90::opaque(smem.q.data()), req, kv_head(), m_tile(),
                                   sm90::opaque(static_cast<int>(threadIdx.x)), T::kThreads, sm90::opaque(r0),
                                   col0, tSrQRope);
        // Both warpgroups, from different code: the unaligned barrier form.
        NamedBarrier(T::kThreads, T::kBothWarpgroups).arrive_and_wait_unaligned();
      }

      const int n = end - first;
      const int seqlen = p.seqlens[req];
      const int last_page = p.schedule.requests[req].num_blocks - 1;
      int limit[2];  // keys visible to rows r0 and r0 + 8
      for (int h = 0; h < 2; ++h) {
        const int packed = min(m_tile() * kBlockM + sm90::opaque(r0) + 8 * h, p.rows_per_head - 1);
        limit[h] = p.causal ? seqlen - p.s_q + packed / p.heads_per_kv + 1 : seqlen;
      }
      const int min_limit = p.causal ? seqlen - p.s_q + 1 : seqlen;
      // Tokens past the sequence's end may hold anything (NaN in the tests): 0 * NaN is NaN in
      // the tensor core, so a reader of a last page's V zeroes its V columns of those rows.
      const auto zero_tail = [&](int buf, int page) CUTLASS_LAMBDA_FUNC_INLINE {
        const int valid = max(0, sm90::opaque(seqlen) - page * kBlockN);  // (negative only for a stale plan)
        if (page == sm90::opaque(last_page) && valid < kBlockN)
          paged_sm90::zero_v_tail<T>(smem.kv[buf].data(), valid, kWG, T::kWarpgroupSync + kWG);
      };

      // Running max of S * scale * log2(e) (warpgroup 0 keeps it; warpgroup 1 reads max_b at the end).
      float run_max[2] = {-INFINITY, -INFINITY};
      float row_sum[2] = {0.f, 0.f};              // this thread's share of its warpgroup's probabilities
      clear(tOrO);

      // Masks S of page `page`, folds its row maxima into m_in and turns S into P relative to the
      // new max, in tOrP. rescale = exp2(m_in - new max); sum = this thread's P sums.
      const auto softmax = [&](int page, const float (&m_in)[2], float (&m_new)[2], float (&rescale)[2],
                               float (&sum)[2]) CUTLASS_LAMBDA_FUNC_INLINE {
        const bool needs_mask = (page + 1) * kBlockN > min_limit;
        float page_max[2] = {-INFINITY, -INFINITY};
        CUTE_UNROLL
        for (int i = 0; i < size(tSrS); ++i) {
          const int h = (i >> 1) & 1;
          if (needs_mask && page * kBlockN + col0 + (i & 1) + 8 * (i >> 2) >= limit[h]) tSrS(i) = -INFINITY;
          page_max[h] = fmaxf(page_max[h], tSrS(i));
        }
        float base[2];
        CUTE_UNROLL
        for (int h = 0; h < 2; ++h) {
          m_new[h] = fmaxf(m_in[h], paged_sm90::quad_max(page_max[h]) * p.scale_log2);
          // A row that has seen only masked keys keeps max -inf; exp2(-inf - 0) = 0 keeps P at 0.
          base[h] = base_of(m_new[h]);
          rescale[h] = device::ex2_approx_ftz(m_in[h] - base[h]);
          sum[h] = 0.f;
        }
        CUTE_UNROLL
        for (int i = 0; i < size(tSrS); ++i) {
          const int h = (i >> 1) & 1;
          const float prob = device::ex2_approx_ftz(fmaf(tSrS(i), p.scale_log2, -base[h]));
          sum[h] += prob;
          // The accumulator's register order is the RS A-operand order (host-tested).
          tOrP(i) = static_cast<Element>(prob);
        }
      };

      // One pair of pages: a = first + 2i in buffer 0 (S by warpgroup 0) and, when it exists,
      // b = a + 1 in buffer 1 (S by warpgroup 1). Each warpgroup first computes S of its page,
      // chunk by chunk as the chunks land. Warpgroup 0 publishes P_a against max_a
      // (pair_ready[0]), warpgroup 1 multiplies it first (so buffer 0 is refilled early), then
      // publishes P_b against max_b (pair_ready[1]). Without page b, P_b is 0 and both P V of
      // page b read the Q tile (finite, untouched during the pair) as V: buffer 1 may be loading
      // the next piece's page and buffer 0 the next pair's, and 0 * NaN is NaN. One code path per
      // warpgroup (a second one for the last pair would double the hot code: instruction-cache
      // stalls were 10-30% of warp samples with two).
      const auto pair = [&](int i) CUTLASS_LAMBDA_FUNC_INLINE {
        const int page_a = first + 2 * i;
        const int page_b = page_a + 1;
        const bool has_b = page_b < end;
        if (kWG == 0 || has_b) {
          qk_first_group();
          qk_second_group();
          warpgroup_commit_batch();
          warpgroup_wait<0>();
          warpgroup_fence_operand(tSrS);
          phase ^= 1;
        }
        if constexpr (kWG == 0) {
          float max_a[2], scale_a[2], sum[2];
          softmax(page_a, run_max, max_a, scale_a, sum);
          store_p();
          if (col0 == 0)
            for (int h = 0; h < 2; ++h) {
              smem.max_a[r0 + 8 * h] = max_a[h];
              smem.scale_a[r0 + 8 * h] = scale_a[h];
            }
          PairBarrier::arrive(&smem.pair_ready[0]);
          for (int h = 0; h < 2; ++h) row_sum[h] = row_sum[h] * scale_a[h] + sum[h];
          zero_tail(0, page_a);
          scale_o(scale_a);
          warpgroup_fence_operand(tOrO);
          pv_registers(smem.kv[0].data());
          warpgroup_commit_batch();
          warpgroup_wait<0>();
          warpgroup_fence_operand(tOrO);
          refill(0);  // group 0 of buffer 0: its last reader was this P V

          PairBarrier::wait(&smem.pair_ready[1], pair_phase);
          pair_phase ^= 1;
          float scale_b[2];
          for (int h = 0; h < 2; ++h) {
            scale_b[h] = smem.scale_b[r0 + 8 * h];
            run_max[h] = smem.max_b[r0 + 8 * h];
            row_sum[h] *= scale_b[h];
          }
          scale_o(scale_b);
          if (has_b) zero_tail(1, page_b);
          warpgroup_fence_operand(tOrO);
          pv_shared(has_b ? smem.kv[1].data() : smem.q.data());
          warpgroup_commit_batch();
          warpgroup_wait<0>();
          warpgroup_fence_operand(tOrO);
          if (has_b) refill(1);  // group 0 of buffer 1: its last reader was this P V
        } else {
          PairBarrier::wait(&smem.pair_ready[0], pair_phase);
          pair_phase ^= 1;
          float max_a[2], scale_a[2], max_b[2], scale_b[2], sum[2] = {0.f, 0.f};
          for (int h = 0; h < 2; ++h) {
            max_a[h] = smem.max_a[r0 + 8 * h];
            scale_a[h] = smem.scale_a[r0 + 8 * h];
          }
          scale_o(scale_a);
          zero_tail(0, page_a);
          warpgroup_fence_operand(tOrO);
          pv_shared(smem.kv[0].data());  // P_a V_a first: buffer 0's group 1 frees early
          warpgroup_commit_batch();
          if (has_b) {
            softmax(page_b, max_a, max_b, scale_b, sum);
          } else {
            for (int h = 0; h < 2; ++h) {
              max_b[h] = max_a[h];
              scale_b[h] = 1.f;
            }
            CUTE_UNROLL
            for (int k = 0; k < size(tOrP); ++k) tOrP(k) = Element(0);
          }
          for (int h = 0; h < 2; ++h) row_sum[h] = row_sum[h] * scale_a[h] * scale_b[h] + sum[h];
          warpgroup_wait<0>();  // P_a V_a done: P_a's tile and buffer 0's group 1 are free
          warpgroup_fence_operand(tOrO);
          refill(0);
          store_p();
          if (col0 == 0)
            for (int h = 0; h < 2; ++h) {
              smem.max_b[r0 + 8 * h] = max_b[h];
              smem.scale_b[r0 + 8 * h] = scale_b[h];
            }
          PairBarrier::arrive(&smem.pair_ready[1]);
          scale_o(scale_b);
          if (has_b) zero_tail(1, page_b);
          warpgroup_fence_operand(tOrO);
          pv_registers(has_b ? smem.kv[1].data() : smem.q.data());
          warpgroup_commit_batch();
          warpgroup_wait<0>();
          warpgroup_fence_operand(tOrO);
          if (has_b) refill(1);  // group 1 of buffer 1: its last reader was this P V
        }
      };

      for (int i = 0; i < (n + 1) / 2; ++i) pair(i);

      // Each warpgroup summed only its own pages' probabilities.
      for (int h = 0; h < 2; ++h) row_sum[h] = paged_sm90::quad_sum(row_sum[h]);
      if (col0 == 0)
        for (int h = 0; h < 2; ++h) smem.row_sum[kWG][r0 + 8 * h] = row_sum[h];
      NamedBarrier(T::kThreads, T::kBothWarpgroups).arrive_and_wait_unaligned();
      for (int h = 0; h < 2; ++h) {
        row_sum[h] += smem.row_sum[1 - kWG][r0 + 8 * h];
        if constexpr (kWG == 1) run_max[h] = smem.max_b[r0 + 8 * h];  // written before the barrier above
      }
      // Opaque row and column: their addresses are made here, not kept live through the piece.
      paged_sm90::write_piece<Element, T::kHeadDimV, kBlockM>(p, sm90::opaque(req), kv_head(), m_tile(),
                                                              blockIdx.y,
                                                              sm90::opaque(r0),
                                                              kWG * T::kVColsPerWarpgroup + sm90::opaque(col0),
                                                              kWG == 0 && col0 == 0, run_max, row_sum, tOrO);
    });
  }
};

template <class T>
__global__ void __launch_bounds__(T::kThreads, 1)
paged_sm90_v2_kernel(const __grid_constant__ Params params, const __grid_constant__ CUtensorMap kv_map) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  Kernel<T>::run(params, &kv_map);
#endif
}

}  // namespace cutelab::mla::paged_sm90_v2
