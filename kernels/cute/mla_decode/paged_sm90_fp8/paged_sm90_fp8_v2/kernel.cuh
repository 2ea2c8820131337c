#pragma once
// paged_sm90_fp8 v2 device code: the two consumer warpgroups' page loops. The entry, the
// producer, Q's codes, the issue of S and P V and warpgroup 0's transposer are
// ../common/tensor_core_kernel.cuh's (shared with v3). config.hpp has the design in one
// paragraph, README.md the reasoning and the measurements.

#include <cuda.h>

#include <cutlass/arch/barrier.h>
#include <cute/tensor.hpp>
#include <cutlass/detail/helper_macros.hpp>

#include "cute/mla_decode/paged_sm90/common/pieces.cuh"
#include "cute/mla_decode/paged_sm90_fp8/common/codes.cuh"
#include "cute/mla_decode/paged_sm90_fp8/common/tensor_core_kernel.cuh"
#include "cute/mla_decode/paged_sm90_fp8/paged_sm90_fp8_v2/config.hpp"
#include "cutelab/device/sm90/opaque.cuh"

namespace cutelab::mla::paged_sm90_fp8_v2 {

using paged_sm90::Params;
using SignalBarrier = cutlass::arch::ClusterBarrier;           // mbarrier: release on arrive, acquire on wait
using NamedBarrier = cutlass::arch::NamedBarrier;
namespace codes = paged_sm90_fp8;

template <class T>
struct Kernel : paged_sm90_fp8::TensorCoreKernel<T, Kernel<T>> {
  using Base = paged_sm90_fp8::TensorCoreKernel<T, Kernel<T>>;
  using Base::kBlockM;
  using Base::kBlockN;
  using typename Base::Code;
  using typename Base::Element;
  using typename Base::SharedStorage;

