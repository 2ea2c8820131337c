#pragma once
// The parts of the FP8-tensor-core MLA designs (paged_sm90_fp8 v2-v4, v9-v13, v17, v18) that sit outside
// the S owner's page loop: the kernel's entry (barriers, roles, setmaxnreg), the producer thread
// that stages pages, Q's e4m3 codes, the issue of S and of a warpgroup's P V, and warpgroup 0's V^T
// transposer and its page loop. A design's Kernel derives from TensorCoreKernel<T, Kernel> and
// supplies consume<kWG>; T is its Traits (v2's config.hpp has the layouts and the shared-memory
// plan; tensor_core_switches.hpp the optional switches v9-v11 set).

#include <cuda.h>

#include <cutlass/arch/barrier.h>
#include <cutlass/arch/reg_reconfig.h>
#include <cute/arch/copy_sm90_tma.hpp>
#include <cute/tensor.hpp>
#include <cutlass/detail/helper_macros.hpp>

#include "cute/mla_decode/paged_sm90/common/pieces.cuh"
#include "cute/mla_decode/paged_sm90_fp8/common/codes.cuh"
#include "cute/mla_decode/paged_sm90_fp8/common/row_order.hpp"
#include "cute/mla_decode/paged_sm90_fp8/common/tensor_core_switches.hpp"
#include "cutelab/device/sm90/opaque.cuh"
#include "cutelab/device/sm90/pdl.cuh"

namespace cutelab::mla::paged_sm90_fp8 {

template <class T>
class VtTransposer;

// A request's schedule entry and length loaded ahead, beside the part's own entry (req -1: none).
// Part y most often starts at request y (the whole-request schedule of b <= parts): with the
// guess right, the part's first page id waits for one memory round trip instead of three.
struct RequestHint {
  int req = -1;
  int num_blocks = 0;
  int seqlen = 0;
  int first_page = 0;  // block 0's page id
};

CUTE_DEVICE RequestHint load_request_hint(const paged_sm90::Params& p, int part_index) {
  RequestHint h;
  if (p.b <= 0 || p.max_blocks <= 0) return h;
  h.req = min(part_index, p.b - 1);
  h.num_blocks = p.schedule.requests[h.req].num_blocks;
  h.seqlen = p.seqlens[h.req];
  h.first_page = p.block_table[static_cast<int64_t>(h.req) * p.max_blocks];
  return h;
}

// for_each_piece with the first piece's end from `hint` where it names the part's first request.
template <class F>
CUTE_DEVICE void for_each_piece(const paged_sm90::Params& p, const PartInfo& pi, const RequestHint& hint,
                                F&& f) {
  int hinted_end = -1;
  if (pi.begin_req == hint.req) {
    const int n = min(hint.num_blocks, p.max_blocks);
    hinted_end = pi.begin_req == pi.end_req ? min(pi.end_blk, n) : n;
  }
  for (int req = pi.begin_req; req <= pi.end_req && req < p.b; ++req) {
    const int first = paged_sm90::piece_first(pi, req);
    const int end = req == pi.begin_req && hinted_end >= 0 ? hinted_end : paged_sm90::piece_end(p, pi, req);
    if (first < end) f(req, first, end);
  }
}

template <class T, class Derived>
struct TensorCoreKernel {
  static_assert(T::kWarpgroups == 2 && T::kStages == 3 && T::kThreads == 128 * (T::kWarpgroups + 1));
  using Params = paged_sm90::Params;
  using FullBarrier = cutlass::arch::ClusterTransactionBarrier;  // TMA bytes of a staged page landed
  using SignalBarrier = cutlass::arch::ClusterBarrier;  // mbarrier: release on arrive, acquire on wait
  using Element = typename T::Element;
  using Code = typename T::Code;
  using SharedStorage = typename T::SharedStorage;
  static constexpr int kBlockM = T::kBlockM;
  static constexpr int kBlockN = T::kBlockN;
  // The Traits' switches (tensor_core_switches.hpp), and what follows from them.
  static constexpr bool kSpreadRows = T::kSpreadRows;
  static constexpr int kQRegisterSteps = T::kQRegisterSteps;
  static constexpr bool kPRegisterImage = T::kPRegisterImage;
  static constexpr int kTransposerRegisters =
      T::kTransposerRegisters > 0 ? T::kTransposerRegisters : T::kConsumerRegisters;
  static constexpr int kOwnerRegisters = 2 * T::kConsumerRegisters - kTransposerRegisters;
  // S's RS atom for Q's register steps (the same shape as TiledMmaQK).
  using TiledMmaQKRegisters = decltype(cute::make_tiled_mma(
      cute::SM90::GMMA::rs_op_selector<Code, Code, float, typename T::QKShape, cute::GMMA::Major::K,
                                       cute::GMMA::Major::K>()));

  // A row's reference max moves only when the page's max passes it by more than this (log2
  // units): P x 2^8 then stays under e4m3's largest value (448 = 2^8 x 1.75).
  static constexpr float kMaxSlack = 0.8f;

  // The online softmax's reference max of one row, given the page's (scaled) max: moved where it
  // passes the reference by more than kMaxSlack (never while both are -inf), the row sum rescaled
  // with it; `factor` is what O takes (1 where it did not move).
  CUTE_DEVICE static void raise_running_max(float m_page, float& run_max, float& row_sum, float& factor) {
    if (m_page > run_max + kMaxSlack) {
      factor = device::ex2_approx_ftz(run_max - m_page);
      run_max = m_page;
      row_sum *= factor;
    } else {
      factor = 1.f;
    }
  }

