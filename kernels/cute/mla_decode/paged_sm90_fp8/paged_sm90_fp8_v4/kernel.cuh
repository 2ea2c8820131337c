#pragma once
// paged_sm90_fp8 v4 device code: v3's page loop over an fp8_token cache, each page requantised in
// place to one reference scale by the third warpgroup (config.hpp has the arithmetic, README.md
// the reasoning and the prediction). The issue of P V and the V^T transposer are
// ../common/tensor_core_kernel.cuh's (shared with v2 and v3).

#include <cfloat>

#include <cuda.h>
#include <cuda_fp16.h>

#include <cutlass/arch/barrier.h>
#include <cutlass/arch/reg_reconfig.h>
#include <cute/arch/copy_sm90_tma.hpp>
#include <cute/tensor.hpp>
#include <cutlass/detail/helper_macros.hpp>

#include "cute/mla_decode/paged_sm90/common/pieces.cuh"
#include "cute/mla_decode/paged_sm90_fp8/common/codes.cuh"
#include "cute/mla_decode/paged_sm90_fp8/common/tensor_core_kernel.cuh"
#include "cute/mla_decode/paged_sm90_fp8/paged_sm90_fp8_v4/config.hpp"
#include "cutelab/device/fast_math.cuh"
#include "cutelab/device/sm90/opaque.cuh"
#include "cutelab/device/sm90/pdl.cuh"

namespace cutelab::mla::paged_sm90_fp8_v4 {

using paged_sm90::Params;
using FullBarrier = cutlass::arch::ClusterTransactionBarrier;  // TMA bytes of a staged page landed
using SignalBarrier = cutlass::arch::ClusterBarrier;           // mbarrier: release on arrive, acquire on wait
using NamedBarrier = cutlass::arch::NamedBarrier;
namespace codes = paged_sm90_fp8;

// mbarrier.try_wait with a bound on how long the thread may be suspended (ns): the issuing
// thread goes back to its loads between tries.
CUTE_DEVICE bool try_wait_for(const std::uint64_t* bar, int phase, std::uint32_t suspend_ns) {
  std::uint32_t done;
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2, %3;\n"
      "selp.u32 %0, 1, 0, p;\n"
      "}\n"
      : "=r"(done)
      : "r"(cute::cast_smem_ptr_to_uint(bar)), "r"(phase), "r"(suspend_ns)
      : "memory");
  return done != 0;
}

template <class T>
struct Kernel : paged_sm90_fp8::TensorCoreKernel<T, Kernel<T>> {
  using Base = paged_sm90_fp8::TensorCoreKernel<T, Kernel<T>>;
  using Base::kBlockM;
  using Base::kBlockN;
  using typename Base::Code;
  using typename Base::Element;
  using typename Base::SharedStorage;
  static constexpr std::uint32_t kRequantSync = T::kWarpgroupSync + 2;
  // The smallest reference M and q scale (2^-32): the RoPE product multiplies 1 / M by
  // 1 / q_scale, which must stay finite in bf16 operands and the fp32 accumulator. Real scales
  // (amax / 448 of O(1) values) are far above; a smaller one only shrinks its codes.
  static constexpr float kMinScale = 0x1p-32f;

  CUTE_DEVICE static void run(const Params& p, const CUtensorMap* kv_map, const CUtensorMap* rope_map) {
    extern __shared__ __align__(1024) char smem_raw[];
    auto& smem = *reinterpret_cast<SharedStorage*>(smem_raw);
    if (threadIdx.x == 0) {
      cute::prefetch_tma_descriptor(kv_map);
      cute::prefetch_tma_descriptor(rope_map);
      Base::init_barriers(smem);
      for (int s = 0; s < T::kStages; ++s) SignalBarrier::init(&smem.k_ready[s], 128);
      cutlass::arch::fence_barrier_init();
    }
    // Everything above overlaps the previous kernel; the schedule and the inputs are read only after it.
    sm90::wait_for_prior_grid();
    sm90::allow_dependent_launch();  // the combine's blocks wait on the device for this grid
    const PartInfo part = p.schedule.parts[blockIdx.y];
    __syncthreads();
    if (threadIdx.x >= 256) {
      cutlass::arch::warpgroup_reg_dealloc<T::kProducerRegisters>();
      requantise(p, kv_map, rope_map, smem, part);
      return;
    }
    if (threadIdx.x < 128) {
      cutlass::arch::warpgroup_reg_alloc<T::kTransposerRegisters>();
      consume<0>(p, smem, part);
    } else {
      cutlass::arch::warpgroup_reg_alloc<T::kOwnerRegisters>();
      consume<1>(p, smem, part);
    }
  }

