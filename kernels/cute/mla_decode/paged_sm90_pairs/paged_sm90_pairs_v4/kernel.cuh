#pragma once
// paged_sm90_pairs v4 device code. config.hpp has the design in one paragraph, README.md the
// reasoning and the measurements.

#include <cuda.h>

#include <cutlass/arch/barrier.h>
#include <cutlass/arch/reg_reconfig.h>
#include <cute/tensor.hpp>
#include <cutlass/detail/helper_macros.hpp>

#include "cute/mla_decode/paged_sm90/common/pieces.cuh"
#include "cute/mla_decode/paged_sm90_pairs/paged_sm90_pairs_v4/config.hpp"
#include "cutelab/device/fast_math.cuh"
#include "cutelab/device/sm90/opaque.cuh"
#include "cutelab/device/sm90/pdl.cuh"

namespace cutelab::mla::paged_sm90_pairs_v4 {

using paged_sm90::Params;
using FullBarrier = cutlass::arch::ClusterTransactionBarrier;  // the producer's arrival + a chunk's TMA bytes
using NamedBarrier = cutlass::arch::NamedBarrier;
using SignalBarrier = cutlass::arch::ClusterBarrier;  // mbarrier: release on arrive, acquire on wait

// kPartials: what split pieces write (fp32, or out's dtype: half the partial bytes).
template <class T, PartialFormat kPartials>
struct Kernel {
  static_assert(T::kStages == 2 && T::kWarpgroups == 2);
  using Element = typename T::Element;
  using SharedStorage = typename T::SharedStorage;
  static constexpr int kBlockM = T::kBlockM;
  static constexpr int kBlockN = T::kBlockN;
  static constexpr int kSteps = T::kQKStepsPerChunk;
  static constexpr int kSplit = T::kGroupSplit;
  static constexpr int kThreads = T::kConsumerThreads;  // the named barriers' hand-offs

  CUTE_DEVICE static float base_of(float running_max) { return running_max == -INFINITY ? 0.f : running_max; }

  CUTE_DEVICE static void run(const Params& p, const CUtensorMap* kv_map, const CUtensorMap* q_map) {
    extern __shared__ __align__(1024) char smem_raw[];
    auto& smem = *reinterpret_cast<SharedStorage*>(smem_raw);
    if (threadIdx.x == 0) {
      cute::prefetch_tma_descriptor(kv_map);
      cute::prefetch_tma_descriptor(q_map);
      FullBarrier::init(&smem.q_ready, 1);
      for (int s = 0; s < T::kStages; ++s) {
        for (int c = 0; c < T::kNumChunks; ++c) FullBarrier::init(&smem.kv_ready[s][c], 1);
        for (int g = 0; g < 2; ++g) SignalBarrier::init(&smem.kv_free[s][g], 1);
      }
      SignalBarrier::init(&smem.max_b_ready, 128);
      for (int w = 0; w < T::kWarpgroups; ++w) {
        SignalBarrier::init(&smem.sum_ready[w], 128);
        SignalBarrier::init(&smem.sum_read[w], 128);
      }
      cutlass::arch::fence_barrier_init();
    }
    // Everything above overlaps the previous kernel; the schedule is read only after it.
    sm90::wait_for_prior_grid();
    sm90::allow_dependent_launch();  // the combine's blocks wait on the device for this grid
    const PartInfo part = p.schedule.parts[blockIdx.y];
    __syncthreads();
    if (threadIdx.x >= T::kConsumerThreads) {
      cutlass::arch::warpgroup_reg_dealloc<T::kProducerRegisters>();
      if (threadIdx.x == T::kConsumerThreads) produce(p, kv_map, smem, part);
      return;
    }
    cutlass::arch::warpgroup_reg_alloc<T::kConsumerRegisters>();
    if (threadIdx.x < 128)
      consume<0>(p, q_map, smem, part);
    else
      consume<1>(p, q_map, smem, part);
  }

