#pragma once
// paged_sm90_fp8 v13 device code. The entry, the producer and the issue of S are
// ../common/tensor_core_kernel.cuh's (shared with v2-v12); the S owner's softmax is v3's with
// the spread rows' second row always padding. New here: the owner loads Q's live rows at once (and
// prefetches the guessed request's), publishes P^T (its P codes K-major, the B operand of O^T) and
// multiplies nothing; warpgroup 0 reads V from the staged page straight into the A registers of
// O^T = V^T P^T and writes all of out. The V^T buffers of v2's shared-memory plan go unused.
// README.md has the design and its measurements.

#include <cfloat>

#include <cuda.h>

#include <cutlass/arch/barrier.h>
#include <cute/tensor.hpp>
#include <cutlass/detail/helper_macros.hpp>

#include "cute/mla_decode/paged_sm90/common/pieces.cuh"
#include "cute/mla_decode/paged_sm90_fp8/common/codes.cuh"
#include "cute/mla_decode/paged_sm90_fp8/common/tensor_core_kernel.cuh"
#include "cute/mla_decode/paged_sm90_fp8/paged_sm90_fp8_v13/config.hpp"
#include "cutelab/device/sm90/opaque.cuh"

namespace cutelab::mla::paged_sm90_fp8_v13 {

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
  static constexpr int kRows = T::kRows;
  // Barrier roles: vt_ready[b] is "P^T buffer b free" here (warpgroup 0's O^T of the page that
  // used it complete, its scales read); wg1_done is unused.

  template <int kWG>
  CUTE_DEVICE static void consume(const Params& p, SharedStorage& smem, const PartInfo& part) {
    if constexpr (kWG == 1)
      own_pages(p, smem, part);
    else
      multiply_pages(p, smem, part);
  }

  CUTE_DEVICE static int kv_head() { return sm90::opaque(static_cast<int>(blockIdx.x)); }  // m_tiles = 1

