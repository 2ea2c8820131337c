#pragma once
// cute/gemm/wgmma_tma_sm90/v3 device code: v2 (persistent, warp-specialized, banded tile order)
// plus thread-block clusters with TMA multicast. The CM x CN CTAs of a cluster work on
// neighbouring output tiles at the same time: CTAs of one cluster column need the same B tile,
// CTAs of one cluster row the same A tile, so each loads only its 1/CM share of B (1/CN of A)
// and the TMA multicast writes it into every partner's shared memory and signals every
// partner's tile_full barrier. L2->SM traffic for the shared operand drops by CM (CN).
// The price: a slot may be refilled only when the consumers of every CTA that receives it are
// done, so consumers arrive on tile_empty of each CTA in their cluster row and column.

#include <cuda_bf16.h>

#include <cute/tensor.hpp>
#include <cutlass/arch/barrier.h>
#include <cutlass/arch/reg_reconfig.h>

#include "cute/gemm/wgmma_tma_sm90/wgmma_tma_sm90_v3/config.hpp"
#include "gemm/common/store_accumulators.cuh"
#include "gemm/common/tile_order.hpp"

namespace cutelab::gemm::wgmma_tma_sm90_v3 {

template <class T>
struct GemmSm90 {
  using Element = cute::bfloat16_t;
  static constexpr int BM = T::BM, BN = T::BN, BK = T::BK, STAGES = T::STAGES;
  static constexpr int CM = T::CM, CN = T::CN, CS = T::kClusterSize;
  static constexpr int kConsumerWarps = 4 * kConsumerWarpgroups;
  static_assert(BK % 64 == 0, "K slices are whole 128-byte swizzle rows");

  using SmemLayoutA = decltype(cute::tile_to_shape(cute::GMMA::Layout_K_SW128_Atom<Element>{},
                                                   cute::make_shape(cute::Int<BM>{}, cute::Int<BK>{},
                                                                    cute::Int<STAGES>{})));  // (BM,BK,PIPE)
  using SmemLayoutB = decltype(cute::tile_to_shape(cute::GMMA::Layout_K_SW128_Atom<Element>{},
                                                   cute::make_shape(cute::Int<BN>{}, cute::Int<BK>{},
                                                                    cute::Int<STAGES>{})));  // (BN,BK,PIPE)

  using MmaAtom = decltype(cute::SM90::GMMA::ss_op_selector<Element, Element, float,
                                                            cute::Shape<cute::_64, cute::Int<BN>, cute::Int<BK>>>());
  using TiledMma = decltype(cute::make_tiled_mma(MmaAtom{}, cute::Layout<cute::Shape<cute::_2, cute::_1, cute::_1>>{}));
  static_assert(decltype(cute::size(TiledMma{}))::value == 128 * kConsumerWarpgroups);

  // A is shared along the cluster's N direction, B along its M direction.
  using TmaOpA = std::conditional_t<(CN > 1), cute::SM90_TMA_LOAD_MULTICAST, cute::SM90_TMA_LOAD>;
  using TmaOpB = std::conditional_t<(CM > 1), cute::SM90_TMA_LOAD_MULTICAST, cute::SM90_TMA_LOAD>;
  using GmemTensor = decltype(cute::make_tensor(static_cast<const Element*>(nullptr), cute::make_shape(0, 0),
                                                cute::make_stride(int64_t(0), cute::_1{})));
  using TmaA = decltype(cute::make_tma_atom(TmaOpA{}, GmemTensor{}, SmemLayoutA{}(cute::_, cute::_, 0),
                                            cute::make_shape(cute::Int<BM>{}, cute::Int<BK>{}), cute::Int<CN>{}));
  using TmaB = decltype(cute::make_tma_atom(TmaOpB{}, GmemTensor{}, SmemLayoutB{}(cute::_, cute::_, 0),
                                            cute::make_shape(cute::Int<BN>{}, cute::Int<BK>{}), cute::Int<CM>{}));