  // The largest |value| of a q row's bf16 values (a thread's first kCount 16-byte units) over the
  // row's 8 threads (lanes that differ in their low three bits).
  template <int kCount, int kUnits>
  CUTE_DEVICE static float bf16_row_amax(const uint4 (&v)[kUnits]) {
    static_assert(kCount <= kUnits);
    float amax = 0.f;
    CUTE_UNROLL
    for (int m = 0; m < kCount; ++m) {
      const std::uint32_t w[4] = {v[m].x, v[m].y, v[m].z, v[m].w};
      CUTE_UNROLL
      for (int i = 0; i < 4; ++i)
        amax = fmaxf(amax,
                     fmaxf(fabsf(__uint_as_float(w[i] << 16)), fabsf(__uint_as_float(w[i] & 0xFFFF0000u))));
    }
    amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, 1));
    amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, 2));
    return fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, 4));
  }

  // A thread's first kCount units of a q row (bf16) times `inv` as e4m3 codes into Q's tile: unit m
  // is columns 8 (j + 8 m) .. + 7 of accumulator row `row`.
  template <int kCount, int kUnits>
  CUTE_DEVICE static void store_q_codes(std::uint32_t q_base, int row, int j, const uint4 (&v)[kUnits],
                                        float inv) {
    static_assert(kCount <= kUnits);
    CUTE_UNROLL
    for (int m = 0; m < kCount; ++m) {
      const std::uint32_t w[4] = {v[m].x, v[m].y, v[m].z, v[m].w};
      std::uint32_t packed_codes[2];
      CUTE_UNROLL
      for (int h = 0; h < 2; ++h)
        packed_codes[h] = pack_e4m3x4(
            __uint_as_float(w[2 * h] << 16) * inv, __uint_as_float(w[2 * h] & 0xFFFF0000u) * inv,
            __uint_as_float(w[2 * h + 1] << 16) * inv, __uint_as_float(w[2 * h + 1] & 0xFFFF0000u) * inv);
      st_shared_64(q_base + code_offset(row, 8 * (j + 8 * m)), packed_codes[0], packed_codes[1]);
    }
  }

  // Byte offset of word group k (0, 1: words 4k .. 4k + 3) of thread t in a P image: 16-byte
  // units, a warp's 512 bytes contiguous (conflict-free 16-byte stores and loads).
  CUTE_DEVICE static std::uint32_t p_image_offset(int t, int k) { return k * 2048 + t * 16; }

  // The packed row (within the M tile) that accumulator row `row` holds (row_order.hpp).
  CUTE_HOST_DEVICE static constexpr int packed_row(int row) {
    return paged_sm90_fp8::packed_row<kBlockM, kSpreadRows>(row);
  }

  // `scale_map`: T::kScaleBox's map (null without it).
  CUTE_DEVICE static void run(const Params& p, const CUtensorMap* kv_map, const CUtensorMap* rope_map,
                              const CUtensorMap* scale_map = nullptr) {
    // setmaxnreg moves registers within the CTA's launch allocation: 168 a thread at 384 threads
    // (65,536 / 384 rounded down to 8). One more and the consumers' increase waits forever.
    static_assert(T::kProducerRegisters + kTransposerRegisters + kOwnerRegisters <= 3 * 168,
                  "setmaxnreg counts above the launch allocation: the kernel would hang");
    extern __shared__ __align__(1024) char smem_raw[];
    auto& smem = *reinterpret_cast<SharedStorage*>(smem_raw);
    if (threadIdx.x == 0) {
      cute::prefetch_tma_descriptor(kv_map);
      cute::prefetch_tma_descriptor(rope_map);
      if constexpr (T::kScaleBox) cute::prefetch_tma_descriptor(scale_map);
      init_barriers(smem);
      cutlass::arch::fence_barrier_init();
    }
    // Everything above overlaps the previous kernel; the schedule and the inputs are read only after it.
    sm90::wait_for_prior_grid();
    sm90::allow_dependent_launch();  // the combine's blocks wait on the device for this grid
    const PartInfo part = p.schedule.parts[blockIdx.y];
    __syncthreads();
    if (threadIdx.x >= 256) {
      cutlass::arch::warpgroup_reg_dealloc<T::kProducerRegisters>();
      if constexpr (T::kSigmaWarp) {
        if (threadIdx.x / 32 == 9)
          Derived::sigma_pages(p, smem, part);
        else if (threadIdx.x == 256)
          produce(p, kv_map, rope_map, scale_map, smem, part);
      } else if (threadIdx.x == 256) {
        produce(p, kv_map, rope_map, scale_map, smem, part);
      }
      return;
    }
    if constexpr (kTransposerRegisters == kOwnerRegisters) {
      cutlass::arch::warpgroup_reg_alloc<T::kConsumerRegisters>();
      if (threadIdx.x < 128)
        Derived::template consume<0>(p, smem, part);
      else
        Derived::template consume<1>(p, smem, part);
    } else if (threadIdx.x < 128) {
      cutlass::arch::warpgroup_reg_alloc<kTransposerRegisters>();
      Derived::template consume<0>(p, smem, part);
    } else {
      cutlass::arch::warpgroup_reg_alloc<kOwnerRegisters>();
      Derived::template consume<1>(p, smem, part);
    }
  }

  // The barriers every design of the family has (one thread, before fence_barrier_init).
  CUTE_DEVICE static void init_barriers(SharedStorage& smem) {
    for (int s = 0; s < T::kStages; ++s) FullBarrier::init(&smem.stage_full[s], 1);
    for (int s = 0; s < 2; ++s) {
      SignalBarrier::init(&smem.vt_ready[s], 128);
      SignalBarrier::init(&smem.p_ready[s], 128);
      SignalBarrier::init(&smem.wg1_done[s], 128);
      SignalBarrier::init(&smem.final_ready[s], 128);
      SignalBarrier::init(&smem.final_read[s], 128);
    }
    // A staged page is free once S read it (one arrival per warp of warpgroup 1) and every
    // thread of warpgroup 0 transposed its part (and read the valid count); with kSigmaWarp, once
    // that warp read it too.
    for (int s = 0; s < T::kStages; ++s)
      SignalBarrier::init(&smem.slot_free[s], 4 + 128 + (T::kSigmaWarp ? 1 : 0));
    if constexpr (T::kSigmaWarp)
      for (int s = 0; s < T::kStages; ++s) SignalBarrier::init(&smem.sigma_ready[s], 1);
    if constexpr (requires { Derived::init_design_barriers(smem); }) Derived::init_design_barriers(smem);
  }

  // Warpgroup 0's pages [first, end) of a piece (v3, v4; g counts the part's pages). The next page
  // of the part (maybe of the next piece) goes into the other V^T buffer once both P V of page
  // g - 1 are done with it: ahead of P of page g, so that warpgroup 1 never waits for V^T of page
  // g + 1 (transposed after P of page g, it did: the two warpgroups then ran one after the other,
  // measured). P V of page g is issued as soon as P is published (behind warpgroup 1's S of page
  // g + 1 and P V of page g) and waited for only before the next transpose, or at the piece's end.
  // `on_page(g)` reads what a design publishes beside P and the scales.
  // With T::kTransposeAhead, `transposer`'s load_ahead / store_held replace transpose_next in the loop.
  template <class FragO, class PvWait, class TransposeNext, class PvIssue, class OnPage>
  CUTE_DEVICE static void transposer_pages(SharedStorage& smem, int first, int end, int& g, int total_pages,
                                           int r0, FragO& tOrO, PvWait&& pv_wait,
                                           TransposeNext&& transpose_next, PvIssue&& pv_issue,
                                           OnPage&& on_page, const VtTransposer<T>& transposer) {
    static_assert(!T::kTransposeAhead || T::kTransposeOneRound,
                  "the held block needs the one-round registers");
    for (int page = first; page < end; ++page, ++g) {
      if (g + 1 < total_pages) {
        if constexpr (T::kTransposeAhead) {
          typename VtTransposer<T>::Held held;
          transposer.load_ahead(smem, g + 1, held);
          if (g > 0) SignalBarrier::wait(&smem.wg1_done[(g - 1) & 1], ((g - 1) >> 1) & 1);
          pv_wait();  // own P V of page g - 1
          transposer.store_held(smem, g + 1, held);
        } else {
          if (g > 0) SignalBarrier::wait(&smem.wg1_done[(g - 1) & 1], ((g - 1) >> 1) & 1);
          pv_wait();  // own P V of page g - 1
          transpose_next(g + 1);
        }
      }
      SignalBarrier::wait(&smem.p_ready[g & 1], (g >> 1) & 1);
      float scale[2];
      for (int h = 0; h < 2; ++h) scale[h] = smem.scale[g & 1][r0 + 8 * h];
      on_page(g);
      pv_wait();  // own P V of page g - 1 at the part's last page (none at a piece's first)
      paged_sm90::scale_rows(tOrO, scale);
      pv_issue(g & 1);
    }
    pv_wait();
  }

  // The part's request loaded ahead where T::kGuessFirstRequest (else none), and the part's
  // pieces walked with it; loaded before the part's entry is first used, so both are in flight at once.
  CUTE_DEVICE static RequestHint request_hint(const Params& p) {
    if constexpr (T::kGuessFirstRequest)
      return load_request_hint(p, static_cast<int>(blockIdx.y));
    else
      return {};
  }
  template <class F>
  CUTE_DEVICE static void for_each_piece(const Params& p, const PartInfo& part, const RequestHint& hint,
                                         F&& f) {
    if constexpr (T::kGuessFirstRequest)
      paged_sm90_fp8::for_each_piece(p, part, hint, f);
    else
      paged_sm90::for_each_piece(p, part, f);
  }

  // The producer (one thread of the third warpgroup): walks the part's pages (those for_each_piece
  // visits) and stages page j in slot j % 3 once the slot's page j - 3 is free, with its count of
  // valid tokens beside it. A TMA issue can hold its thread for hundreds of cycles when many
  // bytes are in flight: on a consumer it delayed the whole page loop (measured ~750 cycles a
  // page), here it only waits.
  CUTE_DEVICE static void produce(const Params& p, const CUtensorMap* kv_map, const CUtensorMap* rope_map,
                                  const CUtensorMap* scale_map, SharedStorage& smem, const PartInfo& part) {
    const int kv_head = static_cast<int>(blockIdx.x) / p.m_tiles;
    const RequestHint hint = request_hint(p);
    int j = 0;
    for_each_piece(p, part, hint, [&](int req, int first, int end) CUTLASS_LAMBDA_FUNC_INLINE {
      const bool hinted = T::kGuessFirstRequest && req == hint.req;
      const int seqlen = hinted ? hint.seqlen : p.seqlens[req];
      const int* pages = p.block_table + static_cast<int64_t>(req) * p.max_blocks;
      int next = hinted && first == 0 ? hint.first_page : pages[first];  // page ids one load ahead
      for (int blk = first; blk < end; ++blk, ++j) {
        const int page = next;
        if (blk + 1 < end) next = pages[blk + 1];
        const int slot = j % T::kStages;
        if (j >= T::kStages) SignalBarrier::wait(&smem.slot_free[slot], (j / T::kStages - 1) & 1);
        smem.stage_valid[slot] = min(kBlockN, seqlen - blk * kBlockN);
        load_stage(p, kv_map, rope_map, scale_map, smem, slot, page, kv_head);
      }
    });
  }

  // Loads page `page` into staging slot `slot`: four 128-byte x 64-token boxes of latent codes and
  // one box of the RoPE columns (fp8_tensor: 64 bytes; fp8_token: 64 bf16 values), with
  // T::kScaleBox one of the group scales; one thread.
  CUTE_DEVICE static void load_stage(const Params& p, const CUtensorMap* kv_map, const CUtensorMap* rope_map,
                                     const CUtensorMap* scale_map, SharedStorage& smem, int slot, int page,
                                     int kv_head) {
    std::uint8_t* stage = smem.stage[slot];
    FullBarrier::arrive_and_expect_tx(&smem.stage_full[slot], T::kStageBytes);
    CUTE_UNROLL
    for (int c = 0; c < T::kLatentChunks; ++c)
      cute::SM90_TMA_LOAD_4D::copy(kv_map, &smem.stage_full[slot], p.kv_cache_hint,
                                   stage + c * T::kLatentChunkBytes, c * T::kLatentChunk, kv_head, 0, page);
    cute::SM90_TMA_LOAD_4D::copy(rope_map, &smem.stage_full[slot], p.kv_cache_hint, stage + T::kRopeOffset,
                                 static_cast<int>(T::kRopeMapColumn), kv_head, 0, page);
    if constexpr (T::kScaleBox)
      cute::SM90_TMA_LOAD_4D::copy(scale_map, &smem.stage_full[slot], p.kv_cache_hint,
                                   stage + T::kScaleOffset, static_cast<int>(kFp8ScaleOffset), kv_head, 0,
                                   page);
  }

  // Byte offset of Q code / staged code (row, column) in a page-shaped tile.
  CUTE_DEVICE static std::uint32_t code_offset(int row, int col) {
    return col < T::kHeadDimV
               ? (col / T::kLatentChunk) * T::kLatentChunkBytes + sw128_offset(row, col % T::kLatentChunk)
               : T::kRopeOffset + sw64_offset(row, col - T::kHeadDimV);
  }

  // Q's first kCols columns of a piece as e4m3 codes, one scale per row, by warpgroup 1: 8 threads
  // per row, 16 rows a pass. `row_scale(amax)` gives {the factor the row is multiplied by before
  // rounding, the scale stored in q_scale}; padded rows have amax 0. Not fenced.
  template <int kCols, class RowScale>
  CUTE_DEVICE static void quantise_q_rows(const Params& p, SharedStorage& smem, int req, int kv_head,
                                          int m_tile, int thread, RowScale&& row_scale) {
    constexpr int kUnits = kCols / 8 / 8;  // 16-byte units of q per thread and row
    const int j = thread % 8;
    const std::uint32_t q_base = cute::cast_smem_ptr_to_uint(smem.q);
    // By packed row, so that the live rows of a partly padded tile come first (one pass at <= 16).
    for (int local = thread / 8; local < kBlockM; local += 16) {
      const int row = paged_sm90_fp8::accumulator_row<kBlockM, kSpreadRows>(local);
      const int packed = m_tile * kBlockM + local;
      const bool live = packed < p.rows_per_head;
      const Element* src = paged_sm90::q_row<Element>(p, req, kv_head, live ? packed : 0);
      uint4 v[kUnits];
      CUTE_UNROLL
      for (int m = 0; m < kUnits; ++m)
        v[m] = live ? *reinterpret_cast<const uint4*>(src + 8 * (j + 8 * m)) : make_uint4(0, 0, 0, 0);
      const float2 scale = row_scale(bf16_row_amax<kUnits>(v));  // {factor, stored scale}
      store_q_codes<kUnits>(q_base, row, j, v, scale.x);
      if (j == 0) smem.q_scale[row] = scale.y;
    }
  }

  // Q of a piece as e4m3 codes with one scale per row (amax / 448), all 576 columns. Padded rows
  // and all-zero rows get codes 0 and scale 0.
  CUTE_DEVICE static void load_q_codes(const Params& p, SharedStorage& smem, int req, int kv_head, int m_tile,
                                       int thread) {
    quantise_q_rows<T::kHeadDimQK>(p, smem, req, kv_head, m_tile, thread,
                                   [](float amax) CUTLASS_LAMBDA_FUNC_INLINE {
                                     return make_float2(amax > 0.f ? 448.f / amax : 0.f, amax / 448.f);
                                   });
    cutlass::arch::fence_view_async_shared();  // generic stores, then wgmma reads
  }

  // --- the O^T designs (v13, v17: at most T::kRows live rows, spread; O^T = V^T P^T in warpgroup 0;
  // v18 uses rescale_ot_columns and the multiply loop at 64 rows) ---

  // The S owner's pages [first, end) of a piece: S of page g + 1 issued before page g's P^T is
  // published and waited for after it; `g` counts the part's pages (the publish reads it).
  template <class QkIssue, class Publish, class SoftmaxAndPack>
  CUTE_DEVICE static void own_piece_pages(int first, int end, int& g, QkIssue&& qk_issue, Publish&& publish,
                                          SoftmaxAndPack&& softmax_and_pack) {
    qk_issue(g % T::kStages, (g / T::kStages) & 1);  // the piece's first page: needs its Q
    cute::warpgroup_wait<0>();
    softmax_and_pack(first, g);
    for (int page = first; page + 1 < end; ++page, ++g) {
      qk_issue((g + 1) % T::kStages, ((g + 1) / T::kStages) & 1);  // S of page g + 1 under P^T of page g
      publish();
      cute::warpgroup_wait<0>();
      softmax_and_pack(page + 1, g + 1);
    }
    publish();
    ++g;
  }

  // Warpgroup 0's pages [first, end) of a piece in the O^T = V^T P^T designs (v13, v17; g counts
  // the part's pages): page g's V into the A registers (`load_v(g)`, which frees its slot), then,
  // once P^T of page g is published, O^T's columns rescaled, `issue_ot(b)` (the design's wgmmas over
  // P^T buffer b) waited, and buffer b freed.
  template <class FragO, class FragV, class LoadV, class IssueOt>
  CUTE_DEVICE static void multiply_piece_pages(SharedStorage& smem, int first, int end, int& g, int quad,
                                               FragO& acc, FragV& tArV, LoadV&& load_v, IssueOt&& issue_ot) {
    for (int page = first; page < end; ++page, ++g) {
      load_v(g);
      const int b = g & 1;
      SignalBarrier::wait(&smem.p_ready[b], (g >> 1) & 1);
      rescale_ot_columns(acc, smem, b, quad);
      cute::warpgroup_fence_operand(acc);
      cute::warpgroup_fence_operand(tArV);
      cute::warpgroup_arrive();
      issue_ot(b);
      cute::warpgroup_commit_batch();
      cute::warpgroup_wait<0>();
      cute::warpgroup_fence_operand(tArV);
      cute::warpgroup_fence_operand(acc);
      SignalBarrier::arrive(&smem.vt_ready[b]);  // P^T buffer b and its factors are free
    }
  }

  // Q's live rows of request `req` into L2 (9 lines of 128 bytes a row, 8 threads a row): issued as
  // the S owner starts, for the request the part most likely starts with (RequestHint), while the
  // part's entry is still on its way.
  CUTE_DEVICE static void prefetch_live_q(const Params& p, int req, int thread) {
    const int rows = min(p.rows_per_head, T::kRows);
    for (int local = thread / 8; local < rows; local += 16) {
      const char* row =
          reinterpret_cast<const char*>(paged_sm90::q_row<Element>(p, req, Derived::kv_head(), local));
      asm volatile("prefetch.global.L2 [%0];" ::"l"(row + 128 * (thread % 8)));
      if (thread % 8 == 0) asm volatile("prefetch.global.L2 [%0];" ::"l"(row + 128 * 8));
    }
  }

  // Q of a piece as e4m3 codes with one scale per row (amax / 448), as load_q_codes writes them, but
  // with kPassesInFlight passes' loads in flight at once (0: every live pass): T::kRows live rows
  // (kRows / 16 passes of 16 rows, rows thread / 8 + 16 pass of M tile m_tile), then padding passes up to
  // kBlockM. v13 / v17 (kRows 32) load both live passes at once; load_q_codes waits for each pass's loads
  // in turn, a second memory round trip at h32. v18 (kRows 64) two passes at a time (four would hold 144
  // registers of q). Rows past rows_per_head read zeros (scale 1 with kBf16Rope, else 0); padding passes:
  // codes and scale 0. Its own loop: load_q_codes rewritten around a shared row step changed v10 / v12's
  // SASS, and given a four-pass form made v13 2.5% slower at b32
  // (bench/results/2026-11-24-h200-twenty-fourth-session/, call i).
  // kBf16Rope (v17, v18): only the 512 latent columns become codes (their amax sets the scale); the 64
  // RoPE columns are stored in bf16 at T::kRopeOffset (128-byte swizzle, T::SmemLayoutRope),
  // divided by the row's scale (1 for a zero row), so that S / q_scale needs no multiply by it.
  template <bool kBf16Rope, int kPassesInFlight = 0>  // 0: every live pass
  CUTE_DEVICE static void load_live_q(const Params& p, SharedStorage& smem, int req, int kv_head, int m_tile,
                                      int thread) {
    constexpr int kUnits = T::kHeadDimQK / 64;  // 16-byte units of q per thread and row
    constexpr int kCodeUnits = kBf16Rope ? T::kHeadDimV / 64 : kUnits;
    constexpr int kLivePasses = T::kRows / 16;
    constexpr int kInFlight = kPassesInFlight > 0 ? kPassesInFlight : kLivePasses;
    static_assert(kLivePasses % kInFlight == 0 && kLivePasses <= kBlockM / 16);
    const int j = thread % 8;
    const std::uint32_t q_base = cute::cast_smem_ptr_to_uint(smem.q);
    const auto rope_offset = [&](int r) CUTLASS_LAMBDA_FUNC_INLINE {
      return static_cast<std::uint32_t>(T::kRopeOffset + r * 128 + ((j ^ (r % 8)) << 4));
    };
    CUTE_UNROLL
    for (int group = 0; group < kLivePasses / kInFlight; ++group) {
      uint4 v[kInFlight][kUnits];
      CUTE_UNROLL
      for (int k = 0; k < kInFlight; ++k) {
        const int local = thread / 8 + 16 * (kInFlight * group + k);
        const int packed = m_tile * kBlockM + local;
        const bool live = packed < p.rows_per_head;
        const Element* src = paged_sm90::q_row<Element>(p, req, kv_head, live ? packed : 0);
        CUTE_UNROLL
        for (int m = 0; m < kUnits; ++m)
          v[k][m] = live ? *reinterpret_cast<const uint4*>(src + 8 * (j + 8 * m)) : make_uint4(0, 0, 0, 0);
      }
      CUTE_UNROLL
      for (int k = 0; k < kInFlight; ++k) {
        const int row =
            paged_sm90_fp8::accumulator_row<kBlockM, true>(thread / 8 + 16 * (kInFlight * group + k));
        const float amax = bf16_row_amax<kCodeUnits>(v[k]);
        store_q_codes<kCodeUnits>(q_base, row, j, v[k], amax > 0.f ? 448.f / amax : 0.f);
        if constexpr (kBf16Rope) {
          // One more bf16 rounding of the RoPE values, far below q's e4m3 one.
          const float q_scale = amax > 0.f ? amax / 448.f : 1.f;
          const float inv_q = 1.f / q_scale;
          const uint4 r = v[k][kCodeUnits];
          st_shared_128(q_base + rope_offset(row),
                        make_uint4(scale_bf16x2(r.x, inv_q), scale_bf16x2(r.y, inv_q),
                                   scale_bf16x2(r.z, inv_q), scale_bf16x2(r.w, inv_q)));
          if (j == 0) smem.q_scale[row] = q_scale;
        } else {
          if (j == 0) smem.q_scale[row] = amax / 448.f;
        }
      }
    }
    CUTE_UNROLL
    for (int pass = kLivePasses; pass < kBlockM / 16; ++pass) {  // padding: codes 0, scale 0
      const int row = paged_sm90_fp8::accumulator_row<kBlockM, true>(thread / 8 + 16 * pass);
      CUTE_UNROLL
      for (int m = 0; m < kCodeUnits; ++m) st_shared_64(q_base + code_offset(row, 8 * (j + 8 * m)), 0u, 0u);
      if constexpr (kBf16Rope) st_shared_128(q_base + rope_offset(row), make_uint4(0, 0, 0, 0));
      if (j == 0) smem.q_scale[row] = 0.f;
    }
    cutlass::arch::fence_view_async_shared();  // generic stores, then wgmma reads
  }

  // Page buffer b's row factors (published beside P^T, by packed row) on O^T's columns: accumulator
  // i of every M tile holds packed row 2 quad + (i & 1) + 8 (i >> 2). Skipped where a warp's are all 1.
  template <class FragO>
  CUTE_DEVICE static void rescale_ot_columns(FragO& acc, const SharedStorage& smem, int b, int quad) {
    using namespace cute;
    constexpr int kCols = decltype(size<0>(acc))::value / 2;  // a thread's columns: 8 at N = 32, 16 at 64
    float sc[kCols];
    CUTE_UNROLL
    for (int c = 0; c < kCols; ++c) sc[c] = smem.scale[b][2 * quad + (c & 1) + 8 * (c >> 1)];
    bool rescale = false;
    CUTE_UNROLL
    for (int c = 0; c < kCols; ++c) rescale |= sc[c] != 1.f;
    if (__any_sync(0xffffffffu, rescale)) {
      CUTE_UNROLL
      for (int mt = 0; mt < size<1>(acc); ++mt) CUTE_UNROLL
      for (int i = 0; i < size<0>(acc); ++i) acc(i, mt, 0) *= sc[(i & 1) + 2 * (i >> 2)];
    }
  }

  // A finished piece's O^T rows of this thread into out (or its partial rows): packed rows
  // row0 + 2 quad + (c & 1) + 8 (c >> 1), c < kCols (8 at O^T's N = 32, 16 at 64) of KV head `kv_head`.
  // Waits for the owner's row state (publish_piece_state, by accumulator row), reads it and
  // `out_scale_of(state slot)` (the output factor: a constant, or what the owner published beside the
  // state); kLeader: this warpgroup releases the slot and writes lse (by warp 0's lanes 0-3); any other
  // reader orders its reads before the owner's next write itself. Then each live row's kValues values
  // (`row_values(c, inv, v)`, inv its factor) go out as kRuns runs of kValues / kRuns dims, run r at dims
  // dim0 + r x T::kLatentChunk. At 16 rows a thread the state is read row by row and the slot released
  // after the writes (held in registers beside a 128-register O^T it spilled).
  template <int kRuns, int kCols = 8, int kValues = 16, bool kLeader = true, class OutScale, class RowValues>
  CUTE_DEVICE static void write_ot_rows(const Params& p, SharedStorage& smem, int req, int piece, int quad,
                                        int dim0, int kv_head, int row0, OutScale&& out_scale_of,
                                        RowValues&& row_values) {
    constexpr int kRun = kValues / kRuns;
    static_assert(kRun == 16 || kRun == 4);
    constexpr bool kStateFirst = kCols == 8;
    const int slot_state = piece & 1;
    SignalBarrier::wait(&smem.final_ready[slot_state], (piece >> 1) & 1);
    const auto state_of = [&](int c, float& row_max, float& row_sum) CUTLASS_LAMBDA_FUNC_INLINE {
      const int acc_row = paged_sm90_fp8::accumulator_row<kBlockM, true>(2 * quad + (c & 1) + 8 * (c >> 1));
      row_max = smem.final_max[slot_state][acc_row];
      row_sum = smem.final_sum[slot_state][acc_row];
    };
    float row_max[kStateFirst ? kCols : 1], row_sum[kStateFirst ? kCols : 1];
    if constexpr (kStateFirst) {
      CUTE_UNROLL
      for (int c = 0; c < kCols; ++c) state_of(c, row_max[c], row_sum[c]);
    }
    const float out_scale = out_scale_of(slot_state);
    if constexpr (kLeader && kStateFirst) SignalBarrier::arrive(&smem.final_read[slot_state]);

    const paged_sm90::PieceRequest request{p.schedule.requests[req], p.seqlens[req]};
    const bool split = request.split.num_splits > 1;
    const int slot = request.split.split_offset + static_cast<int>(blockIdx.y) - request.split.first_part;
    const bool stale = paged_sm90::stale_piece(p, request);
    const bool writes_lse = kLeader && threadIdx.x % 128 < 4;
    CUTE_UNROLL
    for (int c = 0; c < kCols; ++c) {
      const int packed = row0 + 2 * quad + (c & 1) + 8 * (c >> 1);
      const int k = kStateFirst ? c : 0;
      if constexpr (!kStateFirst) state_of(c, row_max[0], row_sum[0]);
      if (packed >= p.rows_per_head) continue;
      const auto [inv, lse] = paged_sm90::finish_row(row_max[k], row_sum[k], stale, split, out_scale);
      float v[kValues];
      row_values(c, inv, v);
      if (!split) {
        int s = 0, head = 0;
        paged_sm90::row_coords(p, packed, kv_head, s, head);
        Element* dst = static_cast<Element*>(p.out) +
                       ((static_cast<int64_t>(req) * p.s_q + s) * p.h_q + head) * T::kHeadDimV + dim0;
        std::uint32_t w[kValues / 2];
        CUTE_UNROLL
        for (int k = 0; k < kValues / 2; ++k) {
          const cute::array<Element, 2> pair{static_cast<Element>(v[2 * k]),
                                             static_cast<Element>(v[2 * k + 1])};
          w[k] = reinterpret_cast<const std::uint32_t&>(pair);
        }
        if constexpr (kRun == 16) {
          reinterpret_cast<uint4*>(dst)[0] = make_uint4(w[0], w[1], w[2], w[3]);
          reinterpret_cast<uint4*>(dst)[1] = make_uint4(w[4], w[5], w[6], w[7]);
        } else {
          CUTE_UNROLL
          for (int r = 0; r < kRuns; ++r)
            *reinterpret_cast<uint2*>(dst + r * T::kLatentChunk) = make_uint2(w[2 * r], w[2 * r + 1]);
        }
        if (writes_lse) p.lse[(static_cast<int64_t>(req) * p.h_q + head) * p.s_q + s] = lse;
      } else {
        const int64_t slot_row =
            (static_cast<int64_t>(slot) * p.h_kv + kv_head) * p.partials.rows_per_head + packed;
        float* dst = static_cast<float*>(p.partials.out) + slot_row * T::kHeadDimV + dim0;
        CUTE_UNROLL
        for (int k = 0; k < kValues / 4; ++k) {  // four dims at dim0 + 4 k (one run) or at run k's start
          float* four = kRun == 16 ? dst + 4 * k : dst + k * T::kLatentChunk;
          *reinterpret_cast<float4*>(four) = make_float4(v[4 * k], v[4 * k + 1], v[4 * k + 2], v[4 * k + 3]);
        }
        if (writes_lse) p.partials.lse[slot_row] = lse;
      }
    }
    if constexpr (kLeader && !kStateFirst) SignalBarrier::arrive(&smem.final_read[slot_state]);
  }

  // V of the page staged in `slot` for scale groups kFirstGroup .. kFirstGroup + kCount - 1 into `tArV`
  // (an O^T A fragment of 2 kCount M tiles, two a group): M tile mt, k-step ks of this thread hold dims
  // 128 (kFirstGroup + mt / 2) + dim0 + 2 (mt % 2) + v1 (v1: the fragment's row half; dim0 = 32 warp +
  // 4 (lane / 4)) of tokens 32 ks + 16 v2 + 2 quad + {0, 1, 8, 9} (token_at): one 4-byte load per token
  // and group, one 4 x 4 byte transpose per four tokens. Tokens at or past `valid` read 0 (they may hold
  // NaN codes, and 0 * NaN is NaN in the tensor core). Not fenced.
  template <int kFirstGroup, int kCount, class FragV>
  CUTE_DEVICE static void load_v_groups(const SharedStorage& smem, int slot, int valid, int quad, int dim0,
                                        FragV& tArV) {
    constexpr std::uint32_t kSelA = pair_selector(0, 1), kSelB = pair_selector(2, 3);
    std::uint32_t* a_regs = reinterpret_cast<std::uint32_t*>(cute::raw_pointer_cast(tArV.data()));
    const std::uint32_t src = cute::cast_smem_ptr_to_uint(smem.stage[0]) + slot * T::kStageBytes;
    // Byte offset of this thread's 4 bytes of token row t in group gr's chunk (128-byte swizzle: the
    // 16-byte unit dim0 / 16 moves with t % 8; conflict-free for a warp).
    const auto v_offset = [&](int gr, int t) CUTLASS_LAMBDA_FUNC_INLINE {
      return static_cast<std::uint32_t>(gr * T::kLatentChunkBytes + t * 128 +
                                        ((((dim0 >> 4) ^ (t % 8)) << 4) | (dim0 & 15)));
    };
    CUTE_UNROLL
    for (int ks = 0; ks < 2; ++ks) CUTE_UNROLL
    for (int v2 = 0; v2 < 2; ++v2) CUTE_UNROLL
    for (int gl = 0; gl < kCount; ++gl) {
      std::uint32_t w[4];  // tokens 32 ks + 16 v2 + 2 quad + {0, 1, 8, 9}
      CUTE_UNROLL
      for (int i = 0; i < 4; ++i) {
        const int t = 32 * ks + 16 * v2 + 2 * quad + (i & 1) + 8 * (i >> 1);
        w[i] = ld_shared_32(src + v_offset(kFirstGroup + gl, t));
        if (valid < kBlockN && t >= valid) w[i] = 0u;
      }
      std::uint32_t cols[4];
      transpose4x4(w[0], w[1], w[2], w[3], kSelA, kSelB, cols);
      CUTE_UNROLL
      for (int jj = 0; jj < 4; ++jj) {  // dim dim0 + jj of the group: M tile 2 gl + jj / 2, row half jj % 2
        const int mt = 2 * gl + jj / 2;
        a_regs[(jj % 2) + 2 * v2 + 4 * mt + 8 * kCount * ks] = cols[jj];
      }
    }
  }

  // O^T of groups kFirstGroup .. kFirstGroup + kCount - 1 (M tiles 2 g and 2 g + 1 of each: load_v_groups'
  // fragment) += V^T P^T, each group times its own P^T tile of buffer b (T::SmemLayoutPT, T::kPTBytes
  // apart); inside the caller's warpgroup_arrive / commit.
  template <int kFirstGroup, int kCount, class Mma, class ThrMma, class FragV, class FragO>
  CUTE_DEVICE static void issue_ot_groups(Mma& mma, const ThrMma& thr, const FragV& tArV, FragO& acc,
                                          SharedStorage& smem, int b) {
    using namespace cute;
    mma.accumulate_ = GMMA::ScaleOut::One;
    CUTE_UNROLL
    for (int gl = 0; gl < kCount; ++gl) {
      Tensor tBsP = thr.partition_B(make_tensor(
          make_smem_ptr(reinterpret_cast<Code*>(sm90::opaque(smem.p[b]) + (kFirstGroup + gl) * T::kPTBytes)),
          typename T::SmemLayoutPT{}));
      Tensor tBrP = thr.make_fragment_B(tBsP);  // (MMA,1,2)
      CUTE_UNROLL
      for (int ks = 0; ks < size<2>(tArV); ++ks) CUTE_UNROLL
      for (int h = 0; h < 2; ++h)
        cute::gemm(mma, tArV(_, 2 * gl + h, ks), tBrP(_, 0, ks), acc(_, 2 * gl + h, 0));
    }
  }

  // The sigma warp's read of a staged page's group scales (v17, v18; `scales` the slot's scale rows):
  // lane l's tokens l and l + 32, each token's four scales (0 past the `valid` tokens, whatever the slot
  // holds there) given to on_token(t, s); returns the largest over the warp.
  template <class OnToken>
  CUTE_DEVICE static float page_scale_max(std::uint32_t scales, int valid, int lane, OnToken&& on_token) {
    float m = 0.f;
    CUTE_UNROLL
    for (int k = 0; k < 2; ++k) {
      const int t = lane + 32 * k;
      const uint4 w = ld_shared_128(scales + t * T::kScaleRowBytes);
      const float4 s = t < valid ? make_float4(__uint_as_float(w.x), __uint_as_float(w.y),
                                               __uint_as_float(w.z), __uint_as_float(w.w))
                                 : make_float4(0.f, 0.f, 0.f, 0.f);
      m = fmaxf(m, fmaxf(fmaxf(s.x, s.y), fmaxf(s.z, s.w)));
      on_token(t, s);
    }
    CUTE_UNROLL
    for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
    return m;
  }

  // The sigma warp's step for a page whose valid scales' largest is m (v17, v18): the piece's running
  // sigma and P^T's unit sigma' (sigma, at least 2^-100, so that P x 2^8 / sigma' stays finite; 1 while
  // every scale of the piece is 0: P^T is 0 then, and so is O^T) move on; returns O^T's factor
  // sigma'_old / sigma'_new (0 when sigma leaves 0, 1 when it does not move).
  CUTE_DEVICE static float advance_sigma(float m, float& sigma, float& unit) {
    const float sigma_new = fmaxf(sigma, m);
    const float unit_new = sigma_new > 0.f ? fmaxf(sigma_new, 0x1p-100f) : 1.f;
    const float factor = sigma_new > sigma ? (sigma > 0.f ? unit / unit_new : 0.f) : 1.f;
    sigma = sigma_new;
    unit = unit_new;
    return factor;
  }

  // Q's last kQRegisterSteps latent k-steps from the codes in shared memory into the S owner's RS
  // operand registers (once a piece, after its codes are written and synced).
  template <class ThrMmaRegs, class FragQ>
  CUTE_DEVICE static void read_q_registers(const ThrMmaRegs& thr_rs, FragQ& tSrQReg, SharedStorage& smem) {
    using namespace cute;
    Tensor tSsQ = thr_rs.partition_A(make_tensor(make_smem_ptr(reinterpret_cast<const Code*>(smem.q)),
                                                 typename T::SmemLayoutLatent{}));  // (MMA,1,16)
    constexpr int kFirst = size<2>(tSsQ) - kQRegisterSteps;
    CUTE_UNROLL
    for (int k = 0; k < kQRegisterSteps; ++k) copy(tSsQ(_, _, kFirst + k), tSrQReg(_, _, k));
  }

  // S of the page staged in `slot` into `acc` (Q's codes against the page), issued and
  // committed, not waited. With kQRegisterSteps, Q's last latent k-steps come from `tSrQReg`
  // (read_q_registers; one fragment, passed only then): those steps read only K from shared memory.
  template <class Mma, class ThrMma, class FragS, class... FragQ>
  CUTE_DEVICE static void issue_s(Mma& mma_qk, const ThrMma& thr_qk, FragS& acc, SharedStorage& smem,
                                  int slot, int phase, FragQ&... tSrQReg) {
    using namespace cute;
    static_assert(sizeof...(FragQ) == (kQRegisterSteps > 0 ? 1 : 0));
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
    constexpr int kFirst = size<2>(tSrQ) - kQRegisterSteps;
    FullBarrier::wait(&smem.stage_full[slot], phase);
    warpgroup_fence_operand(acc);
    (warpgroup_fence_operand(tSrQReg), ...);
    warpgroup_arrive();
    mma_qk.accumulate_ = GMMA::ScaleOut::Zero;
    CUTE_UNROLL
    for (int k = 0; k < kFirst; ++k) {
      cute::gemm(mma_qk, tSrQ(_, _, k), tSrK(_, _, k), acc);
      mma_qk.accumulate_ = GMMA::ScaleOut::One;
    }
    if constexpr (kQRegisterSteps > 0) {
      TiledMmaQKRegisters mma_rs;
      mma_rs.accumulate_ = kFirst == 0 ? GMMA::ScaleOut::Zero : GMMA::ScaleOut::One;
      auto thr_rs = mma_rs.get_thread_slice(threadIdx.x % 128);
      Tensor tSrKRegs = thr_rs.make_fragment_B(thr_rs.partition_B(
          make_tensor(make_smem_ptr(k_codes), typename T::SmemLayoutLatent{})));  // (MMA,1,16)
      const auto register_steps = [&](auto& q) CUTLASS_LAMBDA_FUNC_INLINE {
        CUTE_UNROLL
        for (int k = 0; k < kQRegisterSteps; ++k) {
          cute::gemm(mma_rs, q(_, _, k), tSrKRegs(_, _, kFirst + k), acc);
          mma_rs.accumulate_ = GMMA::ScaleOut::One;
        }
      };
      (register_steps(tSrQReg), ...);
      mma_qk.accumulate_ = GMMA::ScaleOut::One;
    }
    CUTE_UNROLL
    for (int k = 0; k < size<2>(tSrQRope); ++k) cute::gemm(mma_qk, tSrQRope(_, _, k), tSrKRope(_, _, k), acc);
    warpgroup_commit_batch();
    (warpgroup_fence_operand(tSrQReg), ...);
    warpgroup_fence_operand(acc);
  }

  // The S owner's packed P (`words`, e4m3 codes in the A operand's register order: word
  // 4 kb + 2 hi + h holds row r0 + 8 h, positions 32 kb + 16 hi + 4 (lane % 4) + 0..3) into its P V
  // operand registers and into P tile `buffer` for warpgroup 0.
  template <class FragP>
  CUTE_DEVICE static void publish_p(FragP& tOrP, SharedStorage& smem, int buffer, int r0, int col0,
                                    const std::uint32_t (&words)[8]) {
    std::uint32_t* regs = reinterpret_cast<std::uint32_t*>(cute::raw_pointer_cast(tOrP.data()));
    const std::uint32_t p_base = cute::cast_smem_ptr_to_uint(smem.p[buffer]);
    if constexpr (kPRegisterImage) {
      CUTE_UNROLL
      for (int i = 0; i < 8; ++i) regs[i] = words[i];
      const int t = threadIdx.x % 128;
      CUTE_UNROLL
      for (int k = 0; k < 2; ++k)
        asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};\n" ::"r"(p_base + p_image_offset(t, k)),
                     "r"(words[4 * k]), "r"(words[4 * k + 1]), "r"(words[4 * k + 2]), "r"(words[4 * k + 3])
                     : "memory");
      // Read by generic loads: the p_ready barrier's release orders them, no proxy fence.
    } else {
      CUTE_UNROLL
      for (int kb = 0; kb < 2; ++kb) CUTE_UNROLL
      for (int hi = 0; hi < 2; ++hi) CUTE_UNROLL
      for (int h = 0; h < 2; ++h) {
        const std::uint32_t word = words[4 * kb + 2 * hi + h];
        regs[4 * kb + 2 * hi + h] = word;
        const std::uint32_t addr = p_base + sw64_offset(r0 + 8 * h, 32 * kb + 16 * hi + col0 * 2);
        asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(addr), "r"(word) : "memory");
      }
      cutlass::arch::fence_view_async_shared();  // generic stores, then warpgroup 0's wgmma reads
    }
  }

  // O[:, kWG * 256 ...] += P V of V^T buffer `buffer`, issued and committed, not waited: the S
  // owner (kWG = 1) multiplies P from its registers, warpgroup 0 from P tile `buffer` (SS) or, with
  // kPRegisterImage, from the owner's registers loaded out of the image (RS).
  template <int kWG, class MmaRegs, class ThrRegs, class MmaSmem, class ThrSmem, class FragP, class FragO>
  CUTE_DEVICE static void issue_pv(MmaRegs& mma_pv_regs, const ThrRegs& thr_pv_regs, MmaSmem& mma_pv_smem,
                                   const ThrSmem& thr_pv_smem, FragP& tOrP, FragO& tOrO, SharedStorage& smem,
                                   int buffer) {
    using namespace cute;
    constexpr bool kOwner = kWG == 1;
    if constexpr (!kOwner && kPRegisterImage) {  // the S owner's P registers, as it wrote them
      std::uint32_t* regs = reinterpret_cast<std::uint32_t*>(cute::raw_pointer_cast(tOrP.data()));
      const std::uint32_t p_base = cute::cast_smem_ptr_to_uint(smem.p[buffer]);
      const int t = threadIdx.x % 128;
      CUTE_UNROLL
      for (int k = 0; k < 2; ++k)
        asm volatile("ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];\n"
                     : "=r"(regs[4 * k]), "=r"(regs[4 * k + 1]), "=r"(regs[4 * k + 2]), "=r"(regs[4 * k + 3])
                     : "r"(p_base + p_image_offset(t, k))
                     : "memory");
    }
    const auto v_half = [&]() CUTLASS_LAMBDA_FUNC_INLINE {
      return make_tensor(
          make_smem_ptr(reinterpret_cast<Code*>(sm90::opaque(smem.vt[0]) + buffer * 2 * T::kVtHalfBytes +
                                                kWG * T::kVtHalfBytes)),
          typename T::SmemLayoutVt{});  // (256,BLK_N)
    };
    paged_sm90::issue_half_pv<kOwner || kPRegisterImage>(
        mma_pv_regs, thr_pv_regs, mma_pv_smem, thr_pv_smem, tOrP, tOrO,
        [&]() CUTLASS_LAMBDA_FUNC_INLINE {
          return make_tensor(make_smem_ptr(reinterpret_cast<Code*>(sm90::opaque(smem.p[buffer]))),
                             typename T::SmemLayoutP{});
        },
        v_half);
  }
};

