#pragma once
// paged_sm90_fp8 v18 device code: fp8_token at 64 query rows a CTA. The entry and the producer are
// ../common/tensor_core_kernel.cuh's (with v17's scale box); the sigma warp is v17's and also copies each
// page's scales, and the factors S takes between its group products, out of the slot; the S owner
// (warpgroup 1) computes S from two accumulators, the softmax of its two rows, every group's P^T, and
// O^T for scale groups 2-3; warpgroup 0 O^T for groups 0-1. Nothing in the page is rewritten.
// README.md has the design.

#include <cfloat>

#include <cuda.h>

#include <cutlass/arch/barrier.h>
#include <cute/tensor.hpp>
#include <cutlass/detail/helper_macros.hpp>

#include "cute/mla_decode/paged_sm90/common/pieces.cuh"
#include "cute/mla_decode/paged_sm90_fp8/common/codes.cuh"
#include "cute/mla_decode/paged_sm90_fp8/common/tensor_core_kernel.cuh"
#include "cute/mla_decode/paged_sm90_fp8/paged_sm90_fp8_v18/config.hpp"
#include "cutelab/device/sm90/opaque.cuh"

namespace cutelab::mla::paged_sm90_fp8_v18 {

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
  static constexpr int kOwnGroups = T::kGroupsPerWarpgroup;
  static constexpr int kOwnDims = kOwnGroups * T::kLatentChunk;  // 256 O^T dims a warpgroup
  static_assert(kRows == kBlockM && kOwnGroups == 2);
  // Barrier roles: vt_ready[b] and wg1_done[b] are warpgroup 0's and the owner's "done with P^T buffer
  // b" (128 arrivals each); scales_free[s] (every owner thread, after its own reads: racecheck follows
  // no order through another lane's arrival) lets the sigma warp rewrite slot s's copies.

  template <int kWG>
  CUTE_DEVICE static void consume(const Params& p, SharedStorage& smem, const PartInfo& part) {
    if constexpr (kWG == 1)
      own_pages(p, smem, part);
    else
      multiply_pages(p, smem, part);
  }

  CUTE_DEVICE static void init_design_barriers(SharedStorage& smem) {
    for (int s = 0; s < T::kStages; ++s) {
      SignalBarrier::init(&smem.scales_free[s], 128);
      SignalBarrier::init(&smem.copies_ready[s], 32);
    }
  }

  CUTE_DEVICE static int kv_head_of(const Params& p) {
    return sm90::opaque(static_cast<int>(blockIdx.x)) / p.m_tiles;
  }
  CUTE_DEVICE static int m_tile_of(const Params& p) {
    return sm90::opaque(static_cast<int>(blockIdx.x)) % p.m_tiles;
  }

  // --- both consumer warpgroups: O^T of two scale groups (Base::load_v_groups, issue_ot_groups), out ----
  // A finished piece's O^T of groups kFirstGroup, kFirstGroup + 1 into out (or its partial rows): this
  // thread's 16 packed rows of the tile, each with dims 128 g + dim0 .. + 3 of both groups
  // (Base::write_ot_rows); the output factor is the owner's sigma' of the piece's last page over 2^8.
  // Warpgroup 0 releases the row state and writes lse; the owner's reads are ordered before its next
  // write by its piece-start barrier.
  template <int kFirstGroup, class FragO>
  CUTE_DEVICE static void write_piece(const Params& p, SharedStorage& smem, int req, int piece, int quad,
                                      int dim0, const FragO& acc) {
    Base::template write_ot_rows<kOwnGroups, 16, 8, kFirstGroup == 0>(
        p, smem, req, piece, quad, dim0 + kFirstGroup * T::kLatentChunk, kv_head_of(p),
        m_tile_of(p) * kBlockM,
        [&](int slot) CUTLASS_LAMBDA_FUNC_INLINE { return smem.final_sigma[slot] / T::kPScale; },
        [&](int c, float inv, float(&v)[8]) CUTLASS_LAMBDA_FUNC_INLINE {
          CUTE_UNROLL  // v[dd]: dim 128 (kFirstGroup + dd / 4) + dim0 + dd % 4
              for (int dd = 0; dd < 8; ++dd) v[dd] =
                  acc((c & 1) + 2 * (dd & 1) + 4 * (c >> 1), dd / 2, 0) * inv;
        });
  }