  // Warpgroup 1 (kWG = 1): Q codes, S, softmax, P, O[:, 256:512]. Warpgroup 0: V^T,
  // O[:, 0:256].
  template <int kWG>
  CUTE_DEVICE static void consume(const Params& p, SharedStorage& smem, const PartInfo& part) {
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
    const int warp = wg_thread / 32;
    // Accumulator rows of this thread: r0 and r0 + 8; columns col0 + (i & 1) + 8 * (i >> 2).
    const int r0 = warp * 16 + lane / 4;
    const int col0 = 2 * (lane % 4);
    const float kv_scale = *p.kv_scale;

    typename T::TiledMmaQK mma_qk;
    typename T::TiledMmaPVRegisters mma_pv_regs;
    typename T::TiledMmaPVShared mma_pv_smem;
    auto thr_qk = mma_qk.get_thread_slice(wg_thread);
    auto thr_pv_regs = mma_pv_regs.get_thread_slice(wg_thread);
    auto thr_pv_smem = mma_pv_smem.get_thread_slice(wg_thread);
    const auto page_shape = Shape<Int<kBlockM>, Int<kBlockN>>{};

    Tensor tSrS = partition_fragment_C(mma_qk, page_shape);                       // (MMA,1,1) S, then P
    Tensor tOrP = make_tensor<Code>(partition_shape_A(mma_pv_regs, page_shape));  // (MMA,1,2) P codes
    Tensor tOrO =
        partition_fragment_C(mma_pv_regs, Shape<Int<kBlockM>, Int<T::kVColsPerWarpgroup>>{});  // (MMA,1,1)
    static_assert(size(tOrP) == 32 && size(tSrS) == 32);

    // --- warpgroup 0: V^T of each staged page ----------------------------------------------
    int total_pages = 0;  // of the part: page g + 1 exists while g + 1 < total_pages
    if constexpr (!kOwner)
      paged_sm90::for_each_piece(
          p, part, [&](int, int first, int end) CUTLASS_LAMBDA_FUNC_INLINE { total_pages += end - first; });

    const paged_sm90_fp8::VtTransposer<T> transposer(smem, warp, lane);  // used by warpgroup 0
    const auto transpose_next = [&](int j) CUTLASS_LAMBDA_FUNC_INLINE { transposer.next(smem, j); };
    if constexpr (!kOwner)
      if (total_pages > 0) transpose_next(0);
    int g = 0;      // pages consumed so far by this CTA
    int piece = 0;  // pieces finished, for the parity of final_max / final_sum

    const auto qk = [&](int slot, int phase) CUTLASS_LAMBDA_FUNC_INLINE {  // S, waited
      Base::issue_s(mma_qk, thr_qk, tSrS, smem, slot, phase);
      warpgroup_wait<0>();
      warpgroup_fence_operand(tSrS);
    };
    const auto pv_issue = [&](int buffer) CUTLASS_LAMBDA_FUNC_INLINE {  // O += P V, not waited
      Base::template issue_pv<kWG>(mma_pv_regs, thr_pv_regs, mma_pv_smem, thr_pv_smem, tOrP, tOrO, smem,
                                   buffer);
    };
    const auto pv_wait = [&]() CUTLASS_LAMBDA_FUNC_INLINE {
      warpgroup_wait<0>();
      warpgroup_fence_operand(tOrO);
      if constexpr (kOwner) warpgroup_fence_operand(tOrP);
    };
    // P (fp32, accumulator order) -> e4m3 codes in the A operand's registers, and into P tile
    // `buffer` for warpgroup 0. Register 4 kb + 2 hi + h holds row r0 + 8 h, positions
    // 32 kb + 16 hi + 4 (lane % 4) + 0..3, i.e. the accumulator's columns 2 (lane % 4) + {0, 1}
    // of column groups 4 kb + 2 hi and 4 kb + 2 hi + 1 (token_at).
    const auto publish_p = [&](int buffer) CUTLASS_LAMBDA_FUNC_INLINE {
      std::uint32_t* regs = reinterpret_cast<std::uint32_t*>(raw_pointer_cast(tOrP.data()));
      const std::uint32_t p_base = cute::cast_smem_ptr_to_uint(smem.p[buffer]);
      CUTE_UNROLL
      for (int kb = 0; kb < 2; ++kb) CUTE_UNROLL
      for (int hi = 0; hi < 2; ++hi) CUTE_UNROLL
      for (int h = 0; h < 2; ++h) {
        const int j = 2 * h + 4 * (4 * kb + 2 * hi);  // accumulator index of the first byte
        const std::uint32_t word = codes::pack_e4m3x4(tSrS(j) * T::kPScale, tSrS(j + 1) * T::kPScale,
                                                      tSrS(j + 4) * T::kPScale, tSrS(j + 5) * T::kPScale);
        regs[4 * kb + 2 * hi + h] = word;
        const std::uint32_t addr = p_base + codes::sw64_offset(r0 + 8 * h, 32 * kb + 16 * hi + col0 * 2);
        asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(addr), "r"(word) : "memory");
      }
      cutlass::arch::fence_view_async_shared();  // generic stores, then warpgroup 0's wgmma reads
    };