// Warpgroup 0's transposer: page j (staged in slot j % 3) into V^T buffer j % 2, in the token
// order of P's registers (token_at).
template <class T>
class VtTransposer {
 public:
  using SignalBarrier = cutlass::arch::ClusterBarrier;
  using SharedStorage = typename T::SharedStorage;

  CUTE_DEVICE VtTransposer(SharedStorage& smem, int warp, int lane)
      : c(2 * warp + (lane >> 4)), u(lane & 3), tg((lane >> 2) & 3), odd(tg & 1) {
    // The V^T block of this thread: 16 dims (unit u of latent chunk c) x 16 positions (group tg),
    // in two batches of 8 positions, odd groups taking them in the other order; each thread
    // rotates its dims by u. The warp's 16-byte loads and 8-byte stores are then free of bank
    // conflicts (checked offline over every case). Every address is a per-thread constant plus
    // an immediate: computed in the loop, the addressing was half of its 557 instructions.
    sel_a = pair_selector(0 ^ u, 1 ^ u);
    sel_b = pair_selector(2 ^ u, 3 ^ u);
    // Loads, batch b: token t = 16 tg + 4 b + token_at(k) (token_at(8 b + k) = token_at(k) + 4 b
    // for k < 8), at sw128_offset(t, 16 U) = 128 t + ((U ^ (t % 8)) << 4) of chunk c / 2, U the
    // unit in the 128-byte row; t % 8 = (4 b) ^ (token_at(k) % 8).
    const int unit = 4 * (c % 2) + u;
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
    CUTE_UNROLL
    for (int jj = 0; jj < 4; ++jj) st_row[jj] = 64 * (jj ^ u) + ((tg ^ ((jj ^ u) >> 1)) << 4);
    st_base =
        cute::cast_smem_ptr_to_uint(smem.vt[0]) + (c / 4) * T::kVtHalfBytes + ((c % 4) * 64 + 16 * u) * 64;
  }