  // --- warpgroup 1: Q, S, the softmax, P^T per group, O^T of groups 2-3 ---------------------------
  // S / q_scale = sum_g s_g x (Q8_g . K8_g^T) + (Q_rope / q_scale) . K_rope^T with a token's scales per
  // column of S. Five accumulators do not fit beside 256 O^T dims, so two do: A = G0, B = G1 issued,
  // then A = A x s0 / s2 + G2 and B = B x s1 / s3 + G3 (each issued once the other's product is in
  // flight), then A = A x s2 + RoPE and S = A + B x s3. P^T and O^T's units are v17's.
  CUTE_DEVICE static void own_pages(const Params& p, SharedStorage& smem, const PartInfo& part) {
    using namespace cute;
    const int wg_thread = threadIdx.x % 128;
    const int lane = threadIdx.x % 32;
    const int warp = wg_thread / 32;
    const int quad = lane % 4;
    const int r0 = warp * 16 + lane / 4;  // S's accumulator rows r0 and r0 + 8
    const int col0 = 2 * quad;
    const int dim0 = 32 * warp + 4 * (lane / 4);
    int rows[2];  // their packed rows in the tile: P^T's rows
    for (int h = 0; h < 2; ++h) rows[h] = Base::packed_row(r0 + 8 * h);

    typename T::TiledMmaQK mma_qk;
    auto thr_qk = mma_qk.get_thread_slice(wg_thread);
    typename T::TiledMmaQKRope mma_rope;
    auto thr_rope = mma_rope.get_thread_slice(wg_thread);
    typename T::TiledMmaOT mma_ot;
    auto thr_ot = mma_ot.get_thread_slice(wg_thread);
    using FragS = decltype(partition_fragment_C(mma_qk, Shape<Int<kBlockM>, Int<kBlockN>>{}));
    FragS tSrA;  // groups 0 and 2 and the RoPE product, then S
    FragS tSrB;  // groups 1 and 3
    static_assert(size(FragS{}) == 32);
    Tensor acc = partition_fragment_C(mma_ot, Shape<Int<kOwnDims>, Int<kRows>>{});  // (MMA,4,1) O^T
    Tensor tArV =
        make_tensor<Code>(partition_shape_A(mma_ot, Shape<Int<kOwnDims>, Int<kBlockN>>{}));  // (MMA,4,2)
    static_assert(size(acc) == 128 && size(tArV) == 128);

    // Group gr's product of the page in `slot` into `frag` (overwritten or accumulated), committed.
    const auto issue_group = [&](FragS& frag, int slot, int gr, bool accumulate) CUTLASS_LAMBDA_FUNC_INLINE {
      Tensor tSrQ = thr_qk.make_fragment_A(thr_qk.partition_A(make_tensor(
          make_smem_ptr(reinterpret_cast<Code*>(sm90::opaque(smem.q))), typename T::SmemLayoutLatent{})));
      Tensor tSrK = thr_qk.make_fragment_B(thr_qk.partition_B(make_tensor(
          make_smem_ptr(reinterpret_cast<Code*>(sm90::opaque(smem.stage[0]) + slot * T::kStageBytes)),
          typename T::SmemLayoutLatent{})));
      warpgroup_fence_operand(frag);
      warpgroup_arrive();
      mma_qk.accumulate_ = accumulate ? GMMA::ScaleOut::One : GMMA::ScaleOut::Zero;
      CUTE_UNROLL
      for (int k = 0; k < 4; ++k) {
        cute::gemm(mma_qk, tSrQ(_, _, 4 * gr + k), tSrK(_, _, 4 * gr + k), frag);
        mma_qk.accumulate_ = GMMA::ScaleOut::One;
      }
      warpgroup_commit_batch();
      warpgroup_fence_operand(frag);
    };
    const auto issue_rope = [&](int slot) CUTLASS_LAMBDA_FUNC_INLINE {
      std::uint8_t* k_bytes = sm90::opaque(smem.stage[0]) + slot * T::kStageBytes;
      Tensor tRrQ = thr_rope.make_fragment_A(thr_rope.partition_A(
          make_tensor(make_smem_ptr(reinterpret_cast<Element*>(sm90::opaque(smem.q) + T::kRopeOffset)),
                      typename T::SmemLayoutRope{})));
      Tensor tRrK = thr_rope.make_fragment_B(thr_rope.partition_B(
          make_tensor(make_smem_ptr(reinterpret_cast<Element*>(k_bytes + T::kRopeOffset)),
                      typename T::SmemLayoutRope{})));
      warpgroup_fence_operand(tSrA);
      warpgroup_arrive();
      mma_rope.accumulate_ = GMMA::ScaleOut::One;
      CUTE_UNROLL
      for (int k = 0; k < size<2>(tRrQ); ++k) cute::gemm(mma_rope, tRrQ(_, _, k), tRrK(_, _, k), tSrA);
      warpgroup_commit_batch();
      warpgroup_fence_operand(tSrA);
    };
    // frag's values times factor f (0-3) of their token's column, from the sigma warp's copy in slot s.
    const auto times_factor = [&](FragS& frag, int slot, int f) CUTLASS_LAMBDA_FUNC_INLINE {
      warpgroup_fence_operand(frag);
      const float* factors = smem.s_factors[slot][f];
      // Columns col0 + 8 k + {0, 1}: accumulators 4 k + {0, 1} (row r0) and 4 k + {2, 3} (row r0 + 8).
      CUTE_UNROLL
      for (int k = 0; k < 8; ++k) {
        const float2 x = *reinterpret_cast<const float2*>(factors + col0 + 8 * k);
        frag(4 * k) *= x.x;
        frag(4 * k + 1) *= x.y;
        frag(4 * k + 2) *= x.x;
        frag(4 * k + 3) *= x.y;
      }
      warpgroup_fence_operand(frag);
    };

    // S of page gg: groups 0 and 1 issued. Needs the piece's Q.
    const auto s_start = [&](int gg) CUTLASS_LAMBDA_FUNC_INLINE {
      const int slot = gg % T::kStages;
      FullBarrier::wait(&smem.stage_full[slot], (gg / T::kStages) & 1);
      issue_group(tSrA, slot, 0, false);
      issue_group(tSrB, slot, 1, false);
    };
    // The rest of S of page gg, into tSrA. `pending` (0 or 1): batches committed after groups 0 and 1 (the
    // owner's O^T of the page before, whose completion `ot_done` then signals).
    const auto s_finish = [&](int gg, auto pending, auto&& ot_done) CUTLASS_LAMBDA_FUNC_INLINE {
      constexpr int kPending = decltype(pending)::value;
      const int slot = gg % T::kStages;
      SignalBarrier::wait(&smem.copies_ready[slot], (gg / T::kStages) & 1);
      warpgroup_wait<kPending + 1>();  // group 0
      times_factor(tSrA, slot, 0);
      issue_group(tSrA, slot, 2, true);
      warpgroup_wait<kPending + 1>();  // group 1
      times_factor(tSrB, slot, 1);
      issue_group(tSrB, slot, 3, true);
      if constexpr (kPending > 0) {
        warpgroup_wait<2>();  // the O^T batch
        ot_done();
      }
      warpgroup_wait<1>();  // group 2
      times_factor(tSrA, slot, 2);
      issue_rope(slot);
      warpgroup_wait<1>();  // group 3
      times_factor(tSrB, slot, 3);
      warpgroup_wait<0>();  // the RoPE product
      warpgroup_fence_operand(tSrA);
      CUTE_UNROLL
      for (int i = 0; i < size(tSrA); ++i) tSrA(i) += tSrB(i);
      warpgroup_fence_operand(tSrA);
    };

    const auto hint = Base::request_hint(p);
    const int m_tile = m_tile_of(p);
    int g = 0;      // pages consumed so far by this CTA
    int piece = 0;  // pieces finished, for the parity of final_max / final_sum / final_sigma

    Base::for_each_piece(p, part, hint, [&](int req, int first, int end) CUTLASS_LAMBDA_FUNC_INLINE {
      const int seqlen = p.seqlens[req];
      float run_max[2] = {-INFINITY, -INFINITY};  // log2 units of the scaled logits
      float row_sum[2] = {0.f, 0.f};              // this thread's share
      float sigma = 1.f;                          // P^T's unit: the sigma warp's sigma' of the page last read
      // Every thread has read the previous piece's Q scales and row state before any rewrites them.
      if (piece > 0) NamedBarrier::sync(128, T::kWarpgroupSync + 1);
      // RoPE in bf16, divided by q_scale; two passes of 16 rows in flight at once.
      Base::template load_live_q<true, 2>(p, smem, req, kv_head_of(p), m_tile, wg_thread);
      NamedBarrier::sync(128, T::kWarpgroupSync + 1);
      clear(acc);
      float logit_factor[2];  // S / q_scale -> log2 units (kept above 0: -inf stays -inf)
      int limit[2];           // keys visible to rows r0 and r0 + 8
      for (int h = 0; h < 2; ++h) {
        logit_factor[h] = fmaxf(smem.q_scale[r0 + 8 * h] * p.scale_log2, FLT_MIN);
        const int packed = min(m_tile * kBlockM + rows[h], p.rows_per_head - 1);
        limit[h] = p.causal ? seqlen - p.s_q + packed / p.heads_per_kv + 1 : seqlen;
      }
      const int min_limit = p.causal ? seqlen - p.s_q + 1 : seqlen;

      // S of page gg is in tSrA: V of its slot into the A registers and the slot released, then the
      // softmax of both rows, P^T of every group into buffer gg % 2 and the rows' factors beside it.
      const auto softmax_and_publish = [&](int page, int gg) CUTLASS_LAMBDA_FUNC_INLINE {
        const int slot = gg % T::kStages;
        const int b = gg & 1;
        // The valid count from the request's length: read from stage_valid (the warp's release by lane 0),
        // racecheck reported the producer's next write of it as a WAR hazard.
        Base::template load_v_groups<kFirstOwnGroup, kOwnGroups>(smem, slot, seqlen - page * kBlockN, quad,
                                                                 dim0, tArV);
        // S and this warp's V loads are done with the slot: the next TMA copy may refill it
        // (docs/knowledge/anti-patterns/generic-reads-released-to-tma-without-proxy-fence.md).
        cutlass::arch::fence_view_async_shared();
        __syncwarp();
        if (lane == 0) SignalBarrier::arrive(&smem.slot_free[slot]);
        const float4 record = smem.page_sigma[slot];  // {factor, log2 sigma', sigma'}
        sigma = record.z;
        // P^T buffer b is free once both warpgroups' O^T of page gg - 2 are done with it.
        if (gg >= 2) {
          SignalBarrier::wait(&smem.vt_ready[b], ((gg >> 1) - 1) & 1);
          SignalBarrier::wait(&smem.wg1_done[b], ((gg >> 1) - 1) & 1);
        }
        const std::uint32_t pt_base = cute::cast_smem_ptr_to_uint(smem.p[b]);
        float scale[2];  // O^T's factor for rows r0 and r0 + 8 before this page's P^T
        const auto body = [&](auto masked) CUTLASS_LAMBDA_FUNC_INLINE {
          constexpr bool kMasked = decltype(masked)::value;
          const auto logit = [&](int i) CUTLASS_LAMBDA_FUNC_INLINE {
            if constexpr (kMasked)
              if (page * kBlockN + col0 + (i & 1) + 8 * (i >> 2) >= limit[(i >> 1) & 1]) return -INFINITY;
            return tSrA(i);
          };
          float page_max[2] = {-INFINITY, -INFINITY};
          CUTE_UNROLL
          for (int i = 0; i < size(tSrA); ++i)
            page_max[(i >> 1) & 1] = fmaxf(page_max[(i >> 1) & 1], logit(i));
          float bias[2];
          CUTE_UNROLL
          for (int h = 0; h < 2; ++h) {
            Base::raise_running_max(paged_sm90::quad_max(page_max[h]) * logit_factor[h], run_max[h],
                                    row_sum[h], scale[h]);
            scale[h] *= record.x;
            // A row that has seen only masked keys keeps max -inf: exp2(-inf) = 0 keeps P at 0. The
            // exponent also takes 1 / sigma' (P^T's unit), so e = P x 2^8 / sigma'.
            bias[h] = 8.f - (run_max[h] == -INFINITY ? 0.f : run_max[h]) - record.y;
          }
          CUTE_UNROLL
          for (int kb = 0; kb < 2; ++kb) CUTE_UNROLL
          for (int hi = 0; hi < 2; ++hi) {
            // Columns col0 + {0, 1} + 8 (4 kb + 2 hi + {0, 1}): accumulators j + {0, 1, 4, 5} (row r0), and
            // the same + 2 (row r0 + 8).
            const int j = 4 * (4 * kb + 2 * hi);
            float4 s[4];  // their four group scales (0 past the valid tokens)
            CUTE_UNROLL
            for (int q = 0; q < 4; ++q)
              s[q] = smem.token_scales[slot][col0 + (q & 1) + 8 * ((j >> 2) + (q >> 1))];
            CUTE_UNROLL
            for (int h = 0; h < 2; ++h) {
              float e[4];
              CUTE_UNROLL
              for (int q = 0; q < 4; ++q)
                e[q] = device::ex2_approx_ftz(
                    fmaf(logit(j + 2 * h + (q & 1) + 4 * (q >> 1)), logit_factor[h], bias[h]));
              row_sum[h] = fmaf((e[0] + e[1]) + (e[2] + e[3]), sigma, row_sum[h]);
              const std::uint32_t at = pt_base + codes::sw64_offset(rows[h], 32 * kb + 16 * hi + 4 * quad);
              const std::uint32_t words[kGroups] = {
                  codes::pack_e4m3x4(e[0] * s[0].x, e[1] * s[1].x, e[2] * s[2].x, e[3] * s[3].x),
                  codes::pack_e4m3x4(e[0] * s[0].y, e[1] * s[1].y, e[2] * s[2].y, e[3] * s[3].y),
                  codes::pack_e4m3x4(e[0] * s[0].z, e[1] * s[1].z, e[2] * s[2].z, e[3] * s[3].z),
                  codes::pack_e4m3x4(e[0] * s[0].w, e[1] * s[1].w, e[2] * s[2].w, e[3] * s[3].w)};
              CUTE_UNROLL
              for (int gr = 0; gr < kGroups; ++gr)
                asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(at + gr * T::kPTBytes), "r"(words[gr])
                             : "memory");
            }
          }
        };
        if ((page + 1) * kBlockN > min_limit)  // the page reaches some row's limit (or the request's end)
          body(cute::true_type{});
        else
          body(cute::false_type{});
        if (col0 == 0)
          for (int h = 0; h < 2; ++h) smem.scale[b][rows[h]] = scale[h];
        cutlass::arch::fence_view_async_shared();  // generic stores, then both warpgroups' wgmma reads
        SignalBarrier::arrive(&smem.p_ready[b]);
        SignalBarrier::arrive(&smem.scales_free[slot]);  // this thread's reads of the copies and record
      };
      // O^T of groups 2-3 += V^T P^T of page gg (issued, committed), once every row's factor is published.
      const auto ot_issue = [&](int gg) CUTLASS_LAMBDA_FUNC_INLINE {
        const int b = gg & 1;
        SignalBarrier::wait(&smem.p_ready[b], (gg >> 1) & 1);
        Base::rescale_ot_columns(acc, smem, b, quad);
        warpgroup_fence_operand(acc);
        warpgroup_fence_operand(tArV);
        warpgroup_arrive();
        Base::template issue_ot_groups<kFirstOwnGroup, kOwnGroups>(mma_ot, thr_ot, tArV, acc, smem, b);
        warpgroup_commit_batch();
      };
      const auto ot_done = [&](int gg) CUTLASS_LAMBDA_FUNC_INLINE {
        warpgroup_fence_operand(tArV);
        warpgroup_fence_operand(acc);
        SignalBarrier::arrive(&smem.wg1_done[gg & 1]);  // P^T buffer gg % 2, as far as the owner goes
      };

      // The piece's first page alone (its S needs this piece's Q); then S of page g + 1 enters the tensor
      // core ahead of the owner's O^T of page g, whose wait the rest of S takes. No wgmma or wait sits
      // under a branch (that serialized every wgmma of a loop, ptxas C7514).
      s_start(g);
      s_finish(g, cute::Int<0>{}, [] {});
      for (int page = first; page + 1 < end; ++page, ++g) {
        softmax_and_publish(page, g);
        s_start(g + 1);
        ot_issue(g);
        s_finish(g + 1, cute::Int<1>{}, [&]() CUTLASS_LAMBDA_FUNC_INLINE { ot_done(g); });
      }
      softmax_and_publish(end - 1, g);
      ot_issue(g);
      warpgroup_wait<0>();
      ot_done(g);
      ++g;

      float row_sum2[2];
      for (int h = 0; h < 2; ++h) row_sum2[h] = row_sum[h] * (1.f / T::kPScale);  // exact: a power of two
      // sigma beside the rows' state (publish_piece_state's arrival releases it).
      if (piece >= 2) SignalBarrier::wait(&smem.final_read[piece & 1], ((piece - 2) >> 1) & 1);
      if (wg_thread == 0) smem.final_sigma[piece & 1] = sigma;
      paged_sm90::publish_piece_state(smem, piece, r0, col0, run_max, row_sum2);
      write_piece<kFirstOwnGroup>(p, smem, req, piece, quad, dim0, acc);
      ++piece;
    });
  }
  static constexpr int kFirstOwnGroup = kGroups - kOwnGroups;  // the owner's: 2

  // --- the sigma warp (warp 9, in the producer warpgroup) ----------------------------------------
  // For each staged page, as it lands: v17's record (the piece's running sigma' and O^T's factor when it
  // grows), and copies of its valid tokens' scales and of S's factors (lane l: tokens l and l + 32) that
  // the owner reads after it has released the slot; then the slot's release from its side.
  CUTE_DEVICE static void sigma_pages(const Params& p, SharedStorage& smem, const PartInfo& part) {
    const int lane = threadIdx.x % 32;
    const std::uint32_t stage0 = cute::cast_smem_ptr_to_uint(smem.stage[0]);
    int j = 0;
    paged_sm90::for_each_piece(p, part, [&](int req, int first, int end) CUTLASS_LAMBDA_FUNC_INLINE {
      const int seqlen = p.seqlens[req];
      float sigma = 0.f, unit = 1.f;
      for (int blk = first; blk < end; ++blk, ++j) {
        const int slot = j % T::kStages;
        FullBarrier::wait(&smem.stage_full[slot], (j / T::kStages) & 1);
        // The owner has read the copies of page j - 3 (they share the slot's index).
        if (j >= T::kStages) SignalBarrier::wait(&smem.scales_free[slot], (j / T::kStages - 1) & 1);
        const int valid = seqlen - blk * kBlockN;
        const std::uint32_t scales = stage0 + slot * T::kStageBytes + T::kScaleOffset;
        // Each token's scales and S's factors copied for the owner, which reads them once the slot is free.
        const auto copy = [&](int t, float4 s) CUTLASS_LAMBDA_FUNC_INLINE {
          smem.token_scales[slot][t] = s;
          // Owned tokens' scales are finite and > 0 (checked mode refuses others).
          const float4 f =
              t < valid ? make_float4(s.x / s.z, s.y / s.w, s.z, s.w) : make_float4(0.f, 0.f, 0.f, 0.f);
          smem.s_factors[slot][0][t] = f.x;
          smem.s_factors[slot][1][t] = f.y;
          smem.s_factors[slot][2][t] = f.z;
          smem.s_factors[slot][3][t] = f.w;
        };
        const float m = Base::page_scale_max(scales, valid, lane, copy);
        const float factor = Base::advance_sigma(m, sigma, unit);  // P^T's unit sigma' moves on (v17's)
        // The warp's reads of the slot, then its release to the next TMA copy; each lane's copies (lane 0's
        // with the record) released by its own arrival.
        cutlass::arch::fence_view_async_shared();
        __syncwarp();
        if (lane == 0) {
          smem.page_sigma[slot] = make_float4(factor, __log2f(unit), unit, 0.f);
          SignalBarrier::arrive(&smem.slot_free[slot]);
        }
        SignalBarrier::arrive(&smem.copies_ready[slot]);
      }
    });
  }

  // --- warpgroup 0: O^T of groups 0-1, out -------------------------------------------------------
  CUTE_DEVICE static void multiply_pages(const Params& p, SharedStorage& smem, const PartInfo& part) {
    using namespace cute;
    const int wg_thread = threadIdx.x % 128;
    const int lane = threadIdx.x % 32;
    const int warp = wg_thread / 32;
    const int quad = lane % 4;
    const int dim0 = 32 * warp + 4 * (lane / 4);

    typename T::TiledMmaOT mma;
    auto thr = mma.get_thread_slice(wg_thread);
    Tensor acc = partition_fragment_C(mma, Shape<Int<kOwnDims>, Int<kRows>>{});  // (MMA,4,1) O^T
    Tensor tArV =
        make_tensor<Code>(partition_shape_A(mma, Shape<Int<kOwnDims>, Int<kBlockN>>{}));  // (MMA,4,2)
    static_assert(size(acc) == 128 && size(tArV) == 128);

    // Page gg's V (slot gg % 3) into the A registers; frees the slot.
    const auto load_page_v = [&](int gg) CUTLASS_LAMBDA_FUNC_INLINE {
      const int slot = gg % T::kStages;
      SignalBarrier::wait(&smem.stage_full[slot], (gg / T::kStages) & 1);
      Base::template load_v_groups<0, kOwnGroups>(smem, slot, smem.stage_valid[slot], quad, dim0, tArV);
      cutlass::arch::fence_view_async_shared();
      SignalBarrier::arrive(&smem.slot_free[slot]);
    };
    const auto issue = [&](int b) CUTLASS_LAMBDA_FUNC_INLINE {
      Base::template issue_ot_groups<0, kOwnGroups>(mma, thr, tArV, acc, smem, b);
    };

    const auto hint = Base::request_hint(p);
    int g = 0;
    int piece = 0;
    Base::for_each_piece(p, part, hint, [&](int req, int first, int end) CUTLASS_LAMBDA_FUNC_INLINE {
      clear(acc);
      Base::multiply_piece_pages(smem, first, end, g, quad, acc, tArV, load_page_v, issue);
      write_piece<0>(p, smem, req, piece, quad, dim0, acc);
      ++piece;
    });
  }
};

template <class T>
__global__ void __launch_bounds__(T::kThreads, 1)
    paged_sm90_fp8_v18_kernel(const __grid_constant__ Params params,
                              const __grid_constant__ CUtensorMap kv_map,
                              const __grid_constant__ CUtensorMap rope_map,
                              const __grid_constant__ CUtensorMap scale_map) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  Kernel<T>::run(params, &kv_map, &rope_map, &scale_map);
#endif
}

}  // namespace cutelab::mla::paged_sm90_fp8_v18