  using FullBarrier = cutlass::arch::ClusterTransactionBarrier;
  using EmptyBarrier = cutlass::arch::ClusterBarrier;

  struct SharedStorage {
    alignas(1024) cute::ArrayEngine<Element, cute::cosize_v<SmemLayoutA>> a;  // 1 KiB: the swizzle period
    alignas(1024) cute::ArrayEngine<Element, cute::cosize_v<SmemLayoutB>> b;
    alignas(8) uint64_t tile_full[STAGES];   // all bytes of slot s (own loads and partners') have landed
    alignas(8) uint64_t tile_empty[STAGES];  // every consumer warp of every receiving CTA is done with s
  };
  static_assert(sizeof(SharedStorage) <= T::kSmemBytes, "config.hpp's shared-memory bound is too small");

  // Every CTA receives whole A and B tiles (its own share plus its partners').
  static constexpr uint32_t kTxBytes = uint32_t((BM + BN) * BK * sizeof(Element));
  // Consumer warps of the CTAs in this CTA's cluster row and column (itself counted once).
  static constexpr int kEmptyArrivals = kConsumerWarps * (CM + CN - 1);

  struct Params {
    TmaA tma_a;
    TmaB tma_b;
    Element* c;
    const __nv_bfloat16* bias;
    int m, n, k;
    bool bias_gelu;
    TileOrder order;  // over cluster tiles (CM x CN CTA tiles)
  };

  struct Pipe {
    int slot = 0;
    uint32_t phase = 0;
    __device__ void advance() {
      if (++slot == STAGES) {
        slot = 0;
        phase ^= 1;
      }
    }
  };

  // Position of this CTA in its cluster: rank = rm + rn * CM.
  struct ClusterPos {
    int rm, rn;
    __device__ TileCoord tile(TileCoord cluster_tile) const {
      return {cluster_tile.m * CM + rm, cluster_tile.n * CN + rn};
    }
  };

  static __device__ void produce(const Params& p, SharedStorage& smem, ClusterPos pos) {
    using namespace cute;
    Tensor mA = p.tma_a.get_tma_tensor(make_shape(p.m, p.k));                         // (M,K)
    Tensor mB = p.tma_b.get_tma_tensor(make_shape(p.n, p.k));                         // (N,K)
    Tensor gA = local_tile(mA, make_shape(Int<BM>{}, Int<BK>{}), make_coord(_, _));  // (BM,BK,m,k)
    Tensor gB = local_tile(mB, make_shape(Int<BN>{}, Int<BK>{}), make_coord(_, _));  // (BN,BK,n,k)
    Tensor sA = make_tensor(make_smem_ptr(smem.a.begin()), SmemLayoutA{});            // (BM,BK,PIPE)
    Tensor sB = make_tensor(make_smem_ptr(smem.b.begin()), SmemLayoutB{});            // (BN,BK,PIPE)
    // Each CTA's TMA covers its share of the tile: slice rn of CN for A, rm of CM for B.
    auto [tAgA, tAsA] = tma_partition(p.tma_a, pos.rn, make_layout(Int<CN>{}), group_modes<0, 2>(sA),
                                      group_modes<0, 2>(gA));  // (TMA,m,k) and (TMA,PIPE)
    auto [tBgB, tBsB] = tma_partition(p.tma_b, pos.rm, make_layout(Int<CM>{}), group_modes<0, 2>(sB),
                                      group_modes<0, 2>(gB));  // (TMA,n,k) and (TMA,PIPE)
    // Receivers: the CTAs of this cluster row (same rm) for A, of this column (same rn) for B.
    uint16_t mask_a = 0, mask_b = 0;
    CUTE_UNROLL
    for (int j = 0; j < CN; ++j) mask_a |= uint16_t(1u << (pos.rm + j * CM));
    CUTE_UNROLL
    for (int i = 0; i < CM; ++i) mask_b |= uint16_t(1u << (i + pos.rn * CM));

    const int k_tiles = size<3>(gA);
    const int cluster = blockIdx.x / CS;
    const int clusters = gridDim.x / CS;
    Pipe pipe;
    for (int t = cluster; t < p.order.num_tiles(); t += clusters) {
      const TileCoord tile = pos.tile(p.order.at(t));
      for (int k_tile = 0; k_tile < k_tiles; ++k_tile) {
        EmptyBarrier::wait(&smem.tile_empty[pipe.slot], pipe.phase ^ 1);
        FullBarrier::arrive_and_expect_tx(&smem.tile_full[pipe.slot], kTxBytes);
        uint64_t& full = smem.tile_full[pipe.slot];
        if constexpr (CN > 1) {
          copy(p.tma_a.with(full, mask_a), tAgA(_, tile.m, k_tile), tAsA(_, pipe.slot));
        } else {
          copy(p.tma_a.with(full), tAgA(_, tile.m, k_tile), tAsA(_, pipe.slot));
        }
        if constexpr (CM > 1) {
          copy(p.tma_b.with(full, mask_b), tBgB(_, tile.n, k_tile), tBsB(_, pipe.slot));
        } else {
          copy(p.tma_b.with(full), tBgB(_, tile.n, k_tile), tBsB(_, pipe.slot));
        }
        pipe.advance();
      }
    }
  }