  // Page j (staged in slot j % 3) into V^T buffer j % 2; with kMask, tokens at or past `valid`
  // become 0 (they may hold NaN codes, and 0 * NaN is NaN in the tensor core).
  template <bool kMask>
  CUTE_DEVICE void transpose_page(int slot, int buffer, int valid) const {
    const std::uint32_t src_slot = slot * T::kStageBytes;
    const std::uint32_t dst_buffer = st_base + buffer * 2 * T::kVtHalfBytes;
    const auto load = [&](int step, uint4(&rows)[8]) CUTLASS_LAMBDA_FUNC_INLINE {
      const std::uint32_t src = ld_base[step] + src_slot;
      CUTE_UNROLL
      for (int k = 0; k < 8; ++k) {
        const int tk = token_at(k);
        rows[k] = ld_shared_128(src + tk * 128 + (ld_swz[step] ^ ((tk % 8) << 4)));
        if constexpr (kMask)
          if (16 * tg + static_cast<int>(st_batch[step] / 2) + tk >= valid) rows[k] = make_uint4(0, 0, 0, 0);
      }
    };
    // kOneRound (Traits::kTransposeOneRound): both batches' loads in flight at once.
    if constexpr (kOneRound) {
      uint4 rows[2][8];
      CUTE_UNROLL
      for (int step = 0; step < 2; ++step) load(step, rows[step]);
      CUTE_UNROLL
      for (int step = 0; step < 2; ++step) store(step, dst_buffer, rows[step]);
    } else {
      CUTE_UNROLL
      for (int step = 0; step < 2; ++step) {
        uint4 rows[8];
        load(step, rows);
        store(step, dst_buffer, rows);
      }
    }
    cutlass::arch::fence_view_async_shared();  // generic stores, then wgmma reads
  }