  // The third warpgroup. Thread 0 issues the loads: page j into slot j % 3 once S and the
  // transpose are done with page j - 3, checked without blocking while it also requantises.
  // All 128 threads then requantise each page as it lands, in place: the piece's reference M
  // (the largest group scale of its valid tokens so far) moves to the page's largest scale if
  // that is larger; thread (token, half) rewrites its token's groups 2 half and 2 half + 1 as
  // e4m3(code x s / M), and 4 of the page's 512 16-byte RoPE units divided by M. Tokens past
  // the sequence's end get ratio 0 (NaN codes stay NaN) and their scales are never read: S masks
  // them by a select and the transposer zeroes them in V^T.
  CUTE_DEVICE static void requantise(const Params& p, const CUtensorMap* kv_map, const CUtensorMap* rope_map,
                                     SharedStorage& smem, const PartInfo& part) {
    const int t = threadIdx.x - 256;
    const int lane = t % 32, warp = t / 32;
    const int token = t / 2, half = t % 2;
    const bool issuer = t == 0;
    const int kv_head = static_cast<int>(blockIdx.x) / p.m_tiles;

    // The issuer's walk over the part's pages (for_each_piece's order). What the next load needs
    // (its page id and its request's length) is read from global memory one load ahead, the end
    // of its piece once per piece: read at the moment of issue, each was a dependent global read
    // on the thread every other requantising thread waits for at k_ready. The piece end and the
    // count of issued loads live in shared memory (only the issuer touches them): at this
    // warpgroup's 56 registers the requantiser spilled with them in registers.
    const int last_req = min(part.end_req, p.b - 1);
    paged_sm90::PageCursor next{part.begin_req, paged_sm90::piece_first(part, part.begin_req)};
    const auto piece_end_of = [&](int req) CUTLASS_LAMBDA_FUNC_INLINE {
      return req <= last_req ? paged_sm90::piece_end(p, part, req) : 0;
    };
    const auto settle = [&]() CUTLASS_LAMBDA_FUNC_INLINE {
      while (next.req <= last_req && next.blk >= smem.issue.end) {
        ++next.req;
        next.blk = 0;  // piece_first of every request after the part's first
        smem.issue.end = piece_end_of(next.req);
      }
    };
    int next_page = 0, next_seqlen = 0;
    const auto read_ahead = [&]() CUTLASS_LAMBDA_FUNC_INLINE {
      if (next.req <= last_req) {
        next_page = p.block_table[static_cast<int64_t>(next.req) * p.max_blocks + next.blk];
        next_seqlen = p.seqlens[next.req];
      }
    };
    const auto pump = [&]() CUTLASS_LAMBDA_FUNC_INLINE {
      while (next.req <= last_req) {
        const int issued = smem.issue.issued;
        if (issued >= T::kStages) {
          const int prev = issued - T::kStages;
          if (!SignalBarrier::test_wait(&smem.slot_free[prev % T::kStages], (prev / T::kStages) & 1, 1))
            return;
        }
        const int slot = issued % T::kStages;
        smem.stage_valid[slot] = min(kBlockN, next_seqlen - next.blk * kBlockN);
        Base::load_stage(p, kv_map, rope_map, nullptr, smem, slot, next_page, kv_head);
        ++next.blk;
        settle();
        read_ahead();
        smem.issue.issued = issued + 1;
      }
    };
    if (issuer) {
      smem.issue.end = piece_end_of(next.req);
      smem.issue.issued = 0;
      settle();
      read_ahead();
      pump();
    }

    const std::uint32_t stage0 = cute::cast_smem_ptr_to_uint(smem.stage[0]);
    const std::uint8_t* kv_bytes = static_cast<const std::uint8_t*>(p.kv_cache);
    int j = 0;  // pages requantised by this CTA
    float ref = 0.f;
    paged_sm90::for_each_piece(p, part, [&](int req, int first, int end) CUTLASS_LAMBDA_FUNC_INLINE {
      const int seqlen = p.seqlens[req];
      const int* pages = p.block_table + static_cast<int64_t>(req) * p.max_blocks;
      // This token's scales of groups 2 half, 2 half + 1 in page `blk` of the piece (0 past the
      // sequence's end, where they are never read).
      const auto scales_of = [&](int blk, int page) CUTLASS_LAMBDA_FUNC_INLINE {
        float2 v = make_float2(0.f, 0.f);
        if (blk < end && token < seqlen - blk * kBlockN) {
          const std::int64_t entry = (static_cast<std::int64_t>(page) * kBlockN + token) * p.h_kv + kv_head;
          v = *reinterpret_cast<const float2*>(kv_bytes + entry * kFp8TokenBytes + kFp8ScaleOffset +
                                               8 * half);
        }
        return v;
      };
      // Within a piece the page id of blk + 1 is read before page blk's wait for its bytes and
      // its scales right after it, for the next iteration; the piece's first page pays both.
      float2 s = scales_of(first, pages[first]);
      for (int blk = first; blk < end; ++blk, ++j) {
        const int slot = j % T::kStages, phase = (j / T::kStages) & 1;
        const int page_next = blk + 1 < end ? pages[blk + 1] : 0;
        // The page's largest scale: positive floats order as their bits do.
        const unsigned warp_max = __reduce_max_sync(0xffffffffu, __float_as_uint(fmaxf(s.x, s.y)));
        if (lane == 0) smem.ref_part[j & 1][warp] = __uint_as_float(warp_max);
        // Warp 0 polls together (only its lane 0 can issue the load it may be waiting for): its
        // other lanes asleep in a plain wait would leave lane 0's divergent path to the scheduler.
        if (warp == 0) {
          while (!try_wait_for(&smem.stage_full[slot], phase, 200))
            if (issuer) pump();
        } else {
          FullBarrier::wait(&smem.stage_full[slot], phase);
        }
        // ref_part[j & 1] written by every warp; a warp writes it again (page j + 2) only after
        // passing page j + 1's barrier, i.e. after every warp read it here.
        NamedBarrier::sync(128, kRequantSync);
        const float2 s_next = scales_of(blk + 1, page_next);
        float page_max = 0.f;
        CUTE_UNROLL
        for (int w = 0; w < 4; ++w) page_max = fmaxf(page_max, smem.ref_part[j & 1][w]);
        ref = fmaxf(blk == first ? page_max : fmaxf(ref, page_max), kMinScale);
        const float inv_ref = 1.f / ref;
        std::uint32_t r2[2];  // f16x2 {s / M, s / M} of the two groups
        r2[0] = __half_as_ushort(__float2half_rn(s.x * inv_ref)) * 0x10001u;
        r2[1] = __half_as_ushort(__float2half_rn(s.y * inv_ref)) * 0x10001u;

        // Unit k of group 2 half + g at (row + g x chunk) ^ (k << 4) (T::requant_unit; the slot's
        // base leaves bits 4-6 alone): one XOR with an immediate each. Opaque, or the compiler
        // keeps the 8 unit offsets in registers (spilled at this warpgroup's budget).
        const std::uint32_t row = stage0 + slot * T::kStageBytes +
                                  sm90::opaque(static_cast<int>(T::requant_unit(token, half, 0, 0)));
        CUTE_UNROLL
        for (int g = 0; g < 2; ++g) {
          CUTE_UNROLL
          for (int k0 = 0; k0 < 8; k0 += 4) {  // 4 units in flight
            uint4 v[4];
            CUTE_UNROLL
            for (int k = 0; k < 4; ++k)
              v[k] = codes::ld_shared_128((row + g * T::kLatentChunkBytes) ^ ((k0 + k) << 4));
            CUTE_UNROLL
            for (int k = 0; k < 4; ++k) {
              v[k].x = codes::scale_e4m3x4(v[k].x, r2[g]);
              v[k].y = codes::scale_e4m3x4(v[k].y, r2[g]);
              v[k].z = codes::scale_e4m3x4(v[k].z, r2[g]);
              v[k].w = codes::scale_e4m3x4(v[k].w, r2[g]);
              codes::st_shared_128((row + g * T::kLatentChunkBytes) ^ ((k0 + k) << 4), v[k]);
            }
          }
          if (issuer) pump();  // a slot freed meanwhile loads now, not after the whole page
        }
        const std::uint32_t rope = stage0 + slot * T::kStageBytes + T::kRopeOffset + t * 16;
        uint4 v[4];
        CUTE_UNROLL
        for (int m = 0; m < 4; ++m) v[m] = codes::ld_shared_128(rope + m * 128 * 16);
        CUTE_UNROLL
        for (int m = 0; m < 4; ++m) {
          v[m].x = codes::scale_bf16x2(v[m].x, inv_ref);
          v[m].y = codes::scale_bf16x2(v[m].y, inv_ref);
          v[m].z = codes::scale_bf16x2(v[m].z, inv_ref);
          v[m].w = codes::scale_bf16x2(v[m].w, inv_ref);
          codes::st_shared_128(rope + m * 128 * 16, v[m]);
        }
        if (t == 0) smem.page_ref[slot] = ref;
        cutlass::arch::fence_view_async_shared();  // generic stores, then wgmma reads
        SignalBarrier::arrive(&smem.k_ready[slot]);
        if (issuer) pump();
        s = s_next;
      }
    });
  }

