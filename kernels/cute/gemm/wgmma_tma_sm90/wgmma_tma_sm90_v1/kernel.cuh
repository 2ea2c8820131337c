#pragma once
// cute/gemm/wgmma_tma_sm90/v1 device code: the first Hopper GEMM. One CTA per output tile.
// TMA copies K-slices of A and B into a STAGES-deep ring of 128B-swizzled shared-memory tiles,
// each slot guarded by two mbarriers (tile_full: the TMA bytes landed; tile_empty: every warp
// is done reading). Every warpgroup runs WGMMA (64 x BN x 16, both operands from shared memory)
// on its 64 rows; thread 0 also refills the slot the previous slice freed. One WGMMA batch
// stays in flight while the next slice is waited for. Out-of-range rows and the K remainder
// are zero-filled by TMA; the epilogue stores straight from the accumulators with bounds checks.

#include <cuda_bf16.h>

#include <cute/tensor.hpp>
#include <cutlass/arch/barrier.h>

#include "gemm/common/store_accumulators.cuh"

namespace cutelab::gemm::wgmma_tma_sm90_v1 {

template <class T>
struct GemmSm90 {
  using Element = cute::bfloat16_t;
  static constexpr int BM = T::BM, BN = T::BN, BK = T::BK, STAGES = T::STAGES;
  static constexpr int kThreads = T::kThreads;
  static constexpr int kWarps = kThreads / 32;
  static_assert(BM % 64 == 0 && BK % 64 == 0, "tiles are whole 64-row warpgroup slabs and 128-byte K rows");

  // K-major, 128-byte swizzle: the layout both TMA writes and WGMMA descriptors read.
  using SmemLayoutA = decltype(cute::tile_to_shape(cute::GMMA::Layout_K_SW128_Atom<Element>{},
                                                   cute::make_shape(cute::Int<BM>{}, cute::Int<BK>{},
                                                                    cute::Int<STAGES>{})));  // (BM,BK,PIPE)
  using SmemLayoutB = decltype(cute::tile_to_shape(cute::GMMA::Layout_K_SW128_Atom<Element>{},
                                                   cute::make_shape(cute::Int<BN>{}, cute::Int<BK>{},
                                                                    cute::Int<STAGES>{})));  // (BN,BK,PIPE)

  using MmaAtom = decltype(cute::SM90::GMMA::ss_op_selector<Element, Element, float,
                                                            cute::Shape<cute::_64, cute::Int<BN>, cute::Int<BK>>>());
  using TiledMma = decltype(cute::make_tiled_mma(MmaAtom{}, cute::Layout<cute::Shape<cute::Int<BM / 64>, cute::_1, cute::_1>>{}));
  static_assert(decltype(cute::size(TiledMma{}))::value == kThreads);

  using TmaA = decltype(cute::make_tma_atom(
      cute::SM90_TMA_LOAD{},
      cute::make_tensor(static_cast<const Element*>(nullptr), cute::make_shape(0, 0), cute::make_stride(int64_t(0), cute::_1{})),
      SmemLayoutA{}(cute::_, cute::_, 0), cute::make_shape(cute::Int<BM>{}, cute::Int<BK>{})));
  using TmaB = decltype(cute::make_tma_atom(
      cute::SM90_TMA_LOAD{},
      cute::make_tensor(static_cast<const Element*>(nullptr), cute::make_shape(0, 0), cute::make_stride(int64_t(0), cute::_1{})),
      SmemLayoutB{}(cute::_, cute::_, 0), cute::make_shape(cute::Int<BN>{}, cute::Int<BK>{})));

  using FullBarrier = cutlass::arch::ClusterTransactionBarrier;
  using EmptyBarrier = cutlass::arch::ClusterBarrier;

