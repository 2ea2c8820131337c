#pragma once
// paged_sm90_fp8 v1 device code. config.hpp has the design in one paragraph, README.md the
// reasoning and the measurements.

#include <cuda.h>

#include <cutlass/arch/barrier.h>
#include <cute/arch/copy_sm90_tma.hpp>
#include <cute/tensor.hpp>
#include <cutlass/detail/helper_macros.hpp>

#include "cute/mla_decode/paged_sm90/common/pieces.cuh"
#include "cute/mla_decode/paged_sm90_fp8/common/dequant.cuh"
#include "cute/mla_decode/paged_sm90_fp8/paged_sm90_fp8_v1/config.hpp"
#include "cutelab/device/fast_math.cuh"
#include "cutelab/device/sm90/opaque.cuh"
#include "cutelab/device/sm90/pdl.cuh"

namespace cutelab::mla::paged_sm90_fp8_v1 {

using paged_sm90::Params;
using FullBarrier = cutlass::arch::ClusterTransactionBarrier;  // TMA bytes of a staged page landed
using SignalBarrier = cutlass::arch::ClusterBarrier;           // mbarrier: release on arrive, acquire on wait
using NamedBarrier = cutlass::arch::NamedBarrier;

template <class T>
struct Kernel {
  static_assert(T::kStages == 2 && T::kWarpgroups == 2);
  static_assert(T::kLatentChunks == 8 && 4 % T::kDequantBatch == 0,
                "dequant_page converts chunks 0-3, then (after warpgroup 1's P V) 4-7, in batches");
  using Element = typename T::Element;
  using SharedStorage = typename T::SharedStorage;
  static constexpr int kBlockM = T::kBlockM;
  static constexpr int kBlockN = T::kBlockN;
  static constexpr int kSteps = T::kQKStepsPerChunk;
  static constexpr int kChunkElements = kBlockN * T::kChunk;  // one chunk of the bf16 tile

  CUTE_DEVICE static void run(const Params& p, const CUtensorMap* kv_map, const CUtensorMap* rope_map) {
    extern __shared__ __align__(1024) char smem_raw[];
    auto& smem = *reinterpret_cast<SharedStorage*>(smem_raw);
    if (threadIdx.x == 0) {
      cute::prefetch_tma_descriptor(kv_map);
      if constexpr (T::kTokenScales) cute::prefetch_tma_descriptor(rope_map);
      for (int s = 0; s < T::kStages; ++s) FullBarrier::init(&smem.stage_full[s], 1);
      // Chunk 0: every thread of warpgroup 0 arrives (its arrival also releases that thread's reads
      // of the previous page's scales, which warpgroup 1 overwrites after S). Others: one per warp.
      for (int c = 0; c < T::kNumChunks; ++c) SignalBarrier::init(&smem.chunk_ready[c], c == 0 ? 128 : 4);
      SignalBarrier::init(&smem.p_ready, 128);
      SignalBarrier::init(&smem.wg1_done, 128);
      for (int s = 0; s < 2; ++s) {
        SignalBarrier::init(&smem.final_ready[s], 128);
        SignalBarrier::init(&smem.final_read[s], 128);
      }
      cutlass::arch::fence_barrier_init();
    }
    // Everything above overlaps the previous kernel; the schedule and the inputs are read only after it.
    sm90::wait_for_prior_grid();
    sm90::allow_dependent_launch();  // the combine's blocks wait on the device for this grid
    const PartInfo part = p.schedule.parts[blockIdx.y];
    __syncthreads();
    if (threadIdx.x < 128)
      consume<0>(p, kv_map, rope_map, smem, part);
    else
      consume<1>(p, kv_map, rope_map, smem, part);
  }