  static __device__ void consume(const Params& p, SharedStorage& smem, int consumer_tid, ClusterPos pos) {
    using namespace cute;
    const int lane = consumer_tid % 32;
    // Lane r of every consumer warp releases the slot in cluster CTA r, if r receives our loads'
    // partner data, i.e. shares this CTA's cluster row or column.
    const bool releases = lane < CS && ((lane % CM) == pos.rm || (lane / CM) == pos.rn);
    Tensor sA = make_tensor(make_smem_ptr(smem.a.begin()), SmemLayoutA{});  // (BM,BK,PIPE)
    Tensor sB = make_tensor(make_smem_ptr(smem.b.begin()), SmemLayoutB{});  // (BN,BK,PIPE)
    TiledMma mma;
    const int wg_first = __shfl_sync(0xffffffff, (consumer_tid / 128) * 128, 0);
    ThrMMA wg_mma = mma.get_slice(wg_first);
    Tensor tCrA = wg_mma.make_fragment_A(wg_mma.partition_A(sA));  // (MMA,MMA_M,MMA_K,PIPE) descriptors
    Tensor tCrB = wg_mma.make_fragment_B(wg_mma.partition_B(sB));  // (MMA,MMA_N,MMA_K,PIPE) descriptors
    ThrMMA thr_mma = mma.get_slice(consumer_tid);
    Tensor acc = partition_fragment_C(thr_mma, make_shape(Int<BM>{}, Int<BN>{}));  // (MMA,MMA_M,MMA_N)
    constexpr int K_BLOCKS = decltype(size<2>(tCrA))::value;

    Tensor mC = make_tensor(make_gmem_ptr(p.c), make_shape(p.m, p.n), make_stride(int64_t(p.n), _1{}));  // (M,N)
    Tensor cC = make_identity_tensor(make_shape(p.m, p.n));                                             // (M,N)
    const int k_tiles = (p.k + BK - 1) / BK;
    const int cluster = blockIdx.x / CS;
    const int clusters = gridDim.x / CS;
    Pipe pipe;
    for (int t = cluster; t < p.order.num_tiles(); t += clusters) {
      const TileCoord tile = pos.tile(p.order.at(t));
      mma.accumulate_ = GMMA::ScaleOut::Zero;
      int prev_slot = 0;
      for (int k_tile = 0; k_tile < k_tiles; ++k_tile) {
        FullBarrier::wait(&smem.tile_full[pipe.slot], pipe.phase);
        warpgroup_fence_operand(acc);
        warpgroup_arrive();
        CUTE_UNROLL
        for (int kb = 0; kb < K_BLOCKS; ++kb) {
          cute::gemm(mma, tCrA(_, _, kb, pipe.slot), tCrB(_, _, kb, pipe.slot), acc);
          mma.accumulate_ = GMMA::ScaleOut::One;
        }
        warpgroup_commit_batch();
        warpgroup_wait<1>();
        warpgroup_fence_operand(acc);
        if (k_tile > 0) EmptyBarrier::arrive(&smem.tile_empty[prev_slot], lane, releases);
        prev_slot = pipe.slot;
        pipe.advance();
      }
      warpgroup_wait<0>();
      warpgroup_fence_operand(acc);
      EmptyBarrier::arrive(&smem.tile_empty[prev_slot], lane, releases);

      // Tiles of a cluster past the edge of C (m or n not a multiple of the cluster tile)
      // were loaded as zeros; the bounds checks drop all of their stores.
      Tensor gC = local_tile(mC, make_shape(Int<BM>{}, Int<BN>{}), make_coord(tile.m, tile.n));     // (BM,BN)
      Tensor tileC = local_tile(cC, make_shape(Int<BM>{}, Int<BN>{}), make_coord(tile.m, tile.n));  // (BM,BN)
      Tensor tCgC = thr_mma.partition_C(gC);     // (MMA,MMA_M,MMA_N)
      Tensor tCcC = thr_mma.partition_C(tileC);  // (MMA,MMA_M,MMA_N) -> (m,n)
      store_accumulators(acc, tCgC, tCcC, p.m, p.n, p.bias, p.bias_gelu);
    }
  }