  // Q of a piece for warpgroup 1: the 512 latent columns as e4m3 codes with one scale per row
  // (latent amax / 448; 1 for a zero or padded row, so that the RoPE part below stays finite),
  // 8 threads per row, 16 rows a pass; then this thread's RoPE operand (rows r0, r0 + 8) divided
  // by its rows' scales, in registers (the accumulator's order, as paged_sm90::load_q_tile).
  template <class FragRope>
  CUTE_DEVICE static void load_q(const Params& p, SharedStorage& smem, int req, int kv_head, int m_tile,
                                 int thread, int r0, int col0, FragRope& tSrQRope) {
    Base::template quantise_q_rows<T::kHeadDimV>(
        p, smem, req, kv_head, m_tile, thread, [](float amax) CUTLASS_LAMBDA_FUNC_INLINE {
          const float q_scale = amax > 0.f ? fmaxf(amax / kE4m3Max, kMinScale) : 1.f;
          return make_float2(amax > 0.f ? 1.f / q_scale : 0.f, q_scale);
        });
    cutlass::arch::fence_view_async_shared();  // generic stores, then wgmma reads
    NamedBarrier::sync(128, T::kWarpgroupSync + 1);
    const int packed0 = m_tile * kBlockM + r0;
    const bool live0 = packed0 < p.rows_per_head, live8 = packed0 + 8 < p.rows_per_head;
    const Element* rope0 = paged_sm90::q_row<Element>(p, req, kv_head, live0 ? packed0 : 0) + T::kHeadDimV;
    const Element* rope8 =
        paged_sm90::q_row<Element>(p, req, kv_head, live8 ? packed0 + 8 : 0) + T::kHeadDimV;
    const float inv0 = 1.f / smem.q_scale[r0], inv8 = 1.f / smem.q_scale[r0 + 8];
    CUTE_UNROLL
    for (int i = 0; i < cute::size(tSrQRope); i += 2) {  // column pairs: one 4-byte load
      const int c = col0 + 8 * (i >> 2);
      const bool upper = (i >> 1) & 1;
      const std::uint32_t pair = *reinterpret_cast<const std::uint32_t*>((upper ? rope8 : rope0) + c);
      const std::uint32_t scaled = codes::scale_bf16x2(pair, upper ? inv8 : inv0);
      const bool live = upper ? live8 : live0;
      tSrQRope(i) = live ? Element::bitcast(static_cast<std::uint16_t>(scaled & 0xFFFFu)) : Element(0);
      tSrQRope(i + 1) = live ? Element::bitcast(static_cast<std::uint16_t>(scaled >> 16)) : Element(0);
    }
  }

