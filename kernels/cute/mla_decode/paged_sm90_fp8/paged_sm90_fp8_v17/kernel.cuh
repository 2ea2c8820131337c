#pragma once
// paged_sm90_fp8 v17 device code: v13's roles on an fp8_token cache. The entry and the producer are
// ../common/tensor_core_kernel.cuh's (with the scale box); the S owner's page loop and softmax are
// v13's with S summed from one accumulator per scale group plus the bf16 RoPE one, and P^T written
// once per group with that group's token scales on it; warpgroup 0 multiplies each group's two
// O^T tiles by its P^T. Nothing in the page is rewritten. README.md has the design.

#include <cfloat>

#include <cuda.h>

#include <cutlass/arch/barrier.h>
#include <cute/tensor.hpp>
#include <cutlass/detail/helper_macros.hpp>

#include "cute/mla_decode/paged_sm90/common/pieces.cuh"
#include "cute/mla_decode/paged_sm90_fp8/common/codes.cuh"
#include "cute/mla_decode/paged_sm90_fp8/common/tensor_core_kernel.cuh"
#include "cute/mla_decode/paged_sm90_fp8/paged_sm90_fp8_v17/config.hpp"
#include "cutelab/device/sm90/opaque.cuh"

namespace cutelab::mla::paged_sm90_fp8_v17 {

using paged_sm90::Params;
using SignalBarrier = cutlass::arch::ClusterBarrier;  // mbarrier: release on arrive, acquire on wait
using FullBarrier = cutlass::arch::ClusterTransactionBarrier;
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
  static constexpr int kGroups = T::kGroups;
  // Barrier roles as in v13: vt_ready[b] is "P^T buffer b free"; wg1_done is unused.

  template <int kWG>
  CUTE_DEVICE static void consume(const Params& p, SharedStorage& smem, const PartInfo& part) {
    if constexpr (kWG == 1)
      own_pages(p, smem, part);
    else
      multiply_pages(p, smem, part);
  }

  CUTE_DEVICE static int kv_head() { return sm90::opaque(static_cast<int>(blockIdx.x)); }  // m_tiles = 1

