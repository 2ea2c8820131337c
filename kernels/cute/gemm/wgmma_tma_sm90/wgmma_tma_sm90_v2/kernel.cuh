#pragma once
// cute/gemm/wgmma_tma_sm90/v2 device code: persistent and warp-specialized. One CTA per SM
// walks output tiles in TileOrder (raster + band), so tile setup, the epilogue and the pipeline
// ramp of one tile overlap the loads of the next. Warpgroup 0 is the producer: after giving
// registers away (setmaxnreg.dec) one elected thread keeps the STAGES-deep TMA ring full,
// waiting on tile_empty and arming tile_full. Warpgroups 1 and 2 are the consumers: they take
// registers (setmaxnreg.inc), wait on tile_full, run WGMMA with one batch in flight, release the
// slot behind them, and store their 64-row (or BN/2-column) half of the tile. The pipeline state
// (slot, phase) runs on across tiles.

#include <cuda_bf16.h>

#include <cute/tensor.hpp>
#include <cutlass/arch/barrier.h>
#include <cutlass/arch/reg_reconfig.h>

#include "cute/gemm/wgmma_tma_sm90/wgmma_tma_sm90_v2/config.hpp"
#include "gemm/common/store_accumulators.cuh"
#include "gemm/common/tile_order.hpp"

namespace cutelab::gemm::wgmma_tma_sm90_v2 {

template <class T>
struct GemmSm90 {
  using Element = cute::bfloat16_t;
  static constexpr int BM = T::BM, BN = T::BN, BK = T::BK, STAGES = T::STAGES;
  static constexpr int kConsumerWarps = 4 * kConsumerWarpgroups;
  static_assert(BK % 64 == 0, "K slices are whole 128-byte swizzle rows");

  using SmemLayoutA = decltype(cute::tile_to_shape(cute::GMMA::Layout_K_SW128_Atom<Element>{},
                                                   cute::make_shape(cute::Int<BM>{}, cute::Int<BK>{},
                                                                    cute::Int<STAGES>{})));  // (BM,BK,PIPE)
  using SmemLayoutB = decltype(cute::tile_to_shape(cute::GMMA::Layout_K_SW128_Atom<Element>{},
                                                   cute::make_shape(cute::Int<BN>{}, cute::Int<BK>{},
                                                                    cute::Int<STAGES>{})));  // (BN,BK,PIPE)

  // Each consumer warpgroup owns a 64 x WN block: rows split for BM = 128, columns for BM = 64.
  static constexpr int WN = T::kSplitRows ? BN : BN / 2;
  using MmaAtom = decltype(cute::SM90::GMMA::ss_op_selector<Element, Element, float,
                                                            cute::Shape<cute::_64, cute::Int<WN>, cute::Int<BK>>>());
  using WarpgroupGrid = std::conditional_t<T::kSplitRows, cute::Layout<cute::Shape<cute::_2, cute::_1, cute::_1>>,
                                           cute::Layout<cute::Shape<cute::_1, cute::_2, cute::_1>>>;
  using TiledMma = decltype(cute::make_tiled_mma(MmaAtom{}, WarpgroupGrid{}));
  static_assert(decltype(cute::size(TiledMma{}))::value == 128 * kConsumerWarpgroups);

  using GmemTensor = decltype(cute::make_tensor(static_cast<const Element*>(nullptr), cute::make_shape(0, 0),
                                                cute::make_stride(int64_t(0), cute::_1{})));
  using TmaA = decltype(cute::make_tma_atom(cute::SM90_TMA_LOAD{}, GmemTensor{}, SmemLayoutA{}(cute::_, cute::_, 0),
                                            cute::make_shape(cute::Int<BM>{}, cute::Int<BK>{})));
  using TmaB = decltype(cute::make_tma_atom(cute::SM90_TMA_LOAD{}, GmemTensor{}, SmemLayoutB{}(cute::_, cute::_, 0),
                                            cute::make_shape(cute::Int<BN>{}, cute::Int<BK>{})));

  using FullBarrier = cutlass::arch::ClusterTransactionBarrier;
  using EmptyBarrier = cutlass::arch::ClusterBarrier;

  struct SharedStorage {
    alignas(1024) cute::ArrayEngine<Element, cute::cosize_v<SmemLayoutA>> a;  // 1 KiB: the swizzle period
    alignas(1024) cute::ArrayEngine<Element, cute::cosize_v<SmemLayoutB>> b;
    alignas(8) uint64_t tile_full[STAGES];   // TMA bytes of slot s have landed
    alignas(8) uint64_t tile_empty[STAGES];  // every consumer warp has finished reading slot s
  };
  static_assert(sizeof(SharedStorage) <= T::kSmemBytes, "config.hpp's shared-memory bound is too small");

  static constexpr uint32_t kTxBytes = uint32_t((BM + BN) * BK * sizeof(Element));

  struct Params {
    TmaA tma_a;
    TmaB tma_b;
    Element* c;
    const __nv_bfloat16* bias;
    int m, n, k;
    bool bias_gelu;
    TileOrder order;
  };

  // Ring position shared by the producer and the consumers' bookkeeping.
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