  // S of the page staged in `slot` once it is requantised: Q's codes against the page's, then
  // Q's scaled RoPE (registers) against the page's; issued and committed, not waited. Returns
  // the reference M the page was requantised to.
  template <class MmaQK, class ThrQK, class MmaRope, class ThrRope, class FragS, class FragRope>
  CUTE_DEVICE static float issue_s(MmaQK& mma_qk, const ThrQK& thr_qk, MmaRope& mma_rope,
                                   const ThrRope& thr_rope, FragS& acc, FragRope& tSrQRope,
                                   SharedStorage& smem, int slot, int phase) {
    using namespace cute;
    Code* q_codes = reinterpret_cast<Code*>(sm90::opaque(smem.q));
    std::uint8_t* stage = sm90::opaque(smem.stage[0]) + slot * T::kStageBytes;
    Tensor tSrQ = thr_qk.make_fragment_A(thr_qk.partition_A(
        make_tensor(make_smem_ptr(q_codes), typename T::SmemLayoutLatent{})));  // (MMA,1,16)
    Tensor tSrK = thr_qk.make_fragment_B(thr_qk.partition_B(make_tensor(
        make_smem_ptr(reinterpret_cast<Code*>(stage)), typename T::SmemLayoutLatent{})));  // (MMA,1,16)
    Tensor tSrKRope = thr_rope.make_fragment_B(
        thr_rope.partition_B(make_tensor(make_smem_ptr(reinterpret_cast<Element*>(stage + T::kRopeOffset)),
                                         typename T::SmemLayoutRope{})));  // (MMA,1,4)
    SignalBarrier::wait(&smem.k_ready[slot], phase);
    const float ref = smem.page_ref[slot];
    warpgroup_fence_operand(acc);
    warpgroup_arrive();
    mma_qk.accumulate_ = GMMA::ScaleOut::Zero;
    CUTE_UNROLL
    for (int k = 0; k < size<2>(tSrQ); ++k) {
      cute::gemm(mma_qk, tSrQ(_, _, k), tSrK(_, _, k), acc);
      mma_qk.accumulate_ = GMMA::ScaleOut::One;
    }
    mma_rope.accumulate_ = GMMA::ScaleOut::One;
    CUTE_UNROLL
    for (int k = 0; k < size<2>(tSrQRope); ++k)
      cute::gemm(mma_rope, tSrQRope(_, _, k), tSrKRope(_, _, k), acc);
    warpgroup_commit_batch();
    warpgroup_fence_operand(acc);
    return ref;
  }