  static __device__ void run(const Params& p, char* smem_raw) {
    SharedStorage& smem = *reinterpret_cast<SharedStorage*>(smem_raw);
    const int tid = threadIdx.x;
    const int warpgroup = __shfl_sync(0xffffffff, tid / 128, 0);
    const int warp_in_group = __shfl_sync(0xffffffff, (tid / 32) % 4, 0);
    const int rank = int(cute::block_rank_in_cluster());
    const ClusterPos pos{rank % CM, rank / CM};

    if (tid == 0) {
      if (cute::cast_smem_ptr_to_uint(smem_raw) % 1024 != 0) __trap();
      cute::prefetch_tma_descriptor(p.tma_a.get_tma_descriptor());
      cute::prefetch_tma_descriptor(p.tma_b.get_tma_descriptor());
      CUTE_UNROLL
      for (int s = 0; s < STAGES; ++s) {
        FullBarrier::init(&smem.tile_full[s], 1);
        EmptyBarrier::init(&smem.tile_empty[s], kEmptyArrivals);
      }
      cutlass::arch::fence_barrier_init();
    }
    // Partners multicast into this CTA and arrive on its barriers: they must see them initialized.
    cute::cluster_arrive_relaxed();
    cute::cluster_wait();

    if (warpgroup == 0) {
      cutlass::arch::warpgroup_reg_dealloc<kProducerRegs>();
      if (warp_in_group == 0 && cute::elect_one_sync()) produce(p, smem, pos);
    } else {
      cutlass::arch::warpgroup_reg_alloc<kConsumerRegs>();
      consume(p, smem, tid - 128, pos);
    }
    // No CTA may leave while a partner can still arrive on its barriers or write its memory.
    cute::cluster_arrive();
    cute::cluster_wait();
  }
};

template <class T>
__global__ void __launch_bounds__(kThreads, 1) gemm_sm90_v3_kernel(const __grid_constant__ typename GemmSm90<T>::Params p) {
  extern __shared__ __align__(1024) char smem_raw[];
  GemmSm90<T>::run(p, smem_raw);
}

}  // namespace cutelab::gemm::wgmma_tma_sm90_v3