  // Writes this warpgroup's O columns [col_base, col_base + 256) of a finished piece through its P tile
  // (free once both warpgroups have handed over their row sums), 64 columns a round: stmatrix in, then
  // 16-byte loads and stores, a warp's store four whole 128-byte row segments where write_piece's
  // stores from the accumulators put 8 bytes a lane over eight rows (four times the line requests).
  // 0.9% faster at b128 h128 t4096, where every part writes at once (sixty-second session); fp32
  // partial rows keep write_piece's form. write_piece's rules for lse, stale pieces and padded rows.
  template <class FragO>
  CUTE_DEVICE static void write_through_p_tile(const Params& p, int req, int kv_head, int m_tile, int part, int r0,
                                               int col0, int col_base, bool writes_lse, const float (&row_max)[2],
                                               const float (&row_sum)[2], const FragO& tOrO, Element* tile,
                                               int wg_thread, int barrier) {
    const paged_sm90::PieceRequest request{p.schedule.requests[req], p.seqlens[req]};
    const RequestSplit& rs = request.split;
    const bool split = rs.num_splits > 1;
    if (split && kPartials == PartialFormat::fp32) {
      paged_sm90::write_piece<Element, T::kHeadDimV, kBlockM, kPartials>(
          p, req, request, kv_head, m_tile, part, r0, col_base + col0, writes_lse, row_max, row_sum, tOrO);
      return;
    }
    const int slot = rs.split_offset + part - rs.first_part;
    const bool stale = paged_sm90::stale_piece(p, request);
    float inv[2];
    for (int h = 0; h < 2; ++h) {
      const paged_sm90::RowFinish f = paged_sm90::finish_row(row_max[h], row_sum[h], stale, split, 1.f);
      inv[h] = f.inv;
      const int packed = m_tile * kBlockM + r0 + 8 * h;
      if (writes_lse && packed < p.rows_per_head) {
        if (split)
          p.partials.lse[paged_sm90::partial_row(p, slot, kv_head, packed)] = f.lse;
        else
          p.lse[paged_sm90::out_row(p, req, kv_head, packed).lse] = f.lse;
      }
    }
    // This thread stores 16 bytes (`chunk`) of the tile's rows wg_thread / 8 + 16 j.
    const int chunk = wg_thread % 8;
    Element* dst[4];
    bool live[4];
    for (int j = 0; j < 4; ++j) {
      const int packed = m_tile * kBlockM + wg_thread / 8 + 16 * j;
      live[j] = packed < p.rows_per_head;
      const int clamped = min(packed, p.rows_per_head - 1);
      const int64_t row = split ? paged_sm90::partial_row(p, slot, kv_head, clamped)
                                : paged_sm90::out_row(p, req, kv_head, clamped).out;
      dst[j] = static_cast<Element*>(split ? p.partials.out : p.out) + row * T::kHeadDimV + col_base + chunk * 8;
    }
    const char* bytes = reinterpret_cast<const char*>(tile);
    CUTE_UNROLL
    for (int m = 0; m < T::kVColsPerWarpgroup / 64; ++m) {
      // Columns 64 m .. 64 m + 63: accumulators 32 m .. 32 m + 31 in the P tile's register order.
      auto rows = cute::make_tensor<Element>(cute::Shape<cute::Int<32>>{});
      CUTE_UNROLL
      for (int i = 0; i < 32; ++i) rows(i) = static_cast<Element>(tOrO(32 * m + i) * inv[(i >> 1) & 1]);
      paged_sm90::store_p<T, false>(tile, rows, (wg_thread / 32) * 16, wg_thread % 32);
      NamedBarrier::sync(128, barrier);
      CUTE_UNROLL
      for (int j = 0; j < 4; ++j) {
        const int r = wg_thread / 8 + 16 * j;  // the tile's 128-byte swizzle: 16-byte chunk c of row r at c ^ (r % 8)
        const uint4 v = *reinterpret_cast<const uint4*>(bytes + r * 128 + (((chunk ^ r) & 7) << 4));
        if (live[j]) *reinterpret_cast<uint4*>(dst[j] + 64 * m) = v;
      }
      NamedBarrier::sync(128, barrier);  // read before the next round (or the next piece's P) overwrites it
    }
  }