  // Warpgroup 1 (kWG = 1): Q, S, softmax, P, O[:, 256:512]. Warpgroup 0: V^T, O[:, 0:256].
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

    typename T::TiledMmaQK mma_qk;
    typename T::TiledMmaQKRope mma_rope;
    typename T::TiledMmaPVRegisters mma_pv_regs;
    typename T::TiledMmaPVShared mma_pv_smem;
    auto thr_qk = mma_qk.get_thread_slice(wg_thread);
    auto thr_rope = mma_rope.get_thread_slice(wg_thread);
    auto thr_pv_regs = mma_pv_regs.get_thread_slice(wg_thread);
    auto thr_pv_smem = mma_pv_smem.get_thread_slice(wg_thread);
    const auto page_shape = Shape<Int<kBlockM>, Int<kBlockN>>{};

    Tensor tSrS = partition_fragment_C(mma_qk, page_shape);                           // (MMA,1,1) S
    Tensor tSrQRope = make_tensor<Element>(partition_shape_A(mma_rope, page_shape));  // (MMA,1,4)
    Tensor tOrP = make_tensor<Code>(partition_shape_A(mma_pv_regs, page_shape));      // (MMA,1,2) P codes
    Tensor tOrO =
        partition_fragment_C(mma_pv_regs, Shape<Int<kBlockM>, Int<T::kVColsPerWarpgroup>>{});  // (MMA,1,1)
    static_assert(size(tOrP) == 32 && size(tSrS) == 32 && size(tSrQRope) == 32);

    int total_pages = 0;  // of the part (warpgroup 0): page g + 1 exists while g + 1 < total_pages
    if constexpr (!kOwner)
      paged_sm90::for_each_piece(
          p, part, [&](int, int first, int end) CUTLASS_LAMBDA_FUNC_INLINE { total_pages += end - first; });

