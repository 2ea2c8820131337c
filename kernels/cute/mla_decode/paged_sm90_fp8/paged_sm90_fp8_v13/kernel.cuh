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
  static constexpr float kMaxSlack = 0.8f;  // v3's: P x 2^8 stays under e4m3's largest value
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
    if (hint.req >= 0) prefetch_q(p, hint.req, wg_thread);
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
      load_q_codes(p, smem, req, wg_thread);
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
          const float m_page = paged_sm90::quad_max(page_max) * logit_factor;
          if (m_page > run_max + kMaxSlack) {  // false while both are -inf
            scale = device::ex2_approx_ftz(run_max - m_page);
            run_max = m_page;
            row_sum *= scale;
          } else {
            scale = 1.f;
          }
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

      qk_issue(g % T::kStages, (g / T::kStages) & 1);  // the piece's first page: needs its Q codes
      warpgroup_wait<0>();
      softmax_and_pack(first, g);
      for (int page = first; page + 1 < end; ++page, ++g) {
        qk_issue((g + 1) % T::kStages, ((g + 1) / T::kStages) & 1);  // S of page g + 1 under P^T of page g
        publish();
        warpgroup_wait<0>();
        softmax_and_pack(page + 1, g + 1);
      }
      publish();
      ++g;
      row_sum *= 1.f / T::kPScale;  // exact: a power of two
      float run_max2[2] = {run_max, -INFINITY}, row_sum2[2] = {row_sum, 0.f};
      paged_sm90::publish_piece_state(smem, piece, r0, col0, run_max2, row_sum2);
      ++piece;
    });
  }

  // Q's live rows of request `req` into L2 (9 lines of 128 bytes a row, 8 threads a row): issued as
  // the S owner starts, for the request the part most likely starts with (RequestHint), while the
  // part's entry is still on its way.
  CUTE_DEVICE static void prefetch_q(const Params& p, int req, int thread) {
    const int rows = min(p.rows_per_head, kRows);
    for (int local = thread / 8; local < rows; local += 16) {
      const char* row = reinterpret_cast<const char*>(paged_sm90::q_row<Element>(p, req, kv_head(), local));
      asm volatile("prefetch.global.L2 [%0];" ::"l"(row + 128 * (thread % 8)));
      if (thread % 8 == 0) asm volatile("prefetch.global.L2 [%0];" ::"l"(row + 128 * 8));
    }
  }

  // Q of a piece as e4m3 codes with one scale per row (amax / 448), as Base::load_q_codes writes
  // them, but with both live passes' loads in flight at once (at most kRows = 32 live rows: rows
  // thread / 8 and 16 + thread / 8); Base's loader waits for each pass's loads in turn, a second
  // memory round trip at h32. The padded rows' codes and scales are 0. Its own copy: Base's loop
  // rewritten around a shared row step changed v10 / v12's SASS, and Base given a four-pass form
  // made v13 2.5% slower at b32 (bench/results/2026-11-24-h200-twenty-fourth-session/, call i).
  CUTE_DEVICE static void load_q_codes(const Params& p, SharedStorage& smem, int req, int thread) {
    constexpr int kUnits = T::kHeadDimQK / 64;  // 16-byte units of q per thread and row
    constexpr int kLivePasses = kRows / 16;
    const int j = thread % 8;
    const std::uint32_t q_base = cute::cast_smem_ptr_to_uint(smem.q);
    uint4 v[kLivePasses][kUnits];
    CUTE_UNROLL
    for (int pass = 0; pass < kLivePasses; ++pass) {
      const int local = thread / 8 + 16 * pass;
      const bool live = local < p.rows_per_head;
      const Element* src = paged_sm90::q_row<Element>(p, req, kv_head(), live ? local : 0);
      CUTE_UNROLL
      for (int m = 0; m < kUnits; ++m)
        v[pass][m] = live ? *reinterpret_cast<const uint4*>(src + 8 * (j + 8 * m)) : make_uint4(0, 0, 0, 0);
    }
    CUTE_UNROLL
    for (int pass = 0; pass < kBlockM / 16; ++pass) {
      const int local = thread / 8 + 16 * pass;
      const int row = paged_sm90_fp8::accumulator_row<kBlockM, true>(local);
      if (pass >= kLivePasses) {  // padding: codes 0, scale 0
        CUTE_UNROLL
        for (int m = 0; m < kUnits; ++m)
          codes::st_shared_64(q_base + Base::code_offset(row, 8 * (j + 8 * m)), 0u, 0u);
        if (j == 0) smem.q_scale[row] = 0.f;
        continue;
      }
      float amax = 0.f;
      CUTE_UNROLL
      for (int m = 0; m < kUnits; ++m) {
        const std::uint32_t w[4] = {v[pass][m].x, v[pass][m].y, v[pass][m].z, v[pass][m].w};
        CUTE_UNROLL
        for (int i = 0; i < 4; ++i)
          amax = fmaxf(amax,
                       fmaxf(fabsf(__uint_as_float(w[i] << 16)), fabsf(__uint_as_float(w[i] & 0xFFFF0000u))));
      }
      amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, 1));
      amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, 2));
      amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, 4));
      const float inv = amax > 0.f ? 448.f / amax : 0.f;
      CUTE_UNROLL
      for (int m = 0; m < kUnits; ++m) {
        const std::uint32_t w[4] = {v[pass][m].x, v[pass][m].y, v[pass][m].z, v[pass][m].w};
        std::uint32_t packed_codes[2];
        CUTE_UNROLL
        for (int h = 0; h < 2; ++h)
          packed_codes[h] = codes::pack_e4m3x4(
              __uint_as_float(w[2 * h] << 16) * inv, __uint_as_float(w[2 * h] & 0xFFFF0000u) * inv,
              __uint_as_float(w[2 * h + 1] << 16) * inv, __uint_as_float(w[2 * h + 1] & 0xFFFF0000u) * inv);
        codes::st_shared_64(q_base + Base::code_offset(row, 8 * (j + 8 * m)), packed_codes[0],
                            packed_codes[1]);
      }
      if (j == 0) smem.q_scale[row] = amax / 448.f;
    }
    cutlass::arch::fence_view_async_shared();  // generic stores, then wgmma reads
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

    const auto hint = Base::request_hint(p);
    int g = 0;
    int piece = 0;
    Base::for_each_piece(p, part, hint, [&](int req, int first, int end) CUTLASS_LAMBDA_FUNC_INLINE {
      clear(acc);
      for (int page = first; page < end; ++page, ++g) {
        load_v(g);
        const int b = g & 1;
        SignalBarrier::wait(&smem.p_ready[b], (g >> 1) & 1);
        // Accumulator i of tile mt: dim d0 + 2 mt + ((i >> 1) & 1), packed row 2 quad + (i & 1) + 8 (i >> 2).
        float sc[8];
        CUTE_UNROLL
        for (int c = 0; c < 8; ++c) sc[c] = smem.scale[b][2 * quad + (c & 1) + 8 * (c >> 1)];
        bool rescale = false;
        CUTE_UNROLL
        for (int c = 0; c < 8; ++c) rescale |= sc[c] != 1.f;
        if (__any_sync(0xffffffffu, rescale)) {
          CUTE_UNROLL
          for (int mt = 0; mt < size<1>(acc); ++mt) CUTE_UNROLL
          for (int i = 0; i < size<0>(acc); ++i) acc(i, mt, 0) *= sc[(i & 1) + 2 * (i >> 2)];
        }
        Tensor tBsP = thr.partition_B(make_tensor(
            make_smem_ptr(reinterpret_cast<Code*>(sm90::opaque(smem.p[b]))), typename T::SmemLayoutPT{}));
        Tensor tBrP = thr.make_fragment_B(tBsP);  // (MMA,1,2)
        warpgroup_fence_operand(acc);
        warpgroup_fence_operand(tArV);
        warpgroup_arrive();
        mma.accumulate_ = GMMA::ScaleOut::One;
        CUTE_UNROLL
        for (int ks = 0; ks < size<2>(tArV); ++ks) cute::gemm(mma, tArV(_, _, ks), tBrP(_, _, ks), acc);
        warpgroup_commit_batch();
        warpgroup_wait<0>();
        warpgroup_fence_operand(tArV);
        warpgroup_fence_operand(acc);
        SignalBarrier::arrive(&smem.vt_ready[b]);  // P^T buffer b and its scales are free
      }
      write_piece(p, smem, req, piece, quad, d0, acc, kv_scale / T::kPScale);
      ++piece;
    });
  }

  // A finished piece's O^T into out (or its partial rows): this thread's rows 2 quad + v0 + 8 v2,
  // each with its dims d0 .. d0 + 15 contiguous; lse by warp 0's lanes 0-3. The row state is the
  // owner's (publish_piece_state, by accumulator row).
  template <class FragO>
  CUTE_DEVICE static void write_piece(const Params& p, SharedStorage& smem, int req, int piece, int quad,
                                      int d0, const FragO& acc, float out_scale) {
    const int slot_state = piece & 1;
    SignalBarrier::wait(&smem.final_ready[slot_state], (piece >> 1) & 1);
    float row_max[8], row_sum[8];
    CUTE_UNROLL
    for (int c = 0; c < 8; ++c) {
      const int acc_row = paged_sm90_fp8::accumulator_row<kBlockM, true>(2 * quad + (c & 1) + 8 * (c >> 1));
      row_max[c] = smem.final_max[slot_state][acc_row];
      row_sum[c] = smem.final_sum[slot_state][acc_row];
    }
    SignalBarrier::arrive(&smem.final_read[slot_state]);

    const paged_sm90::PieceRequest request{p.schedule.requests[req], p.seqlens[req]};
    const bool split = request.split.num_splits > 1;
    const int slot = request.split.split_offset + static_cast<int>(blockIdx.y) - request.split.first_part;
    const bool stale = paged_sm90::stale_piece(p, request);
    const bool writes_lse = threadIdx.x % 128 < 4;
    CUTE_UNROLL
    for (int c = 0; c < 8; ++c) {
      const int packed = 2 * quad + (c & 1) + 8 * (c >> 1);
      if (packed >= p.rows_per_head) continue;
      const auto [inv, lse] = paged_sm90::finish_row(row_max[c], row_sum[c], stale, split, out_scale);
      float v[16];  // dims d0 .. d0 + 15
      CUTE_UNROLL
      for (int dd = 0; dd < 16; ++dd) v[dd] = acc((c & 1) + 2 * (dd & 1) + 4 * (c >> 1), dd / 2, 0) * inv;
      if (!split) {
        int s = 0, head = 0;
        paged_sm90::row_coords(p, packed, kv_head(), s, head);
        Element* dst = static_cast<Element*>(p.out) +
                       ((static_cast<int64_t>(req) * p.s_q + s) * p.h_q + head) * T::kHeadDimV + d0;
        std::uint32_t w[8];
        CUTE_UNROLL
        for (int k = 0; k < 8; ++k) {
          const cute::array<Element, 2> pair{static_cast<Element>(v[2 * k]),
                                             static_cast<Element>(v[2 * k + 1])};
          w[k] = reinterpret_cast<const std::uint32_t&>(pair);
        }
        reinterpret_cast<uint4*>(dst)[0] = make_uint4(w[0], w[1], w[2], w[3]);
        reinterpret_cast<uint4*>(dst)[1] = make_uint4(w[4], w[5], w[6], w[7]);
        if (writes_lse) p.lse[(static_cast<int64_t>(req) * p.h_q + head) * p.s_q + s] = lse;
      } else {
        const int64_t slot_row =
            (static_cast<int64_t>(slot) * p.h_kv + kv_head()) * p.partials.rows_per_head + packed;
        float4* dst =
            reinterpret_cast<float4*>(static_cast<float*>(p.partials.out) + slot_row * T::kHeadDimV + d0);
        CUTE_UNROLL
        for (int k = 0; k < 4; ++k) dst[k] = make_float4(v[4 * k], v[4 * k + 1], v[4 * k + 2], v[4 * k + 3]);
        if (writes_lse) p.partials.lse[slot_row] = lse;
      }
    }
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