  // load_rows, permute and store_cols: transpose_page's load and store()'s two halves as separate
  // steps, for kTransposeAhead (transpose_page and store keep their own copies, so that the
  // versions without the switch compile to the SASS they were measured with).

  // Batch `step` of this thread's block of the page in slot offset `src_slot` (rows as loaded);
  // with kMask, tokens at or past `valid` read as 0.
  template <bool kMask>
  CUTE_DEVICE void load_rows(int step, std::uint32_t src_slot, int valid, uint4 (&rows)[8]) const {
    const std::uint32_t src = ld_base[step] + src_slot;
    CUTE_UNROLL
    for (int k = 0; k < 8; ++k) {
      const int tk = token_at(k);
      rows[k] = ld_shared_128(src + tk * 128 + (ld_swz[step] ^ ((tk % 8) << 4)));
      if constexpr (kMask)
        if (16 * tg + static_cast<int>(st_batch[step] / 2) + tk >= valid) rows[k] = make_uint4(0, 0, 0, 0);
    }
  }

  // Rows as loaded -> the words store() writes for dims 4w .. 4w + 3: cols[token quad][dim jj ^ u].
  CUTE_DEVICE void permute(int w, const uint4 (&rows)[8], std::uint32_t (&cols)[2][4]) const {
    CUTE_UNROLL
    for (int quad = 0; quad < 2; ++quad) {
      const auto word = [&](int k) CUTLASS_LAMBDA_FUNC_INLINE {
        const uint4& r = rows[4 * quad + k];
        return w == 0 ? r.x : w == 1 ? r.y : w == 2 ? r.z : r.w;
      };
      transpose4x4(word(0), word(1), word(2), word(3), sel_a, sel_b, cols[quad]);
    }
  }