    paged_sm90::for_each_piece(p, part, [&](int req, int first, int end) CUTLASS_LAMBDA_FUNC_INLINE {
      const int seqlen = p.seqlens[req];
      float run_max[2] = {-INFINITY, -INFINITY};  // log2 units of the scaled logits (warpgroup 1)
      float row_sum[2] = {0.f, 0.f};              // this thread's share (warpgroup 1)
      clear(tOrO);

      if constexpr (kOwner) {
        // Every thread has read the previous piece's q scales (and waited for its wgmma on the
        // Q codes) before any thread overwrites them.
        if (piece > 0) NamedBarrier::sync(128, T::kWarpgroupSync + kWG);
        Base::load_q_codes(p, smem, req, kv_head(), m_tile(), wg_thread);
        NamedBarrier::sync(128, T::kWarpgroupSync + kWG);
        // The logits' scales: q's per row, the cache's per tensor.
        float row_scale[2];
        for (int h = 0; h < 2; ++h) row_scale[h] = smem.q_scale[r0 + 8 * h] * kv_scale;

        int limit[2];  // keys visible to rows r0 and r0 + 8
        for (int h = 0; h < 2; ++h) {
          const int packed = min(m_tile() * kBlockM + sm90::opaque(r0) + 8 * h, p.rows_per_head - 1);
          limit[h] = p.causal ? seqlen - p.s_q + packed / p.heads_per_kv + 1 : seqlen;
        }
        const int min_limit = p.causal ? seqlen - p.s_q + 1 : seqlen;

        for (int page = first; page < end; ++page, ++g) {
          qk(g % T::kStages, (g / T::kStages) & 1);
          if (lane == 0) SignalBarrier::arrive(&smem.slot_free[g % T::kStages]);  // S is done reading it
          CUTE_UNROLL
          for (int i = 0; i < size(tSrS); ++i) tSrS(i) *= row_scale[(i >> 1) & 1];
          float scale[2];
          paged_sm90::softmax_page(tSrS, tSrS, page * kBlockN, col0, (page + 1) * kBlockN > min_limit, limit,
                                   p.scale_log2, run_max, row_sum, scale);
          // V^T of page g is written, and so warpgroup 0's P V of page g - 2 (which read P tile
          // g % 2 and its scales) is complete: warpgroup 0 transposes page g after it.
          SignalBarrier::wait(&smem.vt_ready[g & 1], (g >> 1) & 1);
          publish_p(g & 1);
          if (col0 == 0)
            for (int h = 0; h < 2; ++h) smem.scale[g & 1][r0 + 8 * h] = scale[h];
          SignalBarrier::arrive(&smem.p_ready[g & 1]);
          paged_sm90::scale_rows(tOrO, scale);
          pv_issue(g & 1);
          pv_wait();
          SignalBarrier::arrive(&smem.wg1_done[g & 1]);
        }
        paged_sm90::publish_piece_state(smem, piece, r0, col0, run_max, row_sum);
      } else {
        for (int page = first; page < end; ++page, ++g) {
          // The next page of the part (maybe of the next piece) into the other V^T buffer, once
          // warpgroup 1's P V of page g - 1 is done with it: while warpgroup 1 computes S of page
          // g, independent of P of page g.
          if (g + 1 < total_pages) {
            if (g > 0) SignalBarrier::wait(&smem.wg1_done[(g - 1) & 1], ((g - 1) >> 1) & 1);
            transpose_next(g + 1);
          }
          SignalBarrier::wait(&smem.p_ready[g & 1], (g >> 1) & 1);
          float scale[2];
          for (int h = 0; h < 2; ++h) scale[h] = smem.scale[g & 1][r0 + 8 * h];
          paged_sm90::scale_rows(tOrO, scale);
          // Issued as soon as P is published: queued behind warpgroup 1's P V, ahead of its next
          // S (issued later, it waited behind all 18 of S's wgmma: 1390 cycles a page, measured).
          pv_issue(g & 1);
          pv_wait();
        }
        paged_sm90::read_piece_state(smem, piece, r0, run_max, row_sum);
      }
      paged_sm90::write_piece<Element, T::kHeadDimV, kBlockM>(
          p, sm90::opaque(req), kv_head(), m_tile(), blockIdx.y, sm90::opaque(r0),
          kWG * T::kVColsPerWarpgroup + sm90::opaque(col0), kOwner && col0 == 0, run_max, row_sum, tOrO,
          kv_scale / T::kPScale);
      ++piece;
    });
  }
};

template <class T>
__global__ void __launch_bounds__(T::kThreads, 1)
    paged_sm90_fp8_v2_kernel(const __grid_constant__ Params params,
                             const __grid_constant__ CUtensorMap kv_map,
                             const __grid_constant__ CUtensorMap rope_map) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  Kernel<T>::run(params, &kv_map, &rope_map);
#endif
}

}  // namespace cutelab::mla::paged_sm90_fp8_v2