    const paged_sm90_fp8::VtTransposer<T> transposer(smem, warp, lane);  // used by warpgroup 0
    const auto transpose_next = [&](int j) CUTLASS_LAMBDA_FUNC_INLINE {
      transposer.next_when(smem, j, smem.k_ready);
    };
    if constexpr (!kOwner)
      if (total_pages > 0) transpose_next(0);
    int g = 0;      // pages consumed so far by this CTA
    int piece = 0;  // pieces finished, for the parity of final_max / final_sum

    const auto qk_issue = [&](int slot, int phase) CUTLASS_LAMBDA_FUNC_INLINE {
      return issue_s(mma_qk, thr_qk, mma_rope, thr_rope, tSrS, tSrQRope, smem, slot, phase);
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
    // The packed P into the A operand's registers and into P tile `buffer` for warpgroup 0 (v3's).
    const auto publish_p = [&](int buffer, const std::uint32_t(&words)[8]) CUTLASS_LAMBDA_FUNC_INLINE {
      Base::publish_p(tOrP, smem, buffer, r0, col0, words);
    };

    paged_sm90::for_each_piece(p, part, [&](int req, int first, int end) CUTLASS_LAMBDA_FUNC_INLINE {
      const int seqlen = p.seqlens[req];
      float run_max[2] = {-INFINITY, -INFINITY};  // log2 units of the scaled logits (warpgroup 1)
      float row_sum[2] = {0.f, 0.f};              // this thread's share (warpgroup 1)
      float ref = 1.f;                            // M of the last page softmaxed (1) / multiplied (0)
      clear(tOrO);

      if constexpr (kOwner) {
        // Every thread has read the previous piece's q scales (and waited for its wgmma on the
        // Q codes and its RoPE registers) before any thread overwrites them.
        if (piece > 0) NamedBarrier::sync(128, T::kWarpgroupSync + kWG);
        load_q(p, smem, req, kv_head(), m_tile(), wg_thread, r0, col0, tSrQRope);
        // A row's logit factor without the page's M: its q scale x log2(e) / sqrt(d).
        float q_factor[2];
        for (int h = 0; h < 2; ++h) q_factor[h] = smem.q_scale[r0 + 8 * h] * p.scale_log2;

        int limit[2];  // keys visible to rows r0 and r0 + 8
        for (int h = 0; h < 2; ++h) {
          const int packed = min(m_tile() * kBlockM + sm90::opaque(r0) + 8 * h, p.rows_per_head - 1);
          limit[h] = p.causal ? seqlen - p.s_q + packed / p.heads_per_kv + 1 : seqlen;
        }
        const int min_limit = p.causal ? seqlen - p.s_q + 1 : seqlen;

        float scale[2];            // of the page whose P is packed: O's factor before its P V
        std::uint32_t p_codes[8];  // that page's P, packed
        // v3 amended's softmax with the page's reference M in the logit factor (> 0, so a masked
        // -inf stays -inf); O's factor also takes M_previous / M when M moved (1 at a piece's
        // first page, where O is clear).
        const auto softmax_and_pack = [&](int page, int gg, float page_ref) CUTLASS_LAMBDA_FUNC_INLINE {
          warpgroup_fence_operand(tSrS);
          if (lane == 0) SignalBarrier::arrive(&smem.slot_free[gg % T::kStages]);  // S is done reading it
          const float ref_ratio = ref / page_ref;
          ref = page_ref;
          float logit_factor[2];
          for (int h = 0; h < 2; ++h) logit_factor[h] = fmaxf(q_factor[h] * page_ref, FLT_MIN);
          const auto body = [&](auto masked) CUTLASS_LAMBDA_FUNC_INLINE {
            const auto logit = [&](int i) CUTLASS_LAMBDA_FUNC_INLINE {
              if constexpr (decltype(masked)::value)
                if (page * kBlockN + col0 + (i & 1) + 8 * (i >> 2) >= limit[(i >> 1) & 1]) return -INFINITY;
              return tSrS(i);
            };
            float page_max[2] = {-INFINITY, -INFINITY};
            CUTE_UNROLL
            for (int i = 0; i < size(tSrS); ++i)
              page_max[(i >> 1) & 1] = fmaxf(page_max[(i >> 1) & 1], logit(i));
            float bias[2];
            CUTE_UNROLL
            for (int h = 0; h < 2; ++h) {
              float moved;
              Base::raise_running_max(paged_sm90::quad_max(page_max[h]) * logit_factor[h], run_max[h],
                                      row_sum[h], moved);
              scale[h] = moved * ref_ratio;
              // A row that has seen only masked keys keeps max -inf: exp2(-inf) = 0 keeps P at 0.
              bias[h] = 8.f - (run_max[h] == -INFINITY ? 0.f : run_max[h]);
            }
            CUTE_UNROLL
            for (int kb = 0; kb < 2; ++kb) CUTE_UNROLL
            for (int hi = 0; hi < 2; ++hi) CUTE_UNROLL
            for (int h = 0; h < 2; ++h) {
              const int jj = 2 * h + 4 * (4 * kb + 2 * hi);  // accumulator jj, jj + 1, jj + 4, jj + 5: row h
              float e[4];
              CUTE_UNROLL
              for (int q = 0; q < 4; ++q)
                e[q] = device::ex2_approx_ftz(
                    fmaf(logit(jj + (q & 1) + 4 * (q >> 1)), logit_factor[h], bias[h]));
              row_sum[h] += (e[0] + e[1]) + (e[2] + e[3]);
              p_codes[4 * kb + 2 * hi + h] = codes::pack_e4m3x4(e[0], e[1], e[2], e[3]);
            }
          };
          if ((page + 1) * kBlockN > min_limit)  // the page reaches some row's limit
            body(cute::true_type{});
          else
            body(cute::false_type{});
        };
        // The piece's first page alone: its S needs this piece's Q.
        float next_ref = qk_issue(g % T::kStages, (g / T::kStages) & 1);
        ref = next_ref;
        warpgroup_wait<0>();
        softmax_and_pack(first, g, next_ref);
        // P of page g (consumer count) to warpgroup 0 and into this warpgroup's P V, issued.
        const auto publish_and_issue_pv = [&]() CUTLASS_LAMBDA_FUNC_INLINE {
          // V^T of page g is written, and so warpgroup 0's P V of page g - 2 (which read P tile
          // g % 2 and its scales) is complete.
          SignalBarrier::wait(&smem.vt_ready[g & 1], (g >> 1) & 1);
          publish_p(g & 1, p_codes);
          if (col0 == 0)
            for (int h = 0; h < 2; ++h) smem.scale[g & 1][r0 + 8 * h] = scale[h];
          if (wg_thread == 0) smem.page_m[g & 1] = ref;
          SignalBarrier::arrive(&smem.p_ready[g & 1]);
          pv_issue(g & 1);
        };
        // Every page but the piece's last: no wgmma and no wait under a branch (v3's reason).
        for (int page = first; page + 1 < end; ++page, ++g) {
          next_ref = qk_issue((g + 1) % T::kStages, ((g + 1) / T::kStages) & 1);
          publish_and_issue_pv();
          warpgroup_wait<1>();  // S of page g + 1 (committed before this P V)
          softmax_and_pack(page + 1, g + 1, next_ref);
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
        // v3's order; beside P, the page's reference M (O's unit after its P V).
        Base::transposer_pages(smem, first, end, g, total_pages, r0, tOrO, pv_wait, transpose_next, pv_issue,
                               [&](int page) CUTLASS_LAMBDA_FUNC_INLINE { ref = smem.page_m[page & 1]; },
                               transposer);
        paged_sm90::read_piece_state(smem, piece, r0, run_max, row_sum);
      }
      // O holds sum P V' with V' = V / M of the last page (earlier pages rescaled as M moved).
      paged_sm90::write_piece<Element, T::kHeadDimV, kBlockM>(
          p, sm90::opaque(req), kv_head(), m_tile(), blockIdx.y, sm90::opaque(r0),
          kWG * T::kVColsPerWarpgroup + sm90::opaque(col0), kOwner && col0 == 0, run_max, row_sum, tOrO,
          ref / T::kPScale);
      ++piece;
    });
  }
};

template <class T>
__global__ void __launch_bounds__(T::kThreads, 1)
    paged_sm90_fp8_v4_kernel(const __grid_constant__ Params params,
                             const __grid_constant__ CUtensorMap kv_map,
                             const __grid_constant__ CUtensorMap rope_map) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  Kernel<T>::run(params, &kv_map, &rope_map);
#endif
}

}  // namespace cutelab::mla::paged_sm90_fp8_v4