  // Batch `step`'s permuted words for dims 4w .. 4w + 3 into V^T buffer `dst_buffer`.
  CUTE_DEVICE void store_cols(int step, int w, std::uint32_t dst_buffer,
                              const std::uint32_t (&cols)[2][4]) const {
    const std::uint32_t dst = dst_buffer + st_batch[step];
    CUTE_UNROLL
    for (int jj = 0; jj < 4; ++jj)
      st_shared_64(dst + 256 * w + (st_row[jj] ^ ((w % 2) << 5)), cols[0][jj], cols[1][jj]);
  }

  // Batch `step` of this thread's V^T block (rows as loaded) into V^T buffer `dst_buffer`.
  CUTE_DEVICE void store(int step, std::uint32_t dst_buffer, const uint4 (&rows)[8]) const {
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
        transpose4x4(word(0), word(1), word(2), word(3), sel_a, sel_b, cols[quad]);
      }
      CUTE_UNROLL
      for (int jj = 0; jj < 4; ++jj)
        st_shared_64(dst + 256 * w + (st_row[jj] ^ ((w % 2) << 5)), cols[0][jj], cols[1][jj]);
    }
  }

  // This thread's V^T block of a page, permuted, as store_held writes it: [step][w][quad][jj].
  struct Held {
    std::uint32_t cols[2][4][2][4];
  };

  // T::kTransposeAhead's first half: waits for page j, loads and permutes this thread's block into
  // `held`, and frees the page's slot (after the proxy fence: the next TMA copy may refill it at once,
  // docs/knowledge/anti-patterns/generic-reads-released-to-tma-without-proxy-fence.md).
  CUTE_DEVICE void load_ahead(SharedStorage& smem, int j, Held& held) const {
    const int slot = j % T::kStages;
    SignalBarrier::wait(&smem.stage_full[slot], (j / T::kStages) & 1);
    const int valid = smem.stage_valid[slot];
    const std::uint32_t src_slot = slot * T::kStageBytes;
    uint4 rows[2][8];
    // A warp-uniform choice: only a request's last page has tokens past its length.
    if (valid < kBlockN) {
      CUTE_UNROLL
      for (int step = 0; step < 2; ++step) load_rows<true>(step, src_slot, valid, rows[step]);
    } else {
      CUTE_UNROLL
      for (int step = 0; step < 2; ++step) load_rows<false>(step, src_slot, kBlockN, rows[step]);
    }
    CUTE_UNROLL
    for (int step = 0; step < 2; ++step) CUTE_UNROLL
    for (int w = 0; w < 4; ++w) permute(w, rows[step], held.cols[step][w]);
    cutlass::arch::fence_view_async_shared();
    SignalBarrier::arrive(&smem.slot_free[slot]);
  }

  // The second half, once V^T buffer j % 2 is free (both P V of page j - 2 complete): the held
  // block into it, then V^T j ready.
  CUTE_DEVICE void store_held(SharedStorage& smem, int j, const Held& held) const {
    const std::uint32_t dst_buffer = st_base + (j & 1) * 2 * T::kVtHalfBytes;
    CUTE_UNROLL
    for (int step = 0; step < 2; ++step) CUTE_UNROLL
    for (int w = 0; w < 4; ++w) store_cols(step, w, dst_buffer, held.cols[step][w]);
    cutlass::arch::fence_view_async_shared();  // generic stores, then wgmma reads
    // Every thread arrives: its arrival also releases its reads of page j - 2's P scales.
    SignalBarrier::arrive(&smem.vt_ready[j & 1]);
  }

  // Waits for page j, transposes it, frees its slot and signals V^T j ready.
  CUTE_DEVICE void next(SharedStorage& smem, int j) const { next_when(smem, j, smem.stage_full); }

  // The same once `ready[j % 3]` completes its phase for page j: the page landed (v2, v3), or
  // the page was requantised in place (v4).
  CUTE_DEVICE void next_when(SharedStorage& smem, int j, std::uint64_t (&ready)[T::kStages]) const {
    const int slot = j % T::kStages;
    SignalBarrier::wait(&ready[slot], (j / T::kStages) & 1);
    const int valid = smem.stage_valid[slot];
    // A warp-uniform choice: only a request's last page has tokens past its length.
    if (valid < kBlockN)
      this->template transpose_page<true>(slot, j & 1, valid);
    else
      this->template transpose_page<false>(slot, j & 1, kBlockN);
    SignalBarrier::arrive(&smem.slot_free[slot]);
    // Every thread arrives: its arrival also releases its reads of page j - 2's P scales.
    SignalBarrier::arrive(&smem.vt_ready[j & 1]);
  }

 private:
  static constexpr int kBlockN = T::kBlockN;
  static constexpr bool kOneRound = T::kTransposeOneRound;
  int c, u, tg, odd;
  std::uint32_t sel_a, sel_b;
  std::uint32_t ld_base[2], ld_swz[2], st_batch[2];
  std::uint32_t st_row[4];  // [jj]: 64 (jj ^ u) + the swizzle of an even w (odd w: bit 5 flipped)
  std::uint32_t st_base;
};

}  // namespace cutelab::mla::paged_sm90_fp8