  // --- warpgroup 1: Q codes, S, the softmax, P^T -------------------------------------------
  CUTE_DEVICE static void own_pages(const Params& p, SharedStorage& smem, const PartInfo& part) {
    using namespace cute;
    const int wg_thread = threadIdx.x % 128;
    const int lane = threadIdx.x % 32;
    const int warp = wg_thread / 32;
    const int r0 = warp * 16 + lane / 4;   // accumulator rows r0 (live) and r0 + 8 (padding)
    const int row = Base::packed_row(r0);  // r0's packed row: P^T's row
    const int col0 = 2 * (lane % 4);
    const float kv_scale = *p.kv_scale;

    typename T::TiledMmaQK mma_qk;
    auto thr_qk = mma_qk.get_thread_slice(wg_thread);
    Tensor tSrS = partition_fragment_C(mma_qk, Shape<Int<kBlockM>, Int<kBlockN>>{});  // (MMA,1,1)
    typename Base::TiledMmaQKRegisters mma_qk_regs;
    auto thr_qk_regs = mma_qk_regs.get_thread_slice(wg_thread);
    Tensor tSrQReg = make_tensor<Code>(
        partition_shape_A(mma_qk_regs, Shape<Int<kBlockM>, Int<32 * cute::max(1, Base::kQRegisterSteps)>>{}));
    static_assert(size(tSrS) == 32);

    const auto hint = Base::request_hint(p);
    if (hint.req >= 0) Base::prefetch_live_q(p, hint.req, wg_thread);
    int g = 0;      // pages consumed so far by this CTA
    int piece = 0;  // pieces finished, for the parity of final_max / final_sum
    const auto qk_issue = [&](int slot, int phase) CUTLASS_LAMBDA_FUNC_INLINE {
      if constexpr (Base::kQRegisterSteps > 0)
        Base::issue_s(mma_qk, thr_qk, tSrS, smem, slot, phase, tSrQReg);
      else
        Base::issue_s(mma_qk, thr_qk, tSrS, smem, slot, phase);
    };

    Base::for_each_piece(p, part, hint, [&](int req, int first, int end) CUTLASS_LAMBDA_FUNC_INLINE {
      const int seqlen = p.seqlens[req];
      float run_max = -INFINITY;  // log2 units of the scaled logits
      float row_sum = 0.f;        // this thread's share
      if (piece > 0) NamedBarrier::sync(128, T::kWarpgroupSync + 1);
      Base::template load_live_q<false>(p, smem, req, kv_head(), 0, wg_thread);
      NamedBarrier::sync(128, T::kWarpgroupSync + 1);
      if constexpr (Base::kQRegisterSteps > 0) Base::read_q_registers(thr_qk_regs, tSrQReg, smem);
      const float logit_factor = fmaxf(smem.q_scale[r0] * kv_scale * p.scale_log2, FLT_MIN);
      const int packed = min(row, p.rows_per_head - 1);
      const int limit = p.causal ? seqlen - p.s_q + packed / p.heads_per_kv + 1 : seqlen;
      const int min_limit = p.causal ? seqlen - p.s_q + 1 : seqlen;

      float scale;               // O^T's factor for this row before the packed page's P
      std::uint32_t p_codes[4];  // that page's P: word 2 kb + hi = positions 32 kb + 16 hi + 4 (lane % 4)
      // S of page g is complete: free its slot, the softmax of row r0, P x 2^8 packed (v3's, one row).
      const auto softmax_and_pack = [&](int page, int gg) CUTLASS_LAMBDA_FUNC_INLINE {
        warpgroup_fence_operand(tSrS);
        if (lane == 0) SignalBarrier::arrive(&smem.slot_free[gg % T::kStages]);  // S is done reading it
        const auto body = [&](auto masked) CUTLASS_LAMBDA_FUNC_INLINE {
          // Accumulator i with ((i >> 1) & 1) == 0 is row r0, column col0 + (i & 1) + 8 (i >> 2).
          const auto logit = [&](int i) CUTLASS_LAMBDA_FUNC_INLINE {
            if constexpr (decltype(masked)::value)
              if (page * kBlockN + col0 + (i & 1) + 8 * (i >> 2) >= limit) return -INFINITY;
            return tSrS(i);
          };
          float page_max = -INFINITY;
          CUTE_UNROLL
          for (int i = 0; i < size(tSrS); ++i)
            if (((i >> 1) & 1) == 0) page_max = fmaxf(page_max, logit(i));
          Base::raise_running_max(paged_sm90::quad_max(page_max) * logit_factor, run_max, row_sum, scale);
          // A row that has seen only masked keys keeps max -inf: exp2(-inf) = 0 keeps P at 0.
          const float bias = 8.f - (run_max == -INFINITY ? 0.f : run_max);
          CUTE_UNROLL
          for (int kb = 0; kb < 2; ++kb) CUTE_UNROLL
          for (int hi = 0; hi < 2; ++hi) {
            const int j = 4 * (4 * kb + 2 * hi);  // accumulator j, j + 1, j + 4, j + 5: row r0
            float e[4];
            CUTE_UNROLL
            for (int q = 0; q < 4; ++q)
              e[q] = device::ex2_approx_ftz(fmaf(logit(j + (q & 1) + 4 * (q >> 1)), logit_factor, bias));
            row_sum += (e[0] + e[1]) + (e[2] + e[3]);
            p_codes[2 * kb + hi] = codes::pack_e4m3x4(e[0], e[1], e[2], e[3]);
          }
        };
        if ((page + 1) * kBlockN > min_limit)  // the page reaches some row's limit
          body(cute::true_type{});
        else
          body(cute::false_type{});
      };
      // P^T of page g (its row `row`: the packed positions as in P's A registers) and the row's
      // scale into buffer g % 2, once warpgroup 0's O^T of page g - 2 is done with it.
      const auto publish = [&]() CUTLASS_LAMBDA_FUNC_INLINE {
        const int b = g & 1;
        if (g >= 2) SignalBarrier::wait(&smem.vt_ready[b], ((g >> 1) - 1) & 1);
        const std::uint32_t base = cute::cast_smem_ptr_to_uint(smem.p[b]);
        CUTE_UNROLL
        for (int kb = 0; kb < 2; ++kb) CUTE_UNROLL
        for (int hi = 0; hi < 2; ++hi) {
          const std::uint32_t addr = base + codes::sw64_offset(row, 32 * kb + 16 * hi + 2 * col0);
          asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(addr), "r"(p_codes[2 * kb + hi]) : "memory");
        }
        if (col0 == 0) smem.scale[b][row] = scale;
        cutlass::arch::fence_view_async_shared();  // generic stores, then warpgroup 0's wgmma reads
        SignalBarrier::arrive(&smem.p_ready[b]);
      };

      Base::own_piece_pages(first, end, g, qk_issue, publish, softmax_and_pack);
      row_sum *= 1.f / T::kPScale;  // exact: a power of two
      float run_max2[2] = {run_max, -INFINITY}, row_sum2[2] = {row_sum, 0.f};
      paged_sm90::publish_piece_state(smem, piece, r0, col0, run_max2, row_sum2);
      ++piece;
    });
  }

  // --- warpgroup 0: O^T = V^T P^T, out ------------------------------------------------------
  // Its A operand: M tile mt, k-step ks of this thread hold dims d0 + 2 mt + v1 (v1: the
  // fragment's row half) of positions 32 ks + 16 v2 + 4 (lane % 4) + byte, i.e. tokens
  // 32 ks + 16 v2 + 2 (lane % 4) + {0, 1, 8, 9} (token_at). A thread's dims d0 .. d0 + 15 are one
  // 16-byte unit of a staged 128-byte chunk: the unit lane / 4 of chunk `warp`.
  CUTE_DEVICE static void multiply_pages(const Params& p, SharedStorage& smem, const PartInfo& part) {
    using namespace cute;
    const int wg_thread = threadIdx.x % 128;
    const int lane = threadIdx.x % 32;
    const int warp = wg_thread / 32;
    const int quad = lane % 4;
    const int unit = lane / 4;
    const int d0 = warp * T::kLatentChunk + 16 * unit;
    const float kv_scale = *p.kv_scale;

    typename T::TiledMmaOT mma;
    auto thr = mma.get_thread_slice(wg_thread);
    Tensor acc = partition_fragment_C(mma, Shape<Int<T::kHeadDimV>, Int<kRows>>{});  // (MMA,8,1) O^T
    Tensor tArV =
        make_tensor<Code>(partition_shape_A(mma, Shape<Int<T::kHeadDimV>, Int<kBlockN>>{}));  // (MMA,8,2)
    static_assert(size(acc) == 128 && size(tArV) == 256);
    std::uint32_t* a_regs = reinterpret_cast<std::uint32_t*>(raw_pointer_cast(tArV.data()));
    constexpr std::uint32_t kSelA = codes::pair_selector(0, 1), kSelB = codes::pair_selector(2, 3);
    // Byte offset of this thread's unit of token row t in a staged slot (chunk `warp`, 128-byte swizzle).
    const std::uint32_t stage0 = cute::cast_smem_ptr_to_uint(smem.stage[0]) + warp * T::kLatentChunkBytes;
    const auto v_offset = [&](int t) CUTLASS_LAMBDA_FUNC_INLINE {
      return static_cast<std::uint32_t>(t * 128 + ((unit ^ (t % 8)) << 4));
    };

    // Page g's V (slot g % 3) into the A registers; tokens at or past the valid count read 0
    // (they may hold NaN codes, and 0 * NaN is NaN in the tensor core). Frees the slot.
    const auto load_v = [&](int gg) CUTLASS_LAMBDA_FUNC_INLINE {
      const int slot = gg % T::kStages;
      SignalBarrier::wait(&smem.stage_full[slot], (gg / T::kStages) & 1);
      const int valid = smem.stage_valid[slot];
      const std::uint32_t src = stage0 + slot * T::kStageBytes;
      CUTE_UNROLL
      for (int ks = 0; ks < 2; ++ks) CUTE_UNROLL
      for (int v2 = 0; v2 < 2; ++v2) {
        uint4 rows[4];  // tokens 32 ks + 16 v2 + 2 quad + {0, 1, 8, 9}
        CUTE_UNROLL
        for (int i = 0; i < 4; ++i) {
          const int t = 32 * ks + 16 * v2 + 2 * quad + (i & 1) + 8 * (i >> 1);
          rows[i] = codes::ld_shared_128(src + v_offset(t));
          if (valid < kBlockN && t >= valid) rows[i] = make_uint4(0, 0, 0, 0);
        }
        CUTE_UNROLL
        for (int w = 0; w < 4; ++w) {  // dims d0 + 4 w .. d0 + 4 w + 3
          const auto word = [&](int i) CUTLASS_LAMBDA_FUNC_INLINE {
            return w == 0 ? rows[i].x : w == 1 ? rows[i].y : w == 2 ? rows[i].z : rows[i].w;
          };
          std::uint32_t cols[4];
          codes::transpose4x4(word(0), word(1), word(2), word(3), kSelA, kSelB, cols);
          CUTE_UNROLL
          for (int j = 0; j < 4; ++j) {  // dim 4 w + j: M tile (4 w + j) / 2, row half j % 2
            const int mt = 2 * w + j / 2;
            a_regs[(j % 2) + 2 * v2 + 4 * mt + 32 * ks] = cols[j];
          }
        }
      }
      // The loads, then the slot's release to the next TMA copy
      // (docs/knowledge/anti-patterns/generic-reads-released-to-tma-without-proxy-fence.md).
      cutlass::arch::fence_view_async_shared();
      SignalBarrier::arrive(&smem.slot_free[slot]);
    };

    // O^T += V^T P^T over P^T buffer b.
    const auto issue_ot = [&](int b) CUTLASS_LAMBDA_FUNC_INLINE {
      Tensor tBsP = thr.partition_B(make_tensor(
          make_smem_ptr(reinterpret_cast<Code*>(sm90::opaque(smem.p[b]))), typename T::SmemLayoutPT{}));
      Tensor tBrP = thr.make_fragment_B(tBsP);  // (MMA,1,2)
      mma.accumulate_ = GMMA::ScaleOut::One;
      CUTE_UNROLL
      for (int ks = 0; ks < size<2>(tArV); ++ks) cute::gemm(mma, tArV(_, _, ks), tBrP(_, _, ks), acc);
    };

    const auto hint = Base::request_hint(p);
    int g = 0;
    int piece = 0;
    Base::for_each_piece(p, part, hint, [&](int req, int first, int end) CUTLASS_LAMBDA_FUNC_INLINE {
      clear(acc);
      // Accumulator i of tile mt: dim d0 + 2 mt + ((i >> 1) & 1), packed row 2 quad + (i & 1) + 8 (i >> 2).
      Base::multiply_piece_pages(smem, first, end, g, quad, acc, tArV, load_v, issue_ot);
      write_piece(p, smem, req, piece, quad, d0, acc, kv_scale / T::kPScale);
      ++piece;
    });
  }

  // A finished piece's O^T into out (or its partial rows): this thread's rows, each with its dims
  // d0 .. d0 + 15 contiguous (Base::write_ot_rows).
  template <class FragO>
  CUTE_DEVICE static void write_piece(const Params& p, SharedStorage& smem, int req, int piece, int quad,
                                      int d0, const FragO& acc, float out_scale) {
    Base::template write_ot_rows<1>(
        p, smem, req, piece, quad, d0, kv_head(), 0,
        [&](int) CUTLASS_LAMBDA_FUNC_INLINE { return out_scale; },
        [&](int c, float inv, float(&v)[16]) CUTLASS_LAMBDA_FUNC_INLINE {
          CUTE_UNROLL
          for (int dd = 0; dd < 16; ++dd) v[dd] = acc((c & 1) + 2 * (dd & 1) + 4 * (c >> 1), dd / 2, 0) * inv;
        });
  }
};

template <class T>
__global__ void __launch_bounds__(T::kThreads, 1)
    paged_sm90_fp8_v13_kernel(const __grid_constant__ Params params,
                              const __grid_constant__ CUtensorMap kv_map,
                              const __grid_constant__ CUtensorMap rope_map) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  Kernel<T>::run(params, &kv_map, &rope_map);
#endif
}

}  // namespace cutelab::mla::paged_sm90_fp8_v13
