#pragma once
// paged_sm90_fp8 v3 device code: v2's kernel with the page loop reordered so that warpgroup 1's
// softmax of page g + 1 overlaps both P V of page g (S of page g + 1 issued ahead of them), and
// warpgroup 0 waits for its P V only before its next transpose. README.md has the reasoning, the
// prediction and the measurements.

#include <cfloat>

#include <cuda.h>

#include <cutlass/arch/barrier.h>
#include <cutlass/arch/reg_reconfig.h>
#include <cute/arch/copy_sm90_tma.hpp>
#include <cute/tensor.hpp>
#include <cutlass/detail/helper_macros.hpp>

#include "cute/mla_decode/paged_sm90/common/pieces.cuh"
#include "cute/mla_decode/paged_sm90_fp8/common/codes.cuh"
#include "cute/mla_decode/paged_sm90_fp8/paged_sm90_fp8_v3/config.hpp"
#include "cutelab/device/sm90/opaque.cuh"
#include "cutelab/device/sm90/pdl.cuh"

namespace cutelab::mla::paged_sm90_fp8_v3 {

using paged_sm90::Params;
using FullBarrier = cutlass::arch::ClusterTransactionBarrier;  // TMA bytes of a staged page landed
using SignalBarrier = cutlass::arch::ClusterBarrier;           // mbarrier: release on arrive, acquire on wait
using NamedBarrier = cutlass::arch::NamedBarrier;
namespace codes = paged_sm90_fp8;

template <class T>
struct Kernel {
  // A row's reference max moves only when a page's max exceeds it by more than this (log2 units):
  // P x 2^8 then stays under e4m3's largest value (2^0.807 x 256 = 448), and most pages need no
  // rescale of O (v3 amended).
  static constexpr float kMaxSlack = 0.8f;
  static_assert(T::kWarpgroups == 2 && T::kStages == 3 && T::kThreads == 128 * (T::kWarpgroups + 1));
  using Element = typename T::Element;
  using Code = typename T::Code;
  using SharedStorage = typename T::SharedStorage;
  static constexpr int kBlockM = T::kBlockM;
  static constexpr int kBlockN = T::kBlockN;

  CUTE_DEVICE static void run(const Params& p, const CUtensorMap* kv_map, const CUtensorMap* rope_map) {
    extern __shared__ __align__(1024) char smem_raw[];
    auto& smem = *reinterpret_cast<SharedStorage*>(smem_raw);
    if (threadIdx.x == 0) {
      cute::prefetch_tma_descriptor(kv_map);
      cute::prefetch_tma_descriptor(rope_map);
      for (int s = 0; s < T::kStages; ++s) FullBarrier::init(&smem.stage_full[s], 1);
      for (int s = 0; s < 2; ++s) {
        SignalBarrier::init(&smem.vt_ready[s], 128);
        SignalBarrier::init(&smem.p_ready[s], 128);
        SignalBarrier::init(&smem.wg1_done[s], 128);
        SignalBarrier::init(&smem.final_ready[s], 128);
        SignalBarrier::init(&smem.final_read[s], 128);
      }
      // A staged page is free once S read it (one arrival per warp of warpgroup 1) and every
      // thread of warpgroup 0 transposed its part (and read the valid count).
      for (int s = 0; s < T::kStages; ++s) SignalBarrier::init(&smem.slot_free[s], 4 + 128);
      cutlass::arch::fence_barrier_init();
    }
    // Everything above overlaps the previous kernel; the schedule and the inputs are read only after it.
    sm90::wait_for_prior_grid();
    sm90::allow_dependent_launch();  // the combine's blocks wait on the device for this grid
    const PartInfo part = p.schedule.parts[blockIdx.y];
    __syncthreads();
    if (threadIdx.x >= 256) {
      cutlass::arch::warpgroup_reg_dealloc<T::kProducerRegisters>();
      if (threadIdx.x == 256) produce(p, kv_map, rope_map, smem, part);
      return;
    }
    cutlass::arch::warpgroup_reg_alloc<T::kConsumerRegisters>();
    if (threadIdx.x < 128)
      consume<0>(p, smem, part);
    else
      consume<1>(p, smem, part);
  }