  // --- warpgroup 1: Q, S, the softmax, P^T per group -----------------------------------------
  // S / q_scale = sum_g s[token][g] x (Q8_g . K8_g^T) + (Q_rope / q_scale) . K_rope^T, the group
  // products in their own accumulators (a token's scales are per column of S). P^T of group g
  // carries P x 2^8 x s[token][g] / sigma, sigma the largest valid scale of the piece so far (the
  // sigma warp's record); O^T takes sigma_old / sigma_new with the softmax's factor when sigma
  // grows, and sigma / 2^8 at the end.
  CUTE_DEVICE static void own_pages(const Params& p, SharedStorage& smem, const PartInfo& part) {
    using namespace cute;
    const int wg_thread = threadIdx.x % 128;
    const int lane = threadIdx.x % 32;
    const int warp = wg_thread / 32;
    const int r0 = warp * 16 + lane / 4;   // accumulator rows r0 (live) and r0 + 8 (padding)
    const int row = Base::packed_row(r0);  // r0's packed row: P^T's row
    const int col0 = 2 * (lane % 4);

    typename T::TiledMmaQK mma_qk;
    auto thr_qk = mma_qk.get_thread_slice(wg_thread);
    typename T::TiledMmaQKRope mma_rope;
    auto thr_rope = mma_rope.get_thread_slice(wg_thread);
    using FragS = decltype(partition_fragment_C(mma_qk, Shape<Int<kBlockM>, Int<kBlockN>>{}));
    FragS tSrS;           // the RoPE product, then S
    FragS tSrG[kGroups];  // Q8_g . K8_g^T
    static_assert(size(FragS{}) == 32);
    const auto fence_s = [&]() CUTLASS_LAMBDA_FUNC_INLINE {
      warpgroup_fence_operand(tSrS);
      CUTE_UNROLL
      for (int g = 0; g < kGroups; ++g) warpgroup_fence_operand(tSrG[g]);
    };
    const std::uint32_t stage0 = cute::cast_smem_ptr_to_uint(smem.stage[0]);

    // S of the page staged in `slot`: issued and committed, not waited.
    const auto qk_issue = [&](int slot, int phase) CUTLASS_LAMBDA_FUNC_INLINE {
      std::uint8_t* q_bytes = sm90::opaque(smem.q);
      std::uint8_t* k_bytes = sm90::opaque(smem.stage[0]) + slot * T::kStageBytes;
      Tensor tSrQ = thr_qk.make_fragment_A(thr_qk.partition_A(
          make_tensor(make_smem_ptr(reinterpret_cast<Code*>(q_bytes)), typename T::SmemLayoutLatent{})));
      Tensor tSrK = thr_qk.make_fragment_B(thr_qk.partition_B(
          make_tensor(make_smem_ptr(reinterpret_cast<Code*>(k_bytes)), typename T::SmemLayoutLatent{})));
      Tensor tRrQ = thr_rope.make_fragment_A(thr_rope.partition_A(
          make_tensor(make_smem_ptr(reinterpret_cast<Element*>(q_bytes + T::kRopeOffset)),
                      typename T::SmemLayoutRope{})));
      Tensor tRrK = thr_rope.make_fragment_B(thr_rope.partition_B(
          make_tensor(make_smem_ptr(reinterpret_cast<Element*>(k_bytes + T::kRopeOffset)),
                      typename T::SmemLayoutRope{})));
      static_assert(size<2>(decltype(tSrQ){}) == 4 * kGroups && size<2>(decltype(tRrQ){}) == 4);
      FullBarrier::wait(&smem.stage_full[slot], phase);
      fence_s();
      warpgroup_arrive();
      mma_rope.accumulate_ = GMMA::ScaleOut::Zero;
      CUTE_UNROLL
      for (int k = 0; k < size<2>(tRrQ); ++k) {
        cute::gemm(mma_rope, tRrQ(_, _, k), tRrK(_, _, k), tSrS);
        mma_rope.accumulate_ = GMMA::ScaleOut::One;
      }
      CUTE_UNROLL
      for (int g = 0; g < kGroups; ++g) {
        mma_qk.accumulate_ = GMMA::ScaleOut::Zero;
        CUTE_UNROLL
        for (int k = 0; k < 4; ++k) {
          cute::gemm(mma_qk, tSrQ(_, _, 4 * g + k), tSrK(_, _, 4 * g + k), tSrG[g]);
          mma_qk.accumulate_ = GMMA::ScaleOut::One;
        }
      }
      warpgroup_commit_batch();
      fence_s();
    };

    const auto hint = Base::request_hint(p);
    if (hint.req >= 0) Base::prefetch_live_q(p, hint.req, wg_thread);
    int g = 0;      // pages consumed so far by this CTA
    int piece = 0;  // pieces finished, for the parity of final_max / final_sum / final_sigma

    Base::for_each_piece(p, part, hint, [&](int req, int first, int end) CUTLASS_LAMBDA_FUNC_INLINE {
      const int seqlen = p.seqlens[req];
      float run_max = -INFINITY;  // log2 units of the scaled logits
      float row_sum = 0.f;        // this thread's share
      float sigma = 1.f;          // P^T's unit: the sigma warp's sigma' of the page last read
      if (piece > 0) NamedBarrier::sync(128, T::kWarpgroupSync + 1);
      // RoPE in bf16, divided by q_scale.
      Base::template load_live_q<true>(p, smem, req, kv_head(), 0, wg_thread);
      NamedBarrier::sync(128, T::kWarpgroupSync + 1);
      // Q's RoPE columns were stored divided by q_scale (load_live_q): S / q_scale comes out of the sum.
      const float logit_factor = smem.q_scale[r0] * p.scale_log2;
      const int packed = min(row, p.rows_per_head - 1);
      const int limit = p.causal ? seqlen - p.s_q + packed / p.heads_per_kv + 1 : seqlen;
      const int min_limit = p.causal ? seqlen - p.s_q + 1 : seqlen;

      float scale;                        // O^T's factor for this row before the packed page's P^T
      std::uint32_t p_codes[kGroups][4];  // that page's P^T words, per group (v13's word order)
      // S of page g is complete: sum it with the page's scales (kept in registers: the dead
      // accumulators' room), free the slot, then the softmax of row r0 and P^T per group.
      const auto softmax_and_pack = [&](int page, int gg) CUTLASS_LAMBDA_FUNC_INLINE {
        fence_s();
        const int slot = gg % T::kStages;
        const std::uint32_t scales = stage0 + slot * T::kStageBytes + T::kScaleOffset;
        const auto body = [&](auto masked) CUTLASS_LAMBDA_FUNC_INLINE {
          constexpr bool kMasked = decltype(masked)::value;
          const int valid = seqlen - page * kBlockN;  // tokens of the page in the request (>= 64 unmasked)
          // Accumulator i with ((i >> 1) & 1) == 0 is row r0, column col0 + (i & 1) + 8 (i >> 2);
          // sc[2 (i >> 2) + (i & 1)] holds that column's four group scales, 0 past the request's end
          // (those bytes may be anything).
          float4 sc[16];
          CUTE_UNROLL
          for (int i = 0; i < size(tSrS); ++i) {
            if (((i >> 1) & 1) != 0) continue;
            const int c = col0 + (i & 1) + 8 * (i >> 2);
            const uint4 w = codes::ld_shared_128(scales + c * T::kScaleRowBytes);
            float4 s = make_float4(__uint_as_float(w.x), __uint_as_float(w.y), __uint_as_float(w.z),
                                   __uint_as_float(w.w));
            if constexpr (kMasked)
              if (c >= valid) s = make_float4(0.f, 0.f, 0.f, 0.f);
            sc[2 * (i >> 2) + (i & 1)] = s;
            tSrS(i) = fmaf(s.w, tSrG[3](i),
                           fmaf(s.z, tSrG[2](i), fmaf(s.y, tSrG[1](i), fmaf(s.x, tSrG[0](i), tSrS(i)))));
          }
          // The page's record {factor, log2 sigma', sigma'}, read by the lane that releases the slot
          // (the sigma warp rewrites it for the slot's next page once the release is complete).
          SignalBarrier::wait(&smem.sigma_ready[slot], (gg / T::kStages) & 1);
          float4 record = make_float4(0.f, 0.f, 0.f, 0.f);
          if (lane == 0) record = smem.page_sigma[slot];
          // S and this warp's scale reads are done with the slot: the next TMA copy may refill it
          // (docs/knowledge/anti-patterns/generic-reads-released-to-tma-without-proxy-fence.md).
          cutlass::arch::fence_view_async_shared();
          __syncwarp();
          if (lane == 0) SignalBarrier::arrive(&smem.slot_free[slot]);
          record.x = __shfl_sync(0xffffffffu, record.x, 0);
          const float log2_sigma = __shfl_sync(0xffffffffu, record.y, 0);
          sigma = __shfl_sync(0xffffffffu, record.z, 0);

          const auto logit = [&](int i) CUTLASS_LAMBDA_FUNC_INLINE {
            if constexpr (kMasked)
              if (page * kBlockN + col0 + (i & 1) + 8 * (i >> 2) >= limit) return -INFINITY;
            return tSrS(i);
          };
          float page_max = -INFINITY;
          CUTE_UNROLL
          for (int i = 0; i < size(tSrS); ++i)
            if (((i >> 1) & 1) == 0) page_max = fmaxf(page_max, logit(i));
          Base::raise_running_max(paged_sm90::quad_max(page_max) * logit_factor, run_max, row_sum, scale);
          scale *= record.x;
          // A row that has seen only masked keys keeps max -inf: exp2(-inf) = 0 keeps P at 0. The
          // exponent also takes 1 / sigma' (P^T's unit), so e = P x 2^8 / sigma'.
          const float bias = 8.f - (run_max == -INFINITY ? 0.f : run_max) - log2_sigma;
          CUTE_UNROLL
          for (int kb = 0; kb < 2; ++kb) CUTE_UNROLL
          for (int hi = 0; hi < 2; ++hi) {
            const int j = 4 * (4 * kb + 2 * hi);  // accumulator j, j + 1, j + 4, j + 5: row r0
            float e[4];
            float4 s[4];
            CUTE_UNROLL
            for (int q = 0; q < 4; ++q) {
              const int i = j + (q & 1) + 4 * (q >> 1);
              e[q] = device::ex2_approx_ftz(fmaf(logit(i), logit_factor, bias));
              s[q] = sc[2 * (i >> 2) + (i & 1)];
            }
            row_sum = fmaf((e[0] + e[1]) + (e[2] + e[3]), sigma, row_sum);
            p_codes[0][2 * kb + hi] =
                codes::pack_e4m3x4(e[0] * s[0].x, e[1] * s[1].x, e[2] * s[2].x, e[3] * s[3].x);
            p_codes[1][2 * kb + hi] =
                codes::pack_e4m3x4(e[0] * s[0].y, e[1] * s[1].y, e[2] * s[2].y, e[3] * s[3].y);
            p_codes[2][2 * kb + hi] =
                codes::pack_e4m3x4(e[0] * s[0].z, e[1] * s[1].z, e[2] * s[2].z, e[3] * s[3].z);
            p_codes[3][2 * kb + hi] =
                codes::pack_e4m3x4(e[0] * s[0].w, e[1] * s[1].w, e[2] * s[2].w, e[3] * s[3].w);
          }
        };
        if ((page + 1) * kBlockN > min_limit)  // the page reaches some row's limit (or the request's end)
          body(cute::true_type{});
        else
          body(cute::false_type{});
      };
      // P^T of page g, one tile a group, and the row's factor into buffer g % 2, once warpgroup
      // 0's O^T of page g - 2 is done with it.
      const auto publish = [&]() CUTLASS_LAMBDA_FUNC_INLINE {
        const int b = g & 1;
        if (g >= 2) SignalBarrier::wait(&smem.vt_ready[b], ((g >> 1) - 1) & 1);
        const std::uint32_t base = cute::cast_smem_ptr_to_uint(smem.p[b]);
        CUTE_UNROLL
        for (int gr = 0; gr < kGroups; ++gr) CUTE_UNROLL
        for (int kb = 0; kb < 2; ++kb) CUTE_UNROLL
        for (int hi = 0; hi < 2; ++hi) {
          const std::uint32_t addr =
              base + gr * T::kPTBytes + codes::sw64_offset(row, 32 * kb + 16 * hi + 2 * col0);
          asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(addr), "r"(p_codes[gr][2 * kb + hi]) : "memory");
        }
        if (col0 == 0) smem.scale[b][row] = scale;
        cutlass::arch::fence_view_async_shared();  // generic stores, then warpgroup 0's wgmma reads
        SignalBarrier::arrive(&smem.p_ready[b]);
      };

      Base::own_piece_pages(first, end, g, qk_issue, publish, softmax_and_pack);
      row_sum *= 1.f / T::kPScale;  // exact: a power of two
      float run_max2[2] = {run_max, -INFINITY}, row_sum2[2] = {row_sum, 0.f};
      // sigma beside the rows' state (publish_piece_state's arrival releases it; its slot is free
      // once warpgroup 0 has read the state of the piece two before).
      if (piece >= 2) SignalBarrier::wait(&smem.final_read[piece & 1], ((piece - 2) >> 1) & 1);
      if (wg_thread == 0) smem.final_sigma[piece & 1] = sigma;
      paged_sm90::publish_piece_state(smem, piece, r0, col0, run_max2, row_sum2);
      ++piece;
    });
  }

  // --- the sigma warp (warp 9, in the producer warpgroup) ----------------------------------------
  // For each staged page, as it lands: the largest group scale of its valid tokens (lane l reads
  // tokens l and l + 32), the piece's running sigma and the record the S owner reads, then the
  // slot's release from its side. It walks the pieces as the producer does.
  CUTE_DEVICE static void sigma_pages(const Params& p, SharedStorage& smem, const PartInfo& part) {
    const int lane = threadIdx.x % 32;
    const std::uint32_t stage0 = cute::cast_smem_ptr_to_uint(smem.stage[0]);
    int j = 0;
    // Without the producer's request hint: the page it waits for lands long after these reads.
    paged_sm90::for_each_piece(p, part, [&](int req, int first, int end) CUTLASS_LAMBDA_FUNC_INLINE {
      const int seqlen = p.seqlens[req];
      float sigma = 0.f, unit = 1.f;
      for (int blk = first; blk < end; ++blk, ++j) {
        const int slot = j % T::kStages;
        FullBarrier::wait(&smem.stage_full[slot], (j / T::kStages) & 1);
        const int valid = seqlen - blk * kBlockN;
        const std::uint32_t scales = stage0 + slot * T::kStageBytes + T::kScaleOffset;
        const float m = Base::page_scale_max(scales, valid, lane, [](int, float4) {});
        const float factor = Base::advance_sigma(m, sigma, unit);  // P^T's unit sigma' moves on
        // The warp's reads, then the slot's release to the next TMA copy; the record before
        // sigma_ready, once the owner's lanes that read the slot's previous record released the slot.
        cutlass::arch::fence_view_async_shared();
        __syncwarp();
        if (lane == 0) {
          if (j >= T::kStages) SignalBarrier::wait(&smem.slot_free[slot], (j / T::kStages - 1) & 1);
          smem.page_sigma[slot] = make_float4(factor, __log2f(unit), unit, 0.f);
          SignalBarrier::arrive(&smem.sigma_ready[slot]);
          SignalBarrier::arrive(&smem.slot_free[slot]);
        }
      }
    });
  }

  // --- warpgroup 0: O^T = V^T P^T per group, out -----------------------------------------------
  // M tiles 2 g and 2 g + 1 hold group g's 128 dims, so each tile takes one group's P^T. Tile mt,
  // k-step ks of this thread hold dims 128 (mt / 2) + dim0 + 2 (mt % 2) + v1 (v1: the fragment's
  // row half; dim0 = 32 warp + 4 unit) of positions 32 ks + 16 v2 + 4 (lane % 4) + byte, i.e.
  // tokens 32 ks + 16 v2 + 2 (lane % 4) + {0, 1, 8, 9} (token_at): for each token and group one
  // 4-byte load of the staged chunk and one 4 x 4 byte transpose per four tokens (v13 loads a
  // thread's 16 dims of one chunk at once, which mixes the groups within a tile).
  CUTE_DEVICE static void multiply_pages(const Params& p, SharedStorage& smem, const PartInfo& part) {
    using namespace cute;
    const int wg_thread = threadIdx.x % 128;
    const int lane = threadIdx.x % 32;
    const int warp = wg_thread / 32;
    const int quad = lane % 4;
    const int unit = lane / 4;
    const int dim0 = 32 * warp + 4 * unit;

    typename T::TiledMmaOT mma;
    auto thr = mma.get_thread_slice(wg_thread);
    Tensor acc = partition_fragment_C(mma, Shape<Int<T::kHeadDimV>, Int<kRows>>{});  // (MMA,8,1) O^T
    Tensor tArV =
        make_tensor<Code>(partition_shape_A(mma, Shape<Int<T::kHeadDimV>, Int<kBlockN>>{}));  // (MMA,8,2)
    static_assert(size(acc) == 128 && size(tArV) == 256);

    // Page g's V (slot g % 3) into the A registers (Base::load_v_groups, every group). Frees the slot.
    const auto load_v = [&](int gg) CUTLASS_LAMBDA_FUNC_INLINE {
      const int slot = gg % T::kStages;
      SignalBarrier::wait(&smem.stage_full[slot], (gg / T::kStages) & 1);
      const int valid = smem.stage_valid[slot];
      Base::template load_v_groups<0, kGroups>(smem, slot, valid, quad, dim0, tArV);
      // The loads, then the slot's release to the next TMA copy
      // (docs/knowledge/anti-patterns/generic-reads-released-to-tma-without-proxy-fence.md).
      cutlass::arch::fence_view_async_shared();
      SignalBarrier::arrive(&smem.slot_free[slot]);
    };

    // Each group's two O^T tiles times that group's P^T.
    const auto issue_ot = [&](int b) CUTLASS_LAMBDA_FUNC_INLINE {
      Base::template issue_ot_groups<0, kGroups>(mma, thr, tArV, acc, smem, b);
    };

    const auto hint = Base::request_hint(p);
    int g = 0;
    int piece = 0;
    Base::for_each_piece(p, part, hint, [&](int req, int first, int end) CUTLASS_LAMBDA_FUNC_INLINE {
      clear(acc);
      Base::multiply_piece_pages(smem, first, end, g, quad, acc, tArV, load_v, issue_ot);
      write_piece(p, smem, req, piece, quad, dim0, acc);
      ++piece;
    });
  }

  // A finished piece's O^T into out (or its partial rows): this thread's rows, each with dims
  // 128 g + dim0 .. + 3 of every group g (Base::write_ot_rows); the output factor is the owner's
  // sigma' of the piece's last page over 2^8.
  template <class FragO>
  CUTE_DEVICE static void write_piece(const Params& p, SharedStorage& smem, int req, int piece, int quad,
                                      int dim0, const FragO& acc) {
    Base::template write_ot_rows<kGroups>(
        p, smem, req, piece, quad, dim0, kv_head(), 0,
        [&](int slot) CUTLASS_LAMBDA_FUNC_INLINE { return smem.final_sigma[slot] / T::kPScale; },
        [&](int c, float inv, float(&v)[16]) CUTLASS_LAMBDA_FUNC_INLINE {
          CUTE_UNROLL  // v[dd]: dim 128 (dd / 4) + dim0 + dd % 4
              for (int dd = 0; dd < 16; ++dd) v[dd] =
                  acc((c & 1) + 2 * (dd & 1) + 4 * (c >> 1), dd / 2, 0) * inv;
        });
  }
};

template <class T>
__global__ void __launch_bounds__(T::kThreads, 1)
    paged_sm90_fp8_v17_kernel(const __grid_constant__ Params params,
                              const __grid_constant__ CUtensorMap kv_map,
                              const __grid_constant__ CUtensorMap rope_map,
                              const __grid_constant__ CUtensorMap scale_map) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  Kernel<T>::run(params, &kv_map, &rope_map, &scale_map);
#endif
}

}  // namespace cutelab::mla::paged_sm90_fp8_v17
