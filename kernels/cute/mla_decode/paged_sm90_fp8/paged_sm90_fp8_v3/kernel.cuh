#pragma once
// paged_sm90_fp8 v3 device code: v2's kernel with the page loop reordered so that warpgroup 1's
// softmax of page g + 1 overlaps both P V of page g (S of page g + 1 issued ahead of them), and
// warpgroup 0 waits for its P V only before its next transpose. The entry, the producer, Q's
// codes, the issue of S and P V and the transposer are ../common/tensor_core_kernel.cuh's (shared
// with v2). README.md has the reasoning, the prediction and the measurements.

#include <cfloat>

#include <cuda.h>

#include <cutlass/arch/barrier.h>
#include <cute/tensor.hpp>
#include <cutlass/detail/helper_macros.hpp>

#include "cute/mla_decode/paged_sm90/common/pieces.cuh"
#include "cute/mla_decode/paged_sm90_fp8/common/codes.cuh"
#include "cute/mla_decode/paged_sm90_fp8/common/tensor_core_kernel.cuh"
#include "cute/mla_decode/paged_sm90_fp8/paged_sm90_fp8_v3/config.hpp"
#include "cutelab/device/sm90/opaque.cuh"

namespace cutelab::mla::paged_sm90_fp8_v3 {

using paged_sm90::Params;
using SignalBarrier = cutlass::arch::ClusterBarrier;  // mbarrier: release on arrive, acquire on wait
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

    Tensor tSrS = partition_fragment_C(mma_qk, page_shape);  // (MMA,1,1) S, then P
    // Q's last Base::kQRegisterSteps latent k-steps as RS operand registers (T::kQRegisterSteps).
    typename Base::TiledMmaQKRegisters mma_qk_regs;
    auto thr_qk_regs = mma_qk_regs.get_thread_slice(wg_thread);
    Tensor tSrQReg = make_tensor<Code>(
        partition_shape_A(mma_qk_regs, Shape<Int<kBlockM>, Int<32 * cute::max(1, Base::kQRegisterSteps)>>{}));
    Tensor tOrP = make_tensor<Code>(partition_shape_A(mma_pv_regs, page_shape));  // (MMA,1,2) P codes
    Tensor tOrO =
        partition_fragment_C(mma_pv_regs, Shape<Int<kBlockM>, Int<T::kVColsPerWarpgroup>>{});  // (MMA,1,1)
    static_assert(size(tOrP) == 32 && size(tSrS) == 32);

    // --- warpgroup 0: V^T of each staged page ----------------------------------------------
    const auto hint = Base::request_hint(p);
    int total_pages = 0;  // of the part: page g + 1 exists while g + 1 < total_pages
    if constexpr (!kOwner)
      Base::for_each_piece(p, part, hint, [&](int, int first, int end) CUTLASS_LAMBDA_FUNC_INLINE {
        total_pages += end - first;
      });

    const paged_sm90_fp8::VtTransposer<T> transposer(smem, warp, lane);  // used by warpgroup 0
    const auto transpose_next = [&](int j) CUTLASS_LAMBDA_FUNC_INLINE { transposer.next(smem, j); };
    if constexpr (!kOwner)
      if (total_pages > 0) transpose_next(0);
    int g = 0;      // pages consumed so far by this CTA
    int piece = 0;  // pieces finished, for the parity of final_max / final_sum

    // S of the page staged in `slot`, issued and committed, not waited.
    const auto qk_issue = [&](int slot, int phase) CUTLASS_LAMBDA_FUNC_INLINE {
      if constexpr (Base::kQRegisterSteps > 0)
        Base::issue_s(mma_qk, thr_qk, tSrS, smem, slot, phase, tSrQReg);
      else
        Base::issue_s(mma_qk, thr_qk, tSrS, smem, slot, phase);
    };
    const auto pv_issue = [&](int buffer) CUTLASS_LAMBDA_FUNC_INLINE {  // O += P V, not waited
      Base::template issue_pv<kWG>(mma_pv_regs, thr_pv_regs, mma_pv_smem, thr_pv_smem, tOrP, tOrO, smem,
                                   buffer);
    };
    const auto pv_wait = [&]() CUTLASS_LAMBDA_FUNC_INLINE {
      warpgroup_wait<0>();
      warpgroup_fence_operand(tOrO);
      if constexpr (kOwner || Base::kPRegisterImage) warpgroup_fence_operand(tOrP);
    };
    // P as e4m3 codes in the A operand's register order: word 4 kb + 2 hi + h holds row r0 + 8 h,
    // positions 32 kb + 16 hi + 4 (lane % 4) + 0..3, i.e. the accumulator's columns
    // 2 (lane % 4) + {0, 1} of column groups 4 kb + 2 hi and 4 kb + 2 hi + 1 (token_at). Packed
    // when the softmax ends (softmax_and_pack), published later: the A registers may still be
    // read by the P V in flight, and the P tile by warpgroup 0's P V of page g - 2.
    // The packed P into the A operand's registers and into P tile `buffer` for warpgroup 0.
    const auto publish_p = [&](int buffer, const std::uint32_t(&words)[8]) CUTLASS_LAMBDA_FUNC_INLINE {
      Base::publish_p(tOrP, smem, buffer, r0, col0, words);
    };