  // The producer (one thread of the third warpgroup): walks the part's pages (those for_each_piece
  // visits) and stages page j in slot j % 3 once the slot's page j - 3 is free, with its count of
  // valid tokens beside it. A TMA issue can hold its thread for hundreds of cycles when many
  // bytes are in flight: on a consumer it delayed the whole page loop (measured ~750 cycles a
  // page), here it only waits.
  CUTE_DEVICE static void produce(const Params& p, const CUtensorMap* kv_map, const CUtensorMap* rope_map,
                                  SharedStorage& smem, const PartInfo& part) {
    const int kv_head = static_cast<int>(blockIdx.x) / p.m_tiles;
    int j = 0;
    paged_sm90::for_each_piece(p, part, [&](int req, int first, int end) CUTLASS_LAMBDA_FUNC_INLINE {
      const int seqlen = p.seqlens[req];
      const int* pages = p.block_table + static_cast<int64_t>(req) * p.max_blocks;
      int next = pages[first];  // page ids one load ahead
      for (int blk = first; blk < end; ++blk, ++j) {
        const int page = next;
        if (blk + 1 < end) next = pages[blk + 1];
        const int slot = j % T::kStages;
        if (j >= T::kStages) SignalBarrier::wait(&smem.slot_free[slot], (j / T::kStages - 1) & 1);
        smem.stage_valid[slot] = min(kBlockN, seqlen - blk * kBlockN);
        load_stage(p, kv_map, rope_map, smem, slot, page, kv_head);
      }
    });
  }

  // Loads page `page` into staging slot `slot`: four 128-byte x 64-token boxes and one 64-byte x
  // 64-token box; one thread.
  CUTE_DEVICE static void load_stage(const Params& p, const CUtensorMap* kv_map, const CUtensorMap* rope_map,
                                     SharedStorage& smem, int slot, int page, int kv_head) {
    std::uint8_t* stage = smem.stage[slot];
    FullBarrier::arrive_and_expect_tx(&smem.stage_full[slot], T::kStageBytes);
    CUTE_UNROLL
    for (int c = 0; c < T::kLatentChunks; ++c)
      cute::SM90_TMA_LOAD_4D::copy(kv_map, &smem.stage_full[slot], p.kv_cache_hint,
                                   stage + c * T::kLatentChunkBytes, c * T::kLatentChunk, kv_head, 0, page);
    cute::SM90_TMA_LOAD_4D::copy(rope_map, &smem.stage_full[slot], p.kv_cache_hint, stage + T::kRopeOffset,
                                 static_cast<int>(T::kHeadDimV), kv_head, 0, page);
  }

  // Byte offset of Q code / staged code (row, column) in a page-shaped tile.
  CUTE_DEVICE static std::uint32_t code_offset(int row, int col) {
    return col < T::kHeadDimV ? (col / T::kLatentChunk) * T::kLatentChunkBytes +
                                    codes::sw128_offset(row, col % T::kLatentChunk)
                              : T::kRopeOffset + codes::sw64_offset(row, col - T::kHeadDimV);
  }

  // Q of a piece as e4m3 codes with one scale per row (amax / 448), by warpgroup 1: 8 threads
  // per row, 16 rows a pass. Padded rows and all-zero rows get codes 0 and scale 0.
  CUTE_DEVICE static void load_q_codes(const Params& p, SharedStorage& smem, int req, int kv_head, int m_tile,
                                       int thread) {
    constexpr int kUnits = T::kHeadDimQK / 8 / 8;  // 16-byte units of q per thread and row
    const int j = thread % 8;
    const std::uint32_t q_base = cute::cast_smem_ptr_to_uint(smem.q);
    for (int row = thread / 8; row < kBlockM; row += 16) {
      const int packed = m_tile * kBlockM + row;
      const bool live = packed < p.rows_per_head;
      const Element* src = paged_sm90::q_row<Element>(p, req, kv_head, live ? packed : 0);
      uint4 v[kUnits];
      CUTE_UNROLL
      for (int m = 0; m < kUnits; ++m)
        v[m] = live ? *reinterpret_cast<const uint4*>(src + 8 * (j + 8 * m)) : make_uint4(0, 0, 0, 0);
      float amax = 0.f;
      CUTE_UNROLL
      for (int m = 0; m < kUnits; ++m) {
        const std::uint32_t w[4] = {v[m].x, v[m].y, v[m].z, v[m].w};
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
        const std::uint32_t w[4] = {v[m].x, v[m].y, v[m].z, v[m].w};
        std::uint32_t packed_codes[2];
        CUTE_UNROLL
        for (int h = 0; h < 2; ++h)
          packed_codes[h] = codes::pack_e4m3x4(
              __uint_as_float(w[2 * h] << 16) * inv, __uint_as_float(w[2 * h] & 0xFFFF0000u) * inv,
              __uint_as_float(w[2 * h + 1] << 16) * inv, __uint_as_float(w[2 * h + 1] & 0xFFFF0000u) * inv);
        codes::st_shared_64(q_base + code_offset(row, 8 * (j + 8 * m)), packed_codes[0], packed_codes[1]);
      }
      if (j == 0) smem.q_scale[row] = amax / 448.f;
    }
    cutlass::arch::fence_view_async_shared();  // generic stores, then wgmma reads
  }

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