  // One thread: the part's pages in the consumers' order, a pair at a time (page j of a piece in buffer
  // j % 2, each piece from buffer 0), each column group loaded once its last reader has freed it. Within
  // a pair the groups go in the order they free up: a's group 0 (warpgroup 0's P_a V), a's group 1
  // (warpgroup 1's P_a V, under its softmax of b), b's group 1 (warpgroup 1's P_b V), b's group 0
  // (warpgroup 0's P_b V); each next S starts on the group its own warpgroup freed.
  CUTE_DEVICE static void produce(const Params& p, const CUtensorMap* kv_map, SharedStorage& smem,
                                  const PartInfo& part) {
    const int kv_head = static_cast<int>(blockIdx.x) / p.m_tiles;
    int uses[2] = {0, 0};  // pages loaded into each buffer so far
    const auto load = [&](auto group, int buf, int page_id) CUTLASS_LAMBDA_FUNC_INLINE {
      constexpr int kGroup = decltype(group)::value;
      if (uses[buf] > 0) SignalBarrier::wait(&smem.kv_free[buf][kGroup], (uses[buf] - 1) & 1);
      paged_sm90::load_page_chunks<T, kGroup == 0 ? 0 : kSplit, kGroup == 0 ? kSplit : T::kNumChunks, true>(
          p, kv_map, smem.kv[buf].data(), smem.kv_ready[buf], page_id, kv_head);
    };
    paged_sm90::for_each_piece(p, part, [&](int req, int first, int end) CUTLASS_LAMBDA_FUNC_INLINE {
      const int* table = p.block_table + static_cast<int64_t>(req) * p.max_blocks;
      for (int a = first; a < end; a += 2) {
        const bool has_b = a + 1 < end;
        const int id_a = table[a], id_b = has_b ? table[a + 1] : 0;
        load(cute::Int<0>{}, 0, id_a);
        load(cute::Int<1>{}, 0, id_a);
        ++uses[0];
        if (has_b) {
          load(cute::Int<1>{}, 1, id_b);
          load(cute::Int<0>{}, 1, id_b);
          ++uses[1];
        }
      }
    });
  }