    Base::for_each_piece(p, part, hint, [&](int req, int first, int end) CUTLASS_LAMBDA_FUNC_INLINE {
      const int seqlen = p.seqlens[req];
      float run_max[2] = {-INFINITY, -INFINITY};  // log2 units of the scaled logits (warpgroup 1)
      float row_sum[2] = {0.f, 0.f};              // this thread's share (warpgroup 1)
      // With Q's steps in registers the S owner clears O after reading them, so that O's 128
      // registers are not live beside Q's rows and register steps at the piece's start.
      constexpr bool kClearOLater = kOwner && Base::kQRegisterSteps > 0;
      if constexpr (!kClearOLater) clear(tOrO);

      if constexpr (kOwner) {
        // Every thread has read the previous piece's q scales (and waited for its wgmma on the
        // Q codes) before any thread overwrites them.
        if (piece > 0) NamedBarrier::sync(128, T::kWarpgroupSync + kWG);
        Base::load_q_codes(p, smem, req, kv_head(), m_tile(), wg_thread);
        NamedBarrier::sync(128, T::kWarpgroupSync + kWG);
        if constexpr (Base::kQRegisterSteps > 0) Base::read_q_registers(thr_qk_regs, tSrQReg, smem);
        if constexpr (kClearOLater) clear(tOrO);
        // A row's logit factor: its q scale x the cache's x log2(e) / sqrt(d), folded into the
        // exponent's FMA (> 0, so a masked -inf stays -inf; a zero row has S = 0).
        float logit_factor[2];
        for (int h = 0; h < 2; ++h)
          logit_factor[h] = fmaxf(smem.q_scale[r0 + 8 * h] * kv_scale * p.scale_log2, FLT_MIN);

        int limit[2];  // keys visible to rows r0 and r0 + 8
        for (int h = 0; h < 2; ++h) {
          const int packed =
              min(m_tile() * kBlockM + Base::packed_row(sm90::opaque(r0) + 8 * h), p.rows_per_head - 1);
          limit[h] = p.causal ? seqlen - p.s_q + packed / p.heads_per_kv + 1 : seqlen;
        }
        const int min_limit = p.causal ? seqlen - p.s_q + 1 : seqlen;
        // With spread rows and at most kBlockM / 2 live rows in the tile, every thread's second row
        // (r0 + 8) is padding: its softmax is skipped and its P is 0 (T::kSpreadRows).
        const bool half_rows = Base::kSpreadRows && p.rows_per_head - m_tile() * kBlockM <= kBlockM / 2;

        float scale[2];            // of the page whose P is packed: O's factor before its P V (O is
                                   // clear at a piece's first page)
        std::uint32_t p_codes[8];  // that page's P, packed
        // S of page g (consumer count g) is complete: free its slot, softmax, pack P (x 2^8).
        // Against v2's softmax: the row scales and 2^8 in the exponent's FMA (64 multiplies a
        // page less), the masking only on pages that need it (a uniform branch, not 64
        // predicated selects a page), the reference max moved only beyond Base::kMaxSlack (the O
        // rescale then skipped on most pages), and S only read, P packed straight from the
        // exponentials. The running sums are of P x 2^8 (divided back at the piece's end).
        const auto softmax_and_pack = [&](int page, int gg) CUTLASS_LAMBDA_FUNC_INLINE {
          warpgroup_fence_operand(tSrS);
          if (lane == 0) SignalBarrier::arrive(&smem.slot_free[gg % T::kStages]);  // S is done reading it
          const auto body = [&](auto masked, auto half) CUTLASS_LAMBDA_FUNC_INLINE {
            constexpr int kRows = decltype(half)::value ? 1 : 2;  // rows of this thread with live values
            const auto logit = [&](int i) CUTLASS_LAMBDA_FUNC_INLINE {
              if constexpr (decltype(masked)::value)
                if (page * kBlockN + col0 + (i & 1) + 8 * (i >> 2) >= limit[(i >> 1) & 1]) return -INFINITY;
              return tSrS(i);
            };
            float page_max[2] = {-INFINITY, -INFINITY};
            CUTE_UNROLL
            for (int i = 0; i < size(tSrS); ++i)
              if (((i >> 1) & 1) < kRows) page_max[(i >> 1) & 1] = fmaxf(page_max[(i >> 1) & 1], logit(i));
            float bias[2];
            CUTE_UNROLL
            for (int h = 0; h < 2; ++h) {
              if (h >= kRows) {
                scale[h] = 1.f;
                continue;
              }
              Base::raise_running_max(paged_sm90::quad_max(page_max[h]) * logit_factor[h], run_max[h],
                                      row_sum[h], scale[h]);
              // A row that has seen only masked keys keeps max -inf: exp2(-inf) = 0 keeps P at 0.
              bias[h] = 8.f - (run_max[h] == -INFINITY ? 0.f : run_max[h]);
            }
            CUTE_UNROLL
            for (int kb = 0; kb < 2; ++kb) CUTE_UNROLL
            for (int hi = 0; hi < 2; ++hi) CUTE_UNROLL
            for (int h = 0; h < 2; ++h) {
              const int j = 2 * h + 4 * (4 * kb + 2 * hi);  // accumulator j, j + 1, j + 4, j + 5: row h
              if (h >= kRows) {
                p_codes[4 * kb + 2 * hi + h] = 0u;
                continue;
              }
              float e[4];
              CUTE_UNROLL
              for (int q = 0; q < 4; ++q)
                e[q] =
                    device::ex2_approx_ftz(fmaf(logit(j + (q & 1) + 4 * (q >> 1)), logit_factor[h], bias[h]));
              row_sum[h] += (e[0] + e[1]) + (e[2] + e[3]);
              p_codes[4 * kb + 2 * hi + h] = codes::pack_e4m3x4(e[0], e[1], e[2], e[3]);
            }
          };
          const auto rows = [&](auto masked) CUTLASS_LAMBDA_FUNC_INLINE {
            if constexpr (Base::kSpreadRows)
              if (half_rows) return body(masked, cute::true_type{});
            body(masked, cute::false_type{});
          };
          if ((page + 1) * kBlockN > min_limit)  // the page reaches some row's limit
            rows(cute::true_type{});
          else
            rows(cute::false_type{});
        };
        // The piece's first page alone: its S needs this piece's Q codes.
        qk_issue(g % T::kStages, (g / T::kStages) & 1);
        warpgroup_wait<0>();
        softmax_and_pack(first, g);
        // P of page g (consumer count) to warpgroup 0 and into this warpgroup's P V, issued.
        const auto publish_and_issue_pv = [&]() CUTLASS_LAMBDA_FUNC_INLINE {
          // V^T of page g is written, and so warpgroup 0's P V of page g - 2 (which read P tile
          // g % 2 and its scales) is complete.
          SignalBarrier::wait(&smem.vt_ready[g & 1], (g >> 1) & 1);
          publish_p(g & 1, p_codes);
          if (col0 == 0)
            for (int h = 0; h < 2; ++h) smem.scale[g & 1][r0 + 8 * h] = scale[h];
          SignalBarrier::arrive(&smem.p_ready[g & 1]);
          pv_issue(g & 1);
        };
        // Every page but the piece's last: no wgmma and no wait sits under a branch (a branch
        // around the S issue serialized every wgmma of the loop, ptxas C7514).
        for (int page = first; page + 1 < end; ++page, ++g) {
          // S of page g + 1 enters the tensor core ahead of both P V of page g (it reads neither
          // P nor V^T), so the softmax of page g + 1 below overlaps them.
          qk_issue((g + 1) % T::kStages, ((g + 1) / T::kStages) & 1);
          publish_and_issue_pv();
          warpgroup_wait<1>();  // S of page g + 1 (committed before this P V)
          softmax_and_pack(page + 1, g + 1);
          pv_wait();
          // O's factor for page g + 1, once P V of page g is in it.
          paged_sm90::scale_rows(tOrO, scale);
          SignalBarrier::arrive(&smem.wg1_done[g & 1]);
        }
        publish_and_issue_pv();  // the piece's last page
        pv_wait();
        SignalBarrier::arrive(&smem.wg1_done[g & 1]);
        ++g;
        for (int h = 0; h < 2; ++h) row_sum[h] *= 1.f / T::kPScale;  // exact: a power of two
        paged_sm90::publish_piece_state(smem, piece, r0, col0, run_max, row_sum);
      } else {
        Base::transposer_pages(smem, first, end, g, total_pages, r0, tOrO, pv_wait, transpose_next, pv_issue,
                               [](int) CUTLASS_LAMBDA_FUNC_INLINE {}, transposer);
        paged_sm90::read_piece_state(smem, piece, r0, run_max, row_sum);
      }
      paged_sm90::write_piece<Element, T::kHeadDimV, kBlockM>(
          p, sm90::opaque(req), kv_head(), m_tile(), blockIdx.y, sm90::opaque(Base::packed_row(r0)),
          kWG * T::kVColsPerWarpgroup + sm90::opaque(col0), kOwner && col0 == 0, run_max, row_sum, tOrO,
          kv_scale / T::kPScale, Base::packed_row(8) - Base::packed_row(0));
      ++piece;
    });
  }
};

template <class T>
__global__ void __launch_bounds__(T::kThreads, 1)
    paged_sm90_fp8_v3_kernel(const __grid_constant__ Params params,
                             const __grid_constant__ CUtensorMap kv_map,
                             const __grid_constant__ CUtensorMap rope_map) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  Kernel<T>::run(params, &kv_map, &rope_map);
#endif
}

}  // namespace cutelab::mla::paged_sm90_fp8_v3