    // The V^T block of this thread: 16 dims (unit u of latent chunk c) x 16 positions (group tg),
    // in two batches of 8 positions, odd groups taking them in the other order; each thread
    // rotates its dims by u. The warp's 16-byte loads and 8-byte stores are then free of bank
    // conflicts (checked offline over every case). Every address is a per-thread constant plus
    // an immediate: computed in the loop, the addressing was half of its 557 instructions.
    const int c = 2 * warp + (lane >> 4), u = lane & 3, tg = (lane >> 2) & 3, odd = tg & 1;
    const std::uint32_t sel_a = codes::pair_selector(0 ^ u, 1 ^ u);
    const std::uint32_t sel_b = codes::pair_selector(2 ^ u, 3 ^ u);
    // Loads, batch b: token t = 16 tg + 4 b + token_at(k) (token_at(8 b + k) = token_at(k) + 4 b
    // for k < 8), at sw128_offset(t, 16 U) = 128 t + ((U ^ (t % 8)) << 4) of chunk c / 2, U the
    // unit in the 128-byte row; t % 8 = (4 b) ^ (token_at(k) % 8).
    const int unit = 4 * (c % 2) + u;
    std::uint32_t ld_base[2], ld_swz[2], st_batch[2];
    CUTE_UNROLL
    for (int step = 0; step < 2; ++step) {
      const int b = step ^ odd;
      ld_base[step] = cute::cast_smem_ptr_to_uint(smem.stage[0]) + (c / 2) * T::kLatentChunkBytes +
                      (16 * tg + 4 * b) * 128;
      ld_swz[step] = (unit ^ (4 * b)) << 4;
      st_batch[step] = 8 * b;
    }
    // Stores, dims d = 64 (c % 4) + 16 u + 4 w + (jj ^ u) at sw64_offset(d, 16 tg + 8 b)
    // = 64 d + ((tg ^ ((d >> 1) % 4)) << 4) + 8 b, with (d >> 1) % 4 = 2 (w % 2) + ((jj ^ u) >> 1).
    std::uint32_t st_row[4];  // [jj]: 64 (jj ^ u) + the swizzle of an even w (odd w: bit 5 flipped)
    CUTE_UNROLL
    for (int jj = 0; jj < 4; ++jj) st_row[jj] = 64 * (jj ^ u) + ((tg ^ ((jj ^ u) >> 1)) << 4);
    const std::uint32_t st_base =
        cute::cast_smem_ptr_to_uint(smem.vt[0]) + (c / 4) * T::kVtHalfBytes + ((c % 4) * 64 + 16 * u) * 64;
    // Page j (staged in slot j % 3) into V^T buffer j % 2; with kMask, tokens at or past `valid`
    // become 0 (they may hold NaN codes, and 0 * NaN is NaN in the tensor core).
    const auto transpose_page = [&]<bool kMask>(int slot, int buffer, int valid) CUTLASS_LAMBDA_FUNC_INLINE {
      const std::uint32_t src_slot = slot * T::kStageBytes;
      const std::uint32_t dst_buffer = st_base + buffer * 2 * T::kVtHalfBytes;
      CUTE_UNROLL
      for (int step = 0; step < 2; ++step) {
        const std::uint32_t src = ld_base[step] + src_slot;
        uint4 rows[8];
        CUTE_UNROLL
        for (int k = 0; k < 8; ++k) {
          const int tk = token_at(k);
          rows[k] = codes::ld_shared_128(src + tk * 128 + (ld_swz[step] ^ ((tk % 8) << 4)));
          if constexpr (kMask)
            if (16 * tg + static_cast<int>(st_batch[step] / 2) + tk >= valid)
              rows[k] = make_uint4(0, 0, 0, 0);
        }
        const std::uint32_t dst = dst_buffer + st_batch[step];
        CUTE_UNROLL
        for (int w = 0; w < 4; ++w) {  // dims 4w .. 4w + 3 of the unit
          std::uint32_t cols[2][4];    // [token quad][dim jj ^ u]
          CUTE_UNROLL
          for (int quad = 0; quad < 2; ++quad) {
            const auto word = [&](int k) CUTLASS_LAMBDA_FUNC_INLINE {
              const uint4& r = rows[4 * quad + k];
              return w == 0 ? r.x : w == 1 ? r.y : w == 2 ? r.z : r.w;
            };
            codes::transpose4x4(word(0), word(1), word(2), word(3), sel_a, sel_b, cols[quad]);
          }
          CUTE_UNROLL
          for (int jj = 0; jj < 4; ++jj)
            codes::st_shared_64(dst + 256 * w + (st_row[jj] ^ ((w % 2) << 5)), cols[0][jj], cols[1][jj]);
        }
      }
      cutlass::arch::fence_view_async_shared();  // generic stores, then wgmma reads
    };
    const auto transpose_next = [&](int j) CUTLASS_LAMBDA_FUNC_INLINE {
      const int slot = j % T::kStages;
      FullBarrier::wait(&smem.stage_full[slot], (j / T::kStages) & 1);
      const int valid = smem.stage_valid[slot];
      // A warp-uniform choice: only a request's last page has tokens past its length.
      if (valid < kBlockN)
        transpose_page.template operator()<true>(slot, j & 1, valid);
      else
        transpose_page.template operator()<false>(slot, j & 1, kBlockN);
      SignalBarrier::arrive(&smem.slot_free[slot]);
      // Every thread arrives: its arrival also releases its reads of page j - 2's P scales.
      SignalBarrier::arrive(&smem.vt_ready[j & 1]);
    };
    if constexpr (!kOwner)
      if (total_pages > 0) transpose_next(0);
    int g = 0;      // pages consumed so far by this CTA
    int piece = 0;  // pieces finished, for the parity of final_max / final_sum