  struct SharedStorage {
    alignas(1024) cute::ArrayEngine<Element, cute::cosize_v<SmemLayoutA>> a;  // 1 KiB: the swizzle period
    alignas(1024) cute::ArrayEngine<Element, cute::cosize_v<SmemLayoutB>> b;
    alignas(8) uint64_t tile_full[STAGES];   // TMA bytes of slot s have landed
    alignas(8) uint64_t tile_empty[STAGES];  // every warp has finished reading slot s
  };
  static_assert(sizeof(SharedStorage) <= T::kSmemBytes, "config.hpp's shared-memory bound is too small");

  // Bytes one slot receives: always the full boxes, out-of-range elements included (zero-filled).
  static constexpr uint32_t kTxBytes = uint32_t((BM + BN) * BK * sizeof(Element));

  struct Params {
    TmaA tma_a;
    TmaB tma_b;
    Element* c;
    const __nv_bfloat16* bias;
    int m, n, k;
    bool bias_gelu;
  };

  static __device__ void run(const Params& p, char* smem_raw) {
    using namespace cute;
    SharedStorage& smem = *reinterpret_cast<SharedStorage*>(smem_raw);
    const int tid = threadIdx.x;
    const int lane = tid % 32;
    const int tile_m = blockIdx.x;
    const int tile_n = blockIdx.y;

    Tensor mA = p.tma_a.get_tma_tensor(make_shape(p.m, p.k));  // (M,K) TMA coordinates
    Tensor mB = p.tma_b.get_tma_tensor(make_shape(p.n, p.k));  // (N,K)
    Tensor gA = local_tile(mA, make_shape(Int<BM>{}, Int<BK>{}), make_coord(tile_m, _));  // (BM,BK,k)
    Tensor gB = local_tile(mB, make_shape(Int<BN>{}, Int<BK>{}), make_coord(tile_n, _));  // (BN,BK,k)
    Tensor sA = make_tensor(make_smem_ptr(smem.a.begin()), SmemLayoutA{});  // (BM,BK,PIPE)
    Tensor sB = make_tensor(make_smem_ptr(smem.b.begin()), SmemLayoutB{});  // (BN,BK,PIPE)

    // One TMA instruction per slot and operand, no multicast.
    auto [tAgA, tAsA] = tma_partition(p.tma_a, Int<0>{}, Layout<_1>{}, group_modes<0, 2>(sA),
                                      group_modes<0, 2>(gA));  // (TMA,k) and (TMA,PIPE)
    auto [tBgB, tBsB] = tma_partition(p.tma_b, Int<0>{}, Layout<_1>{}, group_modes<0, 2>(sB),
                                      group_modes<0, 2>(gB));  // (TMA,k) and (TMA,PIPE)
    const int k_tiles = size<1>(tAgA);  // ceil(k / BK)

    if (tid == 0) {
      // The swizzle pattern TMA writes repeats every 1 KiB; WGMMA descriptors assume that base.
      if (cast_smem_ptr_to_uint(smem_raw) % 1024 != 0) __trap();
      prefetch_tma_descriptor(p.tma_a.get_tma_descriptor());
      prefetch_tma_descriptor(p.tma_b.get_tma_descriptor());
      CUTE_UNROLL
      for (int s = 0; s < STAGES; ++s) {
        FullBarrier::init(&smem.tile_full[s], 1);
        EmptyBarrier::init(&smem.tile_empty[s], kWarps);
      }
      cutlass::arch::fence_barrier_init();
    }
    __syncthreads();

    auto issue_loads = [&](int k_tile, int slot) {
      FullBarrier::arrive_and_expect_tx(&smem.tile_full[slot], kTxBytes);
      copy(p.tma_a.with(smem.tile_full[slot]), tAgA(_, k_tile), tAsA(_, slot));
      copy(p.tma_b.with(smem.tile_full[slot]), tBgB(_, k_tile), tBsB(_, slot));
    };
    if (tid == 0) {
      for (int s = 0; s < STAGES && s < k_tiles; ++s) issue_loads(s, s);
    }

    TiledMma mma;
    // A/B partitions depend only on the warpgroup: slice with its first thread, made
    // warp-uniform so the descriptors stay in uniform registers.
    const int wg_first = __shfl_sync(0xffffffff, (tid / 128) * 128, 0);
    ThrMMA wg_mma = mma.get_slice(wg_first);
    Tensor tCsA = wg_mma.partition_A(sA);          // (MMA,MMA_M,MMA_K,PIPE)
    Tensor tCsB = wg_mma.partition_B(sB);          // (MMA,MMA_N,MMA_K,PIPE)
    Tensor tCrA = wg_mma.make_fragment_A(tCsA);    // (MMA,MMA_M,MMA_K,PIPE) descriptors
    Tensor tCrB = wg_mma.make_fragment_B(tCsB);    // (MMA,MMA_N,MMA_K,PIPE) descriptors
    Tensor acc = partition_fragment_C(mma.get_slice(tid), make_shape(Int<BM>{}, Int<BN>{}));  // (MMA,MMA_M,MMA_N)
    constexpr int K_BLOCKS = decltype(size<2>(tCrA))::value;

    mma.accumulate_ = GMMA::ScaleOut::Zero;  // the first k-block overwrites the accumulators
    for (int k_tile = 0; k_tile < k_tiles; ++k_tile) {
      const int slot = k_tile % STAGES;
      FullBarrier::wait(&smem.tile_full[slot], (k_tile / STAGES) & 1);
      warpgroup_fence_operand(acc);
      warpgroup_arrive();
      CUTE_UNROLL
      for (int kb = 0; kb < K_BLOCKS; ++kb) {
        cute::gemm(mma, tCrA(_, _, kb, slot), tCrB(_, _, kb, slot), acc);
        mma.accumulate_ = GMMA::ScaleOut::One;
      }
      warpgroup_commit_batch();
      // The previous slice's batch is complete once at most this one is pending.
      warpgroup_wait<1>();
      warpgroup_fence_operand(acc);
      if (k_tile > 0) {
        const int done = k_tile - 1;
        const int done_slot = done % STAGES;
        if (lane == 0) EmptyBarrier::arrive(&smem.tile_empty[done_slot]);
        const int refill = done + STAGES;
        if (tid == 0 && refill < k_tiles) {
          EmptyBarrier::wait(&smem.tile_empty[done_slot], (done / STAGES) & 1);
          issue_loads(refill, done_slot);
        }
      }
    }
    warpgroup_wait<0>();
    warpgroup_fence_operand(acc);

    Tensor mC = make_tensor(make_gmem_ptr(p.c), make_shape(p.m, p.n), make_stride(int64_t(p.n), _1{}));  // (M,N)
    Tensor cC = make_identity_tensor(make_shape(p.m, p.n));                                             // (M,N)
    Tensor gC = local_tile(mC, make_shape(Int<BM>{}, Int<BN>{}), make_coord(tile_m, tile_n));           // (BM,BN)
    Tensor tileC = local_tile(cC, make_shape(Int<BM>{}, Int<BN>{}), make_coord(tile_m, tile_n));        // (BM,BN)
    ThrMMA thr_mma = mma.get_slice(tid);
    Tensor tCgC = thr_mma.partition_C(gC);     // (MMA,MMA_M,MMA_N)
    Tensor tCcC = thr_mma.partition_C(tileC);  // (MMA,MMA_M,MMA_N) -> (m,n)
    store_accumulators(acc, tCgC, tCcC, p.m, p.n, p.bias, p.bias_gelu);
  }
};

template <class T>
__global__ void __launch_bounds__(T::kThreads, 1) gemm_sm90_v1_kernel(const __grid_constant__ typename GemmSm90<T>::Params p) {
  extern __shared__ __align__(1024) char smem_raw[];
  GemmSm90<T>::run(p, smem_raw);
}

}  // namespace cutelab::gemm::wgmma_tma_sm90_v1