  // Loads page `page`'s bytes into staging slot `slot`; one thread.
  CUTE_DEVICE static void load_stage(const Params& p, const CUtensorMap* kv_map, const CUtensorMap* rope_map,
                                     SharedStorage& smem, int slot, int page, int kv_head) {
    std::uint8_t* stage = smem.stage[slot];
    FullBarrier::arrive_and_expect_tx(&smem.stage_full[slot], T::kStageBytes);
    CUTE_UNROLL
    for (int c = 0; c < T::kStageChunks; ++c)
      cute::SM90_TMA_LOAD_4D::copy(kv_map, &smem.stage_full[slot], p.kv_cache_hint,
                                   stage + c * T::kStageChunkBytes, c * T::kChunk, kv_head, 0, page);
    if constexpr (T::kTokenScales)
      cute::SM90_TMA_LOAD_4D::copy(rope_map, &smem.stage_full[slot], p.kv_cache_hint,
                                   stage + T::kStageChunks * T::kStageChunkBytes, 0, kv_head, 0, page);
  }

  // Warpgroup 1 (kWG = 1): S, softmax, P, O[:, 256:512]. Warpgroup 0: O[:, 0:256], the loads and
  // the dequantisation.
  template <int kWG>
  CUTE_DEVICE static void consume(const Params& p, const CUtensorMap* kv_map, const CUtensorMap* rope_map,
                                  SharedStorage& smem, const PartInfo& part) {
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
    // Accumulator rows of this thread: r0 and r0 + 8; columns col0 + (i & 1) + 8 * (i >> 2).
    const int r0 = (wg_thread / 32) * 16 + lane / 4;
    const int col0 = 2 * (lane % 4);
    const bool elected = wg_thread == 0;
    // fp8_tensor: the one scale multiplies every logit and every output; the tile holds the codes' values.
    const float kv_scale = T::kTokenScales ? 1.f : *p.kv_scale;
    const float scale_log2 = p.scale_log2 * kv_scale;

    typename T::TiledMmaQK mma_qk;
    typename T::TiledMmaQKRope mma_rope;
    typename T::TiledMmaPVRegisters mma_pv_regs;
    typename T::TiledMmaPVShared mma_pv_smem;
    auto thr_qk = mma_qk.get_thread_slice(wg_thread);
    auto thr_rope = mma_rope.get_thread_slice(wg_thread);
    auto thr_pv_regs = mma_pv_regs.get_thread_slice(wg_thread);
    auto thr_pv_smem = mma_pv_smem.get_thread_slice(wg_thread);
    const auto page_shape = Shape<Int<kBlockM>, Int<kBlockN>>{};

    Tensor tSrQRope = make_tensor<Element>(partition_shape_A(mma_rope, page_shape));  // (MMA,1,4)
    Tensor tSrS = partition_fragment_C(mma_qk, page_shape);  // (MMA,1,1) S, then P (fp32)
    Tensor tOrP = make_tensor<Element>(partition_shape_A(mma_pv_regs, page_shape));  // (MMA,1,4)
    Tensor tOrO =
        partition_fragment_C(mma_pv_regs, Shape<Int<kBlockM>, Int<T::kVColsPerWarpgroup>>{});  // (MMA,1,1)

    const paged_sm90::PartWalk<1> walk{p, part, min(part.end_req, p.b - 1)};

    // --- warpgroup 0: staging loads and the dequantisation into the bf16 tile -----------------
    // Every thread of warpgroup 0 walks the pages (the elected one issues the TMA copies) and
    // keeps what each staging slot holds: page id (-1: nothing) and valid tokens. Page ids and
    // lengths are read one load ahead, fp8_token scales one page ahead: none of those loads is
    // waited for where it is issued.
    paged_sm90::PageCursor next = walk.start(0);
    int next_page = walk.page_id(next);
    int next_len = walk.valid(next) ? p.seqlens[next.req] : 0;
    int staged_page[2] = {-1, -1}, staged_valid[2] = {0, 0};  // indexed by constants only
    const auto load_next = [&](int slot) CUTLASS_LAMBDA_FUNC_INLINE {
      const bool ok = walk.valid(next);
      const int page = ok ? next_page : -1;
      const int valid = min(kBlockN, max(0, next_len - next.blk * kBlockN));
      if (slot == 0) {
        staged_page[0] = page;
        staged_valid[0] = valid;
      } else {
        staged_page[1] = page;
        staged_valid[1] = valid;
      }
      if (ok && elected) load_stage(p, kv_map, rope_map, smem, slot, next_page, kv_head());
      walk.advance(next, 0);
      next_page = walk.page_id(next);
      if (walk.valid(next)) next_len = p.seqlens[next.req];
    };
    // The segments this thread dequantises: the k-th 16-byte segment idx = thread + 128 k of a
    // 4096-byte chunk is row idx / 4, bytes (idx % 4) * 16 of it.
    float4 scale_raw[2];  // fp8_token: the 4 group scales of this thread's two rows
    const auto prefetch_scales = [&](int slot) CUTLASS_LAMBDA_FUNC_INLINE {
      if constexpr (T::kTokenScales) {
        const int page = slot ? staged_page[1] : staged_page[0];
        if (page < 0) return;
        CUTE_UNROLL
        for (int k = 0; k < 2; ++k) {
          const int row = (wg_thread + 128 * k) >> 2;
          const auto* entry =
              static_cast<const std::uint8_t*>(p.kv_cache) +
              ((static_cast<int64_t>(page) * kBlockN + row) * p.h_kv + kv_head()) * kFp8TokenBytes;
          scale_raw[k] = *reinterpret_cast<const float4*>(entry + kFp8ScaleOffset);
        }
      }
    };
    float deq_scale[2][kFp8Groups];
    std::uint32_t deq_keep[2];  // all ones for a row below the page's valid tokens, else 0
    int deq_valid = 0;
    // Shared-memory byte addresses of this thread's stores in chunk 0 of the tile (chunk c adds
    // c * 8 KiB: each chunk is its own contiguous swizzle-periodic block), made once through the
    // tile's tensor (its pointer applies the 128-byte swizzle to byte addresses).
    Tensor sTile = make_tensor(make_smem_ptr(smem.kv.data()), typename T::SmemLayoutK{});  // (BLK_N,576)
    std::uint32_t dst[2][2];  // [k][16-byte unit]
    std::uint32_t rope_dst[4];
    CUTE_UNROLL
    for (int k = 0; k < 2; ++k) {
      const int idx = wg_thread + 128 * k, row = idx >> 2, seg = idx & 3;
      for (int u = 0; u < 2; ++u) dst[k][u] = cute::cast_smem_ptr_to_uint(&sTile(row, seg * 16 + u * 8));
    }
    CUTE_UNROLL
    for (int k = 0; k < 4; ++k) {
      const int idx = wg_thread + 128 * k;
      rope_dst[k] = cute::cast_smem_ptr_to_uint(&sTile(idx / 8, T::kHeadDimV + (idx % 8) * 8));
    }
    // Chunks c0 .. c0 + kCount - 1 of staged slot `slot` into the bf16 tile (all loads first: a
    // thread's conversions then run back to back), each chunk announced to warpgroup 1 once
    // written. Rows past the page's valid tokens become 0 (they may hold NaN codes or NaN scales,
    // and 0 * NaN is NaN in the tensor core).
    const auto dequant_latent = [&]<int kCount>(int slot, int c0) CUTLASS_LAMBDA_FUNC_INLINE {
      const std::uint8_t* stage = smem.stage[slot];
      uint4 codes[kCount][2];
      CUTE_UNROLL
      for (int i = 0; i < kCount; ++i) CUTE_UNROLL
      for (int k = 0; k < 2; ++k)
        codes[i][k] = *reinterpret_cast<const uint4*>(stage + (c0 + i) * T::kStageChunkBytes +
                                                      (wg_thread + 128 * k) * 16);
      CUTE_UNROLL
      for (int i = 0; i < kCount; ++i) {
        const int c = c0 + i;
        CUTE_UNROLL
        for (int k = 0; k < 2; ++k) {
          uint4 v = codes[i][k];
          v.x &= deq_keep[k];
          v.y &= deq_keep[k];
          v.z &= deq_keep[k];
          v.w &= deq_keep[k];
          uint4 vals[2];
          paged_sm90_fp8::dequant16<T::kTokenScales>(v, deq_scale[k][min(c / 2, kFp8Groups - 1)], vals);
          const std::uint32_t chunk_bytes = c * kChunkElements * 2;
          paged_sm90_fp8::st_shared_128(dst[k][0] + chunk_bytes, vals[0]);
          paged_sm90_fp8::st_shared_128(dst[k][1] + chunk_bytes, vals[1]);
        }
      }
      cutlass::arch::fence_view_async_shared();  // generic stores, then warpgroup 1's wgmma reads
      __syncwarp();
      CUTE_UNROLL
      for (int i = 0; i < kCount; ++i)
        if (c0 + i == 0 || lane == 0) SignalBarrier::arrive(&smem.chunk_ready[c0 + i]);
    };
    // The RoPE chunk: fp8_tensor's e4m3 codes like the rest; fp8_token's bf16 values moved.
    const auto dequant_rope = [&](int slot) CUTLASS_LAMBDA_FUNC_INLINE {
      if constexpr (T::kTokenScales) {
        const std::uint8_t* stage = smem.stage[slot] + T::kStageChunks * T::kStageChunkBytes;
        CUTE_UNROLL
        for (int k = 0; k < 4; ++k) {
          const int idx = wg_thread + 128 * k;
          uint4 v = *reinterpret_cast<const uint4*>(stage + idx * 16);
          if (idx / 8 >= deq_valid) v = make_uint4(0, 0, 0, 0);
          paged_sm90_fp8::st_shared_128(rope_dst[k], v);
        }
        cutlass::arch::fence_view_async_shared();
        __syncwarp();
        if (lane == 0) SignalBarrier::arrive(&smem.chunk_ready[T::kRopeChunk]);
      } else {
        dequant_latent.template operator()<1>(slot, T::kRopeChunk);
      }
    };
    // Page j of the part (staged in slot j % 2) into the tile. The previous page's readers must
    // be done with a chunk first: S with every chunk (p_ready said so), warpgroup 0's own P V
    // with chunks 0-3, warpgroup 1's P V with chunks 4-7 (wg1_done of page j - 1).
    const auto dequant_page = [&](int j) CUTLASS_LAMBDA_FUNC_INLINE {
      const int slot = j & 1;
      deq_valid = slot ? staged_valid[1] : staged_valid[0];
      CUTE_UNROLL
      for (int k = 0; k < 2; ++k) {
        const bool keep = ((wg_thread + 128 * k) >> 2) < deq_valid;
        deq_keep[k] = keep ? ~0u : 0u;
        if constexpr (T::kTokenScales) {
          // A zero scale with zeroed codes: a row past the end (NaN scale allowed) comes out 0.
          const float4 sc = keep ? scale_raw[k] : make_float4(0.f, 0.f, 0.f, 0.f);
          deq_scale[k][0] = sc.x;
          deq_scale[k][1] = sc.y;
          deq_scale[k][2] = sc.z;
          deq_scale[k][3] = sc.w;
        } else {
          for (int gi = 0; gi < kFp8Groups; ++gi) deq_scale[k][gi] = 1.f;
        }
      }
      FullBarrier::wait(&smem.stage_full[slot], (j >> 1) & 1);
      constexpr int kBatch = T::kDequantBatch;
      CUTE_UNROLL
      for (int c = 0; c < 4; c += kBatch) dequant_latent.template operator()<kBatch>(slot, c);
      dequant_rope(slot);
      if (j > 0) SignalBarrier::wait(&smem.wg1_done, (j - 1) & 1);
      CUTE_UNROLL
      for (int c = 4; c < 8; c += kBatch) dequant_latent.template operator()<kBatch>(slot, c);
      NamedBarrier::sync(128, T::kWarpgroupSync + kWG);  // every thread has read the slot
      load_next(slot);                                   // page j + 2
      prefetch_scales(slot ^ 1);                         // page j + 1
    };
    const auto staged = [&](int j) CUTLASS_LAMBDA_FUNC_INLINE {
      return ((j & 1) ? staged_page[1] : staged_page[0]) >= 0;
    };
    if constexpr (!kOwner) {
      load_next(0);
      load_next(1);
      prefetch_scales(0);
      if (staged(0)) dequant_page(0);
    }
    int g = 0;      // pages consumed so far by this CTA
    int piece = 0;  // pieces finished, for the parity of final_max / final_sum

    // --- S = Q K^T of the tile, chunk by chunk as warpgroup 0 fills it (warpgroup 1) ----------
    const auto qk = [&](int phase) CUTLASS_LAMBDA_FUNC_INLINE {
      Tensor sQo =
          make_tensor(make_smem_ptr(sm90::opaque(smem.q.data())), typename T::SmemLayoutQ{});  // (BLK_M,512)
      Tensor sK =
          make_tensor(make_smem_ptr(sm90::opaque(smem.kv.data())), typename T::SmemLayoutK{});  // (BLK_N,576)
      Tensor tSrQ = thr_qk.make_fragment_A(thr_qk.partition_A(sQo));                            // (MMA,1,32)
      Tensor tSrK = thr_qk.make_fragment_B(thr_qk.partition_B(sK));                             // (MMA,1,36)
      Tensor tSrKRope = thr_rope.make_fragment_B(thr_rope.partition_B(sK));                     // (MMA,1,36)
      warpgroup_fence_operand(tSrS);
      mma_qk.accumulate_ = GMMA::ScaleOut::Zero;
      CUTE_UNROLL
      for (int c = 0; c < T::kLatentChunks; ++c) {
        SignalBarrier::wait(&smem.chunk_ready[c], phase);
        warpgroup_arrive();
        CUTE_UNROLL
        for (int k = c * kSteps; k < (c + 1) * kSteps; ++k) {
          cute::gemm(mma_qk, tSrQ(_, _, k), tSrK(_, _, k), tSrS);
          mma_qk.accumulate_ = GMMA::ScaleOut::One;
        }
      }
      constexpr int c = T::kRopeChunk;
      SignalBarrier::wait(&smem.chunk_ready[c], phase);
      warpgroup_arrive();
      mma_rope.accumulate_ = GMMA::ScaleOut::One;
      CUTE_UNROLL
      for (int k = 0; k < kSteps; ++k)
        cute::gemm(mma_rope, tSrQRope(_, _, k), tSrKRope(_, _, c * kSteps + k), tSrS);
      warpgroup_commit_batch();
      warpgroup_wait<0>();
      warpgroup_fence_operand(tSrS);
    };
    const auto v_half = [&]() CUTLASS_LAMBDA_FUNC_INLINE {
      return make_tensor(make_smem_ptr(sm90::opaque(smem.kv.data() + kWG * T::kVHalfOffset)),
                         typename T::SmemLayoutV{});  // (256,BLK_N)
    };
    const auto pv = [&]() CUTLASS_LAMBDA_FUNC_INLINE {  // O += P V, waited
      paged_sm90::issue_half_pv<kOwner>(
          mma_pv_regs, thr_pv_regs, mma_pv_smem, thr_pv_smem, tOrP, tOrO,
          [&]() CUTLASS_LAMBDA_FUNC_INLINE {
            return make_tensor(make_smem_ptr(sm90::opaque(smem.p.data())), typename T::SmemLayoutP{});
          },
          v_half);
      warpgroup_wait<0>();
      warpgroup_fence_operand(tOrO);
    };
    const auto scale_o = [&](const float(&s)[2])
                             CUTLASS_LAMBDA_FUNC_INLINE { paged_sm90::scale_rows(tOrO, s); };
    const auto store_p = [&]() CUTLASS_LAMBDA_FUNC_INLINE {
      paged_sm90::store_p<T>(smem.p.data(), tOrP, sm90::opaque((wg_thread / 32) * 16), sm90::opaque(lane));
    };

    paged_sm90::for_each_piece(p, part, [&](int req, int first, int end) CUTLASS_LAMBDA_FUNC_INLINE {
      const int seqlen = p.seqlens[req];
      float run_max[2] = {-INFINITY, -INFINITY};  // log2 units of the scaled logits (warpgroup 1)
      float row_sum[2] = {0.f, 0.f};              // this thread's share (warpgroup 1)
      clear(tOrO);

      if constexpr (kOwner) {
        paged_sm90::load_q_tile<T>(p, sm90::opaque(smem.q.data()), req, kv_head(), m_tile(), wg_thread, 128,
                                   sm90::opaque(r0), col0, tSrQRope);
        NamedBarrier::sync(128, T::kWarpgroupSync + kWG);

        int limit[2];  // keys visible to rows r0 and r0 + 8
        for (int h = 0; h < 2; ++h) {
          const int packed = min(m_tile() * kBlockM + sm90::opaque(r0) + 8 * h, p.rows_per_head - 1);
          limit[h] = p.causal ? seqlen - p.s_q + packed / p.heads_per_kv + 1 : seqlen;
        }
        const int min_limit = p.causal ? seqlen - p.s_q + 1 : seqlen;

        for (int page = first; page < end; ++page, ++g) {
          const int phase = g & 1;
          qk(phase);
          float scale[2];
          paged_sm90::softmax_page(tSrS, tOrP, page * kBlockN, col0, (page + 1) * kBlockN > min_limit, limit,
                                   scale_log2, run_max, row_sum, scale);
          store_p();
          if (col0 == 0)
            for (int h = 0; h < 2; ++h) smem.scale[r0 + 8 * h] = scale[h];
          SignalBarrier::arrive(&smem.p_ready);
          scale_o(scale);
          pv();
          SignalBarrier::arrive(&smem.wg1_done);
        }
        paged_sm90::publish_piece_state(smem, piece, r0, col0, run_max, row_sum);
      } else {
        for (int page = first; page < end; ++page, ++g) {
          SignalBarrier::wait(&smem.p_ready, g & 1);
          float scale[2];
          for (int h = 0; h < 2; ++h) scale[h] = smem.scale[r0 + 8 * h];
          scale_o(scale);
          pv();
          // The next page of the part (maybe of the next piece) into the tile, while warpgroup 1
          // finishes this one.
          if (staged(g + 1)) dequant_page(g + 1);
        }
        paged_sm90::read_piece_state(smem, piece, r0, run_max, row_sum);
      }
      paged_sm90::write_piece<Element, T::kHeadDimV, kBlockM>(
          p, sm90::opaque(req), kv_head(), m_tile(), blockIdx.y, sm90::opaque(r0),
          kWG * T::kVColsPerWarpgroup + sm90::opaque(col0), kOwner && col0 == 0, run_max, row_sum, tOrO,
          kv_scale);
      ++piece;
    });
  }
};

template <class T>
__global__ void __launch_bounds__(T::kThreads, 1)
    paged_sm90_fp8_v1_kernel(const __grid_constant__ Params params,
                             const __grid_constant__ CUtensorMap kv_map,
                             const __grid_constant__ CUtensorMap rope_map) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  Kernel<T>::run(params, &kv_map, &rope_map);
#endif
}

}  // namespace cutelab::mla::paged_sm90_fp8_v1