  // Consumer warpgroup kWG: S of the pair's page in buffer kWG, O[:, 256 kWG : 256 kWG + 256], the release
  // of the column groups it reads last (group 0 of both buffers for warpgroup 0, group 1 for warpgroup 1).
  template <int kWG>
  CUTE_DEVICE static void consume(const Params& p, const CUtensorMap* q_map, SharedStorage& smem,
                                  const PartInfo& part) {
    using namespace cute;
    // Recomputed where used (opaque): kept live through the page loop they would take registers.
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

    typename T::TiledMmaQK mma_qk;
    typename T::TiledMmaQKRope mma_rope;
    typename T::TiledMmaPVRegisters mma_local;
    typename T::TiledMmaPVShared mma_remote;
    auto thr_qk = mma_qk.get_thread_slice(wg_thread);
    auto thr_rope = mma_rope.get_thread_slice(wg_thread);
    auto thr_local = mma_local.get_thread_slice(wg_thread);
    auto thr_remote = mma_remote.get_thread_slice(wg_thread);
    const auto page_shape = Shape<Int<kBlockM>, Int<kBlockN>>{};

    Tensor tSrQRope = make_tensor<Element>(partition_shape_A(mma_rope, page_shape));  // (MMA,1,4)
    Tensor tSrS = partition_fragment_C(mma_qk, page_shape);  // (MMA,1,1) S, then P (fp32)
    Tensor tOrP = make_tensor<Element>(partition_shape_A(mma_local, page_shape));  // (MMA,1,4)
    Tensor tOrO =
        partition_fragment_C(mma_local, Shape<Int<kBlockM>, Int<T::kVColsPerWarpgroup>>{});  // (MMA,1,1)
    mma_rope.accumulate_ = GMMA::ScaleOut::One;  // the RoPE chunk never starts S

    // The last read of column group g of buffer `buf` is done (after a wgmma wait): the producer may refill it.
    const auto free_group = [&](int buf, int group) CUTLASS_LAMBDA_FUNC_INLINE {
      if (elected) SignalBarrier::arrive(&smem.kv_free[buf][group]);
    };
    int phase = 0;  // of buffer kWG's chunk barriers: flips with every page this warpgroup's S reads
    int pair_phase = 0;  // of max_b_ready (warpgroup 0): flips with every pair
    int piece = 0;       // pieces finished: the phase of the row-sum barriers

    // --- S = Q K^T of buffer kWG over chunks [kBegin, kEnd), each chunk's steps issued once it has
    // landed; not committed. The caller sets mma_qk's accumulate flag for S's first step.
    const auto qk_chunks = [&](auto begin, auto end) CUTLASS_LAMBDA_FUNC_INLINE {
      constexpr int kBegin = decltype(begin)::value, kEnd = decltype(end)::value;
      Tensor sQo = make_tensor(make_smem_ptr(sm90::opaque(smem.q.data())), typename T::SmemLayoutQ{});  // (BLK_M,512)
      Tensor sK = make_tensor(make_smem_ptr(sm90::opaque(smem.kv[kWG].data())),
                              typename T::SmemLayoutK{});                    // (BLK_N,576)
      Tensor tSrQ = thr_qk.make_fragment_A(thr_qk.partition_A(sQo));         // (MMA,1,32)
      Tensor tSrK = thr_qk.make_fragment_B(thr_qk.partition_B(sK));          // (MMA,1,36)
      Tensor tSrKRope = thr_rope.make_fragment_B(thr_rope.partition_B(sK));  // (MMA,1,36)
      CUTE_UNROLL
      for (int c = kBegin; c < kEnd; ++c) {
        FullBarrier::wait(&smem.kv_ready[kWG][c], phase);
        warpgroup_arrive();
        if (c == T::kLatentChunks) {
          CUTE_UNROLL
          for (int k = 0; k < kSteps; ++k)
            cute::gemm(mma_rope, tSrQRope(_, _, k), tSrKRope(_, _, c * kSteps + k), tSrS);
        } else {
          CUTE_UNROLL
          for (int k = c * kSteps; k < (c + 1) * kSteps; ++k) {
            cute::gemm(mma_qk, tSrQ(_, _, k), tSrK(_, _, k), tSrS);
            mma_qk.accumulate_ = GMMA::ScaleOut::One;
          }
        }
      }
    };
    // The chunks this warpgroup freed itself come first (the producer refills them first): warpgroup 0
    // group 0, warpgroup 1 group 1.
    const auto qk_own_group = [&]() CUTLASS_LAMBDA_FUNC_INLINE {
      warpgroup_fence_operand(tSrS);
      mma_qk.accumulate_ = GMMA::ScaleOut::Zero;
      if constexpr (kWG == 0)
        qk_chunks(Int<0>{}, Int<kSplit>{});
      else
        qk_chunks(Int<kSplit>{}, Int<T::kNumChunks>{});
    };
    const auto qk_other_group = [&]() CUTLASS_LAMBDA_FUNC_INLINE {
      if constexpr (kWG == 0)
        qk_chunks(Int<kSplit>{}, Int<T::kNumChunks>{});
      else
        qk_chunks(Int<0>{}, Int<kSplit>{});
    };
    const auto qk_done = [&]() CUTLASS_LAMBDA_FUNC_INLINE {
      warpgroup_wait<0>();
      warpgroup_fence_operand(tSrS);
      phase ^= 1;
    };

    // --- P V halves: issued and committed, not waited --------------------------------------------
    const auto v_half = [&](int buf) CUTLASS_LAMBDA_FUNC_INLINE {
      return make_tensor(make_smem_ptr(sm90::opaque(smem.kv[buf].data() + kWG * T::kVHalfOffset)),
                         typename T::SmemLayoutV{});  // (256,BLK_N)
    };
    // O += (own P, registers) V and O += (the other warpgroup's P tile) V.
    const auto pv = [&](auto from_registers, int buf) CUTLASS_LAMBDA_FUNC_INLINE {
      paged_sm90::issue_half_pv<decltype(from_registers)::value>(
          mma_local, thr_local, mma_remote, thr_remote, tOrP, tOrO,
          [&]() CUTLASS_LAMBDA_FUNC_INLINE {
            return make_tensor(make_smem_ptr(sm90::opaque(smem.p[1 - kWG].data())), typename T::SmemLayoutP{});
          },
          [&]() CUTLASS_LAMBDA_FUNC_INLINE { return v_half(buf); });
    };
    const auto pv_local = [&](int buf) CUTLASS_LAMBDA_FUNC_INLINE { pv(cute::true_type{}, buf); };
    const auto pv_remote = [&](int buf) CUTLASS_LAMBDA_FUNC_INLINE { pv(cute::false_type{}, buf); };
    const auto pv_done = [&]() CUTLASS_LAMBDA_FUNC_INLINE {
      warpgroup_wait<0>();
      warpgroup_fence_operand(tOrO);
    };
    const auto scale_o = [&](const float (&s)[2]) CUTLASS_LAMBDA_FUNC_INLINE { paged_sm90::scale_rows(tOrO, s); };
    const auto store_p = [&]() CUTLASS_LAMBDA_FUNC_INLINE {  // into this warpgroup's P tile
      paged_sm90::store_p<T>(smem.p[kWG].data(), tOrP, sm90::opaque((wg_thread / 32) * 16), sm90::opaque(lane));
    };
    const auto publish = [&](float* max_row, float* scale_row, const float (&m)[2], const float (&s)[2])
                             CUTLASS_LAMBDA_FUNC_INLINE {
      if (col0 == 0)
        for (int h = 0; h < 2; ++h) {
          max_row[r0 + 8 * h] = m[h];
          scale_row[r0 + 8 * h] = s[h];
        }
    };

    paged_sm90::for_each_piece(p, part, [&](int req, int first, int end) CUTLASS_LAMBDA_FUNC_INLINE {
      const int seqlen = p.seqlens[req];  // the piece's schedule entry is read where it is used: registers

      // The part's first piece loads its Q tile and RoPE operand here; every later piece's were loaded
      // during the last pair of the piece before it (its pages come from the producer).
      if (piece == 0) {
        if (kWG == 1 && elected)
          paged_sm90::load_q_tma<T, false>(p, q_map, &smem.q_ready, smem.q.data(), nullptr, req, kv_head(),
                                           m_tile());
        paged_sm90::load_rope_operand<T, false>(p, req, kv_head(), m_tile(), sm90::opaque(r0), col0, tSrQRope);
      }
      FullBarrier::wait(&smem.q_ready, piece & 1);
      int next_req = -1;  // the part's next piece (found under the first S), -1: none

      // Tokens past the sequence's end may hold anything (NaN in the tests): 0 * NaN is NaN in the
      // tensor core, so each reader of a last page's V zeroes its V columns of those rows. Only the
      // request's last page has fewer than kBlockN valid tokens (a page past it only under a stale plan,
      // whose outputs are NaN): the schedule entry is not read in the last pair.
      const auto zero_tail = [&](int buf, int page) CUTLASS_LAMBDA_FUNC_INLINE {
        const int valid = max(0, sm90::opaque(seqlen) - page * kBlockN);  // (negative only for a stale plan)
        if (valid < kBlockN)
          paged_sm90::zero_v_tail<T>(smem.kv[buf].data(), valid, kWG, T::kWarpgroupSync + kWG);
      };

      float run_max[2] = {-INFINITY, -INFINITY};  // log2 units of the scaled logits
      float row_sum[2] = {0.f, 0.f};              // this thread's share of its warpgroup's probabilities
      clear(tOrO);

      // S of `page` (in tSrS) against the running max m_in: with kMask, masked where the page reaches a
      // row's limit (only the pairs that may need it are built with it: the compiler turns a run-time
      // branch around the mask into ~100 selects and divisions on every page), m_new = the max after it, rescale =
      // exp2(m_in - m_new), P in tOrP, sum = this thread's P sums.
      const int min_limit = p.causal ? seqlen - p.s_q + 1 : seqlen;  // keys every row sees
      const auto softmax = [&](int page, const float (&m_in)[2], float (&m_new)[2], float (&rescale)[2],
                               float (&sum)[2], auto mask) CUTLASS_LAMBDA_FUNC_INLINE {
        if (decltype(mask)::value && (page + 1) * kBlockN > min_limit) {
          int limit[2];  // keys visible to rows r0 and r0 + 8
          for (int h = 0; h < 2; ++h) {
            const int packed = min(m_tile() * kBlockM + sm90::opaque(r0) + 8 * h, p.rows_per_head - 1);
            limit[h] = p.causal ? seqlen - p.s_q + packed / p.heads_per_kv + 1 : seqlen;
          }
          CUTE_UNROLL
          for (int i = 0; i < size(tSrS); ++i)
            if (page * kBlockN + col0 + (i & 1) + 8 * (i >> 2) >= limit[(i >> 1) & 1]) tSrS(i) = -INFINITY;
        }
        float page_max[2] = {-INFINITY, -INFINITY};
        CUTE_UNROLL
        for (int i = 0; i < size(tSrS); ++i) page_max[(i >> 1) & 1] = fmaxf(page_max[(i >> 1) & 1], tSrS(i));
        float base[2];
        CUTE_UNROLL
        for (int h = 0; h < 2; ++h) {
          m_new[h] = paged_sm90::next_reference_max(m_in[h], paged_sm90::quad_max(page_max[h]) * p.scale_log2,
                                                    paged_sm90::kLazyMaxSlack);
          // A row that has seen only masked keys keeps max -inf; exp2(-inf - 0) = 0 keeps P at 0.
          base[h] = base_of(m_new[h]);
          rescale[h] = device::ex2_approx_ftz(m_in[h] - base[h]);
          sum[h] = 0.f;
        }
        CUTE_UNROLL
        for (int i = 0; i < size(tSrS); ++i) {
          const int h = (i >> 1) & 1;
          const float prob = device::ex2_approx_ftz(fmaf(tSrS(i), p.scale_log2, -base[h]));
          sum[h] += prob;
          // The accumulator's register order is the RS A-operand order (host-tested).
          tOrP(i) = static_cast<Element>(prob);
        }
      };

      // One pair: page a (buffer 0) and, with kHasB, page b = a + 1 (buffer 1); kHasA2 / kHasB2: the
      // next pair's pages a + 2 / a + 3 are in the piece (their S are issued here); `mask`: a or b may
      // reach a row's limit. Without a + 2 this is the piece's last pair: the next piece's Q tile and
      // RoPE operand are loaded. Each warpgroup frees its column group of a (and b) after its last
      // read. On entry S of a sits in warpgroup 0's tSrS and S of b in warpgroup 1's.
      //
      // P_a is published at max_a, not at the pair's max: warpgroup 1 multiplies it the moment it
      // arrives, under its own softmax of b, so both groups of buffer 0 are free before that softmax
      // ends (a's refill starts ~a softmax and a P V earlier than when P_a waited for max_b); each
      // warpgroup then rescales its O by scale_b before P_b V, which the lazy reference max skips on
      // almost every pair (sixtieth session: 1.2-3.4% faster on the b128 h_q = 128 rows).
      const auto pair = [&](int a, auto has_b, auto has_a2, auto has_b2, auto mask) CUTLASS_LAMBDA_FUNC_INLINE {
        constexpr bool kHasB = decltype(has_b)::value, kHasA2 = decltype(has_a2)::value;
        [[maybe_unused]] constexpr bool kHasB2 = decltype(has_b2)::value;  // (warpgroup 1's)
        constexpr bool kLast = !kHasA2;
        // Both warpgroups' S of this piece are done (their registers are free) or are once warpgroup 0
        // has published P_a (smem.q is free then). The loads land under this pair.
        if constexpr (kLast)
          if (next_req >= 0)
            paged_sm90::load_rope_operand<T, false>(p, next_req, kv_head(), m_tile(), sm90::opaque(r0), col0,
                                                    tSrQRope);
        if constexpr (kWG == 0) {
          float m_a[2], s_a[2], sum[2];
          softmax(a, run_max, m_a, s_a, sum, mask);
          publish(smem.max_a, smem.scale_a, m_a, s_a);
          // P_a stored before its own P_a V is issued: warpgroup 1 waits on it, and 0.3-0.8% faster
          // than under that P V (sixtieth session).
          store_p();
          NamedBarrier::arrive(kThreads, T::kPaReady);
          for (int h = 0; h < 2; ++h) row_sum[h] = row_sum[h] * s_a[h] + sum[h];
          scale_o(s_a);
          if constexpr (!kHasB) zero_tail(0, a);
          pv_local(0);
          pv_done();
          free_group(0, 0);  // read last by P_a V above
          SignalBarrier::wait(&smem.max_b_ready, pair_phase);
          pair_phase ^= 1;
          float s_b[2];
          for (int h = 0; h < 2; ++h) {
            s_b[h] = smem.scale_b[r0 + 8 * h];
            run_max[h] = smem.max_b[r0 + 8 * h];
            row_sum[h] *= s_b[h];
          }
          if constexpr (kHasB) {
            NamedBarrier::sync(kThreads, T::kPbReady);
            scale_o(s_b);
            if constexpr (!kHasA2) zero_tail(1, a + 1);
            pv_remote(1);
          }
          if constexpr (kHasA2) {  // S of a + 2 behind P_b V: first the group freed above
            qk_own_group();
            warpgroup_commit_batch();
            if constexpr (kHasB) {
              warpgroup_wait<1>();  // P_b V done
              warpgroup_fence_operand(tOrO);
              free_group(1, 0);  // read last by P_b V
            }
            qk_other_group();
            warpgroup_commit_batch();
            qk_done();
          } else if constexpr (kHasB) {
            pv_done();
            free_group(1, 0);
          }
        } else {
          NamedBarrier::sync(kThreads, T::kPaReady);  // max_a, scale_a and P_a
          if constexpr (kLast)
            if (elected && next_req >= 0)
              paged_sm90::load_q_tma<T, false>(p, q_map, &smem.q_ready, smem.q.data(), nullptr, next_req, kv_head(),
                                               m_tile());
          float m_a[2], s_a[2], m_b[2], s_b[2], sum[2] = {0.f, 0.f};
          for (int h = 0; h < 2; ++h) {
            m_a[h] = smem.max_a[r0 + 8 * h];
            s_a[h] = smem.scale_a[r0 + 8 * h];
          }
          scale_o(s_a);
          if constexpr (!kHasB) zero_tail(0, a);
          pv_remote(0);  // under this warpgroup's softmax of b
          if constexpr (kHasB) {
            softmax(a + 1, m_a, m_b, s_b, sum, mask);
          } else {
            for (int h = 0; h < 2; ++h) {
              m_b[h] = m_a[h];
              s_b[h] = 1.f;
            }
          }
          publish(smem.max_b, smem.scale_b, m_b, s_b);
          SignalBarrier::arrive(&smem.max_b_ready);
          for (int h = 0; h < 2; ++h) {
            row_sum[h] = row_sum[h] * s_a[h] * s_b[h] + sum[h];
            run_max[h] = m_b[h];
          }
          if constexpr (kHasB) store_p();
          pv_done();
          free_group(0, 1);  // read last by P_a V
          if constexpr (kHasB) {
            // After P_a V's wait: warpgroup 0 writes the next P_a only once it has passed this barrier.
            NamedBarrier::arrive(kThreads, T::kPbReady);
            scale_o(s_b);
            if constexpr (!kHasA2) zero_tail(1, a + 1);
            pv_local(1);
            pv_done();
            free_group(1, 1);  // read last by P_b V
          }
          if constexpr (kHasB2) {  // S of a + 3: first the group freed above
            qk_own_group();
            qk_other_group();
            warpgroup_commit_batch();
            qk_done();
          }
        }
      };

      // Each warpgroup's first S: warpgroup 0 of page `first`, warpgroup 1 of `first + 1` if any. Under
      // it, the part's next piece with pages (its Q tile and RoPE operand are loaded in this piece's last pair).
      const auto find_next_piece = [&]() CUTLASS_LAMBDA_FUNC_INLINE {
        const paged_sm90::PartWalk<1> walk{p, part, min(part.end_req, p.b - 1)};
        paged_sm90::PageCursor next{req, end};
        walk.settle(next, 0);
        next_req = walk.valid(next) ? next.req : -1;
      };
      // (Issue and wait in one branch: split over two, ptxas serializes the wgmma.)
      if (kWG == 0 || first + 1 < end) {
        qk_own_group();
        qk_other_group();
        warpgroup_commit_batch();
        find_next_piece();
        qk_done();
      } else {
        find_next_piece();
      }
      using True = cute::true_type;
      using False = cute::false_type;
      int a = first;
      // The steady pairs: b and the next pair's pages present, no key of a or b past a row's limit.
      for (; a + 3 < end && (a + 2) * kBlockN <= min_limit; a += 2) pair(a, True{}, True{}, True{}, False{});
      for (; a + 3 < end; a += 2) pair(a, True{}, True{}, True{}, True{});
      if (a + 2 < end) {  // pages a, a + 1, a + 2: the last pair has one page
        pair(a, True{}, True{}, False{}, True{});
        a += 2;
      }
      if (a + 1 < end)
        pair(a, True{}, False{}, False{}, True{});
      else
        pair(a, False{}, False{}, False{}, True{});

      // Each warpgroup summed only its own pages' probabilities; both hold the final max. (mbarriers: with
      // a named barrier between the writes and the reads, racecheck reports the reads.)
      for (int h = 0; h < 2; ++h) row_sum[h] = paged_sm90::quad_sum(row_sum[h]);
      if (piece > 0) SignalBarrier::wait(&smem.sum_read[kWG], (piece - 1) & 1);
      if (col0 == 0)
        for (int h = 0; h < 2; ++h) smem.row_sum[kWG][r0 + 8 * h] = row_sum[h];
      SignalBarrier::arrive(&smem.sum_ready[kWG]);
      SignalBarrier::wait(&smem.sum_ready[1 - kWG], piece & 1);
      for (int h = 0; h < 2; ++h) row_sum[h] += smem.row_sum[1 - kWG][r0 + 8 * h];
      SignalBarrier::arrive(&smem.sum_read[1 - kWG]);
      ++piece;
      // Opaque row and column: their addresses are made here, not kept live through the piece. Both
      // warpgroups are past their last P V (the row-sum hand-off), so each P tile is free.
      write_through_p_tile(p, sm90::opaque(req), kv_head(), m_tile(), blockIdx.y, sm90::opaque(r0),
                           sm90::opaque(col0), kWG * T::kVColsPerWarpgroup, kWG == 0 && col0 == 0, run_max,
                           row_sum, tOrO, smem.p[kWG].data(), wg_thread, T::kWarpgroupSync + kWG);
    });
  }
};

template <class T, PartialFormat kPartials>
__global__ void __launch_bounds__(T::kThreads, 1)
    paged_sm90_pairs_v4_kernel(const __grid_constant__ Params params, const __grid_constant__ CUtensorMap kv_map,
                               const __grid_constant__ CUtensorMap q_map) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  Kernel<T, kPartials>::run(params, &kv_map, &q_map);
#endif
}

}  // namespace cutelab::mla::paged_sm90_pairs_v4