  static __device__ void produce(const Params& p, SharedStorage& smem) {
    using namespace cute;
    Tensor mA = p.tma_a.get_tma_tensor(make_shape(p.m, p.k));                                // (M,K)
    Tensor mB = p.tma_b.get_tma_tensor(make_shape(p.n, p.k));                                // (N,K)
    Tensor gA = local_tile(mA, make_shape(Int<BM>{}, Int<BK>{}), make_coord(_, _));         // (BM,BK,m,k)
    Tensor gB = local_tile(mB, make_shape(Int<BN>{}, Int<BK>{}), make_coord(_, _));         // (BN,BK,n,k)
    Tensor sA = make_tensor(make_smem_ptr(smem.a.begin()), SmemLayoutA{});                   // (BM,BK,PIPE)
    Tensor sB = make_tensor(make_smem_ptr(smem.b.begin()), SmemLayoutB{});                   // (BN,BK,PIPE)
    auto [tAgA, tAsA] = tma_partition(p.tma_a, Int<0>{}, cute::Layout<_1>{}, group_modes<0, 2>(sA),
                                      group_modes<0, 2>(gA));  // (TMA,m,k) and (TMA,PIPE)
    auto [tBgB, tBsB] = tma_partition(p.tma_b, Int<0>{}, cute::Layout<_1>{}, group_modes<0, 2>(sB),
                                      group_modes<0, 2>(gB));  // (TMA,n,k) and (TMA,PIPE)
    const int k_tiles = size<3>(gA);
    Pipe pipe;
    for (int t = blockIdx.x; t < p.order.num_tiles(); t += gridDim.x) {
      const TileCoord tile = p.order.at(t);
      for (int k_tile = 0; k_tile < k_tiles; ++k_tile) {
        // A fresh barrier counts as having completed the phase before 0: the first lap passes.
        EmptyBarrier::wait(&smem.tile_empty[pipe.slot], pipe.phase ^ 1);
        FullBarrier::arrive_and_expect_tx(&smem.tile_full[pipe.slot], kTxBytes);
        copy(p.tma_a.with(smem.tile_full[pipe.slot]), tAgA(_, tile.m, k_tile), tAsA(_, pipe.slot));
        copy(p.tma_b.with(smem.tile_full[pipe.slot]), tBgB(_, tile.n, k_tile), tBsB(_, pipe.slot));
        pipe.advance();
      }
    }
  }

  static __device__ void consume(const Params& p, SharedStorage& smem, int consumer_tid) {
    using namespace cute;
    const int lane = consumer_tid % 32;
    Tensor sA = make_tensor(make_smem_ptr(smem.a.begin()), SmemLayoutA{});  // (BM,BK,PIPE)
    Tensor sB = make_tensor(make_smem_ptr(smem.b.begin()), SmemLayoutB{});  // (BN,BK,PIPE)
    TiledMma mma;
    // A/B partitions depend only on the warpgroup: slice with its first thread, made
    // warp-uniform so the descriptors stay in uniform registers.
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
    Pipe pipe;
    for (int t = blockIdx.x; t < p.order.num_tiles(); t += gridDim.x) {
      const TileCoord tile = p.order.at(t);
      mma.accumulate_ = GMMA::ScaleOut::Zero;  // the tile's first k-block overwrites the accumulators
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
        // The previous slice's batch is complete once at most this one is pending: free its slot.
        warpgroup_wait<1>();
        warpgroup_fence_operand(acc);
        if (k_tile > 0 && lane == 0) EmptyBarrier::arrive(&smem.tile_empty[prev_slot]);
        prev_slot = pipe.slot;
        pipe.advance();
      }
      warpgroup_wait<0>();
      warpgroup_fence_operand(acc);
      if (lane == 0) EmptyBarrier::arrive(&smem.tile_empty[prev_slot]);

      // The producer is already filling the ring for the next tile while this one is stored.
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

    if (tid == 0) {
      // The swizzle pattern TMA writes repeats every 1 KiB; WGMMA descriptors assume that base.
      if (cute::cast_smem_ptr_to_uint(smem_raw) % 1024 != 0) __trap();
      cute::prefetch_tma_descriptor(p.tma_a.get_tma_descriptor());
      cute::prefetch_tma_descriptor(p.tma_b.get_tma_descriptor());
      CUTE_UNROLL
      for (int s = 0; s < STAGES; ++s) {
        FullBarrier::init(&smem.tile_full[s], 1);
        EmptyBarrier::init(&smem.tile_empty[s], kConsumerWarps);
      }
      cutlass::arch::fence_barrier_init();
    }
    __syncthreads();

    if (warpgroup == 0) {
      cutlass::arch::warpgroup_reg_dealloc<kProducerRegs>();
      if (warp_in_group == 0 && cute::elect_one_sync()) produce(p, smem);
    } else {
      cutlass::arch::warpgroup_reg_alloc<kConsumerRegs>();
      consume(p, smem, tid - 128);
    }
  }
};

template <class T>
__global__ void __launch_bounds__(kThreads, 1) gemm_sm90_v2_kernel(const __grid_constant__ typename GemmSm90<T>::Params p) {
  extern __shared__ __align__(1024) char smem_raw[];
  GemmSm90<T>::run(p, smem_raw);
}

}  // namespace cutelab::gemm::wgmma_tma_sm90_v2