    // S of the page staged in `slot`, issued and committed, not waited.
    const auto qk_issue = [&](int slot, int phase) CUTLASS_LAMBDA_FUNC_INLINE {
      Code* q_codes = reinterpret_cast<Code*>(sm90::opaque(smem.q));
      Code* k_codes = reinterpret_cast<Code*>(sm90::opaque(smem.stage[0]) + slot * T::kStageBytes);
      Tensor tSrQ = thr_qk.make_fragment_A(thr_qk.partition_A(
          make_tensor(make_smem_ptr(q_codes), typename T::SmemLayoutLatent{})));  // (MMA,1,16)
      Tensor tSrK = thr_qk.make_fragment_B(thr_qk.partition_B(
          make_tensor(make_smem_ptr(k_codes), typename T::SmemLayoutLatent{})));  // (MMA,1,16)
      Tensor tSrQRope = thr_qk.make_fragment_A(thr_qk.partition_A(
          make_tensor(make_smem_ptr(q_codes + T::kRopeOffset), typename T::SmemLayoutRope{})));  // (MMA,1,2)
      Tensor tSrKRope = thr_qk.make_fragment_B(thr_qk.partition_B(
          make_tensor(make_smem_ptr(k_codes + T::kRopeOffset), typename T::SmemLayoutRope{})));  // (MMA,1,2)
      FullBarrier::wait(&smem.stage_full[slot], phase);
      warpgroup_fence_operand(tSrS);
      warpgroup_arrive();
      mma_qk.accumulate_ = GMMA::ScaleOut::Zero;
      CUTE_UNROLL
      for (int k = 0; k < size<2>(tSrQ); ++k) {
        cute::gemm(mma_qk, tSrQ(_, _, k), tSrK(_, _, k), tSrS);
        mma_qk.accumulate_ = GMMA::ScaleOut::One;
      }
      CUTE_UNROLL
      for (int k = 0; k < size<2>(tSrQRope); ++k)
        cute::gemm(mma_qk, tSrQRope(_, _, k), tSrKRope(_, _, k), tSrS);
      warpgroup_commit_batch();
      warpgroup_fence_operand(tSrS);
    };
    const auto v_half = [&](int buffer) CUTLASS_LAMBDA_FUNC_INLINE {
      return make_tensor(
          make_smem_ptr(reinterpret_cast<Code*>(sm90::opaque(smem.vt[0]) + buffer * 2 * T::kVtHalfBytes +
                                                kWG * T::kVtHalfBytes)),
          typename T::SmemLayoutVt{});  // (256,BLK_N)
    };
    const auto pv_issue = [&](int buffer) CUTLASS_LAMBDA_FUNC_INLINE {  // O += P V, not waited
      warpgroup_fence_operand(tOrO);
      if constexpr (kOwner) {
        Tensor tOrV = thr_pv_regs.make_fragment_B(thr_pv_regs.partition_B(v_half(buffer)));  // (MMA,1,2)
        warpgroup_fence_operand(tOrP);
        warpgroup_arrive();
        CUTE_UNROLL
        for (int k = 0; k < size<2>(tOrP); ++k) cute::gemm(mma_pv_regs, tOrP(_, _, k), tOrV(_, _, k), tOrO);
        warpgroup_fence_operand(tOrP);
      } else {
        Tensor sP = make_tensor(make_smem_ptr(reinterpret_cast<Code*>(sm90::opaque(smem.p[buffer]))),
                                typename T::SmemLayoutP{});
        Tensor tOrPs = thr_pv_smem.make_fragment_A(thr_pv_smem.partition_A(sP));             // (MMA,1,2)
        Tensor tOrV = thr_pv_smem.make_fragment_B(thr_pv_smem.partition_B(v_half(buffer)));  // (MMA,1,2)
        warpgroup_arrive();
        CUTE_UNROLL
        for (int k = 0; k < size<2>(tOrPs); ++k) cute::gemm(mma_pv_smem, tOrPs(_, _, k), tOrV(_, _, k), tOrO);
      }
      warpgroup_commit_batch();
    };
    const auto pv_wait = [&]() CUTLASS_LAMBDA_FUNC_INLINE {
      warpgroup_wait<0>();
      warpgroup_fence_operand(tOrO);
      if constexpr (kOwner) warpgroup_fence_operand(tOrP);
    };
    // P as e4m3 codes in the A operand's register order: word 4 kb + 2 hi + h holds row r0 + 8 h,
    // positions 32 kb + 16 hi + 4 (lane % 4) + 0..3, i.e. the accumulator's columns
    // 2 (lane % 4) + {0, 1} of column groups 4 kb + 2 hi and 4 kb + 2 hi + 1 (token_at). Packed
    // when the softmax ends (softmax_and_pack), published later: the A registers may still be
    // read by the P V in flight, and the P tile by warpgroup 0's P V of page g - 2.
    // The packed P into the A operand's registers and into P tile `buffer` for warpgroup 0.
    const auto publish_p = [&](int buffer, const std::uint32_t(&words)[8]) CUTLASS_LAMBDA_FUNC_INLINE {
      std::uint32_t* regs = reinterpret_cast<std::uint32_t*>(raw_pointer_cast(tOrP.data()));
      const std::uint32_t p_base = cute::cast_smem_ptr_to_uint(smem.p[buffer]);
      CUTE_UNROLL
      for (int kb = 0; kb < 2; ++kb) CUTE_UNROLL
      for (int hi = 0; hi < 2; ++hi) CUTE_UNROLL
      for (int h = 0; h < 2; ++h) {
        const std::uint32_t word = words[4 * kb + 2 * hi + h];
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
        load_q_codes(p, smem, req, kv_head(), m_tile(), wg_thread);
        NamedBarrier::sync(128, T::kWarpgroupSync + kWG);
        // A row's logit factor: its q scale x the cache's x log2(e) / sqrt(d), folded into the
        // exponent's FMA (> 0, so a masked -inf stays -inf; a zero row has S = 0).
        float logit_factor[2];
        for (int h = 0; h < 2; ++h)
          logit_factor[h] = fmaxf(smem.q_scale[r0 + 8 * h] * kv_scale * p.scale_log2, FLT_MIN);

        int limit[2];  // keys visible to rows r0 and r0 + 8
        for (int h = 0; h < 2; ++h) {
          const int packed = min(m_tile() * kBlockM + sm90::opaque(r0) + 8 * h, p.rows_per_head - 1);
          limit[h] = p.causal ? seqlen - p.s_q + packed / p.heads_per_kv + 1 : seqlen;
        }
        const int min_limit = p.causal ? seqlen - p.s_q + 1 : seqlen;

        float scale[2];            // of the page whose P is packed: O's factor before its P V (O is
                                   // clear at a piece's first page)
        std::uint32_t p_codes[8];  // that page's P, packed
        // S of page g (consumer count g) is complete: free its slot, softmax, pack P (x 2^8).
        // Against v2's softmax: the row scales and 2^8 in the exponent's FMA (64 multiplies a
        // page less), the masking only on pages that need it (a uniform branch, not 64
        // predicated selects a page), the reference max moved only beyond kMaxSlack (the O
        // rescale then skipped on most pages), and S only read, P packed straight from the
        // exponentials. The running sums are of P x 2^8 (divided back at the piece's end).
        const auto softmax_and_pack = [&](int page, int gg) CUTLASS_LAMBDA_FUNC_INLINE {
          warpgroup_fence_operand(tSrS);
          if (lane == 0) SignalBarrier::arrive(&smem.slot_free[gg % T::kStages]);  // S is done reading it
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
              const float m_page = paged_sm90::quad_max(page_max[h]) * logit_factor[h];
              if (m_page > run_max[h] + kMaxSlack) {  // false while both are -inf
                scale[h] = device::ex2_approx_ftz(run_max[h] - m_page);
                run_max[h] = m_page;
                row_sum[h] *= scale[h];
              } else {
                scale[h] = 1.f;
              }
              // A row that has seen only masked keys keeps max -inf: exp2(-inf) = 0 keeps P at 0.
              bias[h] = 8.f - (run_max[h] == -INFINITY ? 0.f : run_max[h]);
            }
            CUTE_UNROLL
            for (int kb = 0; kb < 2; ++kb) CUTE_UNROLL
            for (int hi = 0; hi < 2; ++hi) CUTE_UNROLL
            for (int h = 0; h < 2; ++h) {
              const int j = 2 * h + 4 * (4 * kb + 2 * hi);  // accumulator j, j + 1, j + 4, j + 5: row h
              float e[4];
              CUTE_UNROLL
              for (int q = 0; q < 4; ++q)
                e[q] =
                    device::ex2_approx_ftz(fmaf(logit(j + (q & 1) + 4 * (q >> 1)), logit_factor[h], bias[h]));
              row_sum[h] += (e[0] + e[1]) + (e[2] + e[3]);
              p_codes[4 * kb + 2 * hi + h] = codes::pack_e4m3x4(e[0], e[1], e[2], e[3]);
            }
          };
          if ((page + 1) * kBlockN > min_limit)  // the page reaches some row's limit
            body(cute::true_type{});
          else
            body(cute::false_type{});
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
        for (int page = first; page < end; ++page, ++g) {
          // The next page of the part (maybe of the next piece) into the other V^T buffer, once
          // both P V of page g - 1 are done with it: ahead of P of page g, so that warpgroup 1
          // never waits for V^T of page g + 1 (transposed after P of page g, it did: the two
          // warpgroups then ran one after the other, measured).
          if (g + 1 < total_pages) {
            if (g > 0) SignalBarrier::wait(&smem.wg1_done[(g - 1) & 1], ((g - 1) >> 1) & 1);
            pv_wait();  // own P V of page g - 1
            transpose_next(g + 1);
          }
          SignalBarrier::wait(&smem.p_ready[g & 1], (g >> 1) & 1);
          float scale[2];
          for (int h = 0; h < 2; ++h) scale[h] = smem.scale[g & 1][r0 + 8 * h];
          pv_wait();  // own P V of page g - 1 at the part's last page (none at a piece's first)
          paged_sm90::scale_rows(tOrO, scale);
          // Issued as soon as P is published (behind warpgroup 1's S of page g + 1 and P V of
          // page g) and waited for only before the next transpose.
          pv_issue(g & 1);
        }
        pv_wait();
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
    paged_sm90_fp8_v3_kernel(const __grid_constant__ Params params,
                             const __grid_constant__ CUtensorMap kv_map,
                             const __grid_constant__ CUtensorMap rope_map) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  Kernel<T>::run(params, &kv_map, &rope_map);
#endif
}

}  // namespace cutelab::mla::paged_sm90_fp8_v3
