#pragma once
// cute/gemm/tensorop_sm80/v1 device code: the Ampere recipe. cp.async copies K-slices of A and
// B into a STAGES-deep ring of swizzled shared-memory tiles; ldmatrix moves them to registers;
// mma.sync (16x8x16, bf16 in, fp32 accumulate) consumes them while the next slices land.
// Out-of-range rows and the K remainder are zero-filled by the copy (cp.async src-size 0), so
// any m, n and k % 8 == 0 work. The epilogue stores straight from the accumulators.

#include <cuda_bf16.h>

#include <cute/tensor.hpp>

#include "gemm/common/store_accumulators.cuh"

namespace cutelab::gemm::tensorop_sm80_v1 {

template <class T>
struct GemmSm80 {
  using Element = cute::bfloat16_t;
  static constexpr int BM = T::BM, BN = T::BN, BK = T::BK, STAGES = T::STAGES;
  static constexpr int kThreads = T::kThreads;
  static_assert(BK == 64, "the smem swizzle atom below is one 128-byte row of bf16");
  static_assert(STAGES >= 2, "a pipeline needs at least two stages");

  // 8 rows x 64 bf16, 16-byte units XOR-swizzled by row: ldmatrix's 8 row reads hit 8 banks.
  using SmemAtom = decltype(cute::composition(
      cute::Swizzle<3, 3, 3>{},
      cute::Layout<cute::Shape<cute::_8, cute::Int<BK>>, cute::Stride<cute::Int<BK>, cute::_1>>{}));
  using SmemLayoutA = decltype(cute::tile_to_shape(
      SmemAtom{}, cute::make_shape(cute::Int<BM>{}, cute::Int<BK>{}, cute::Int<STAGES>{})));  // (BM,BK,PIPE)
  using SmemLayoutB = decltype(cute::tile_to_shape(
      SmemAtom{}, cute::make_shape(cute::Int<BN>{}, cute::Int<BK>{}, cute::Int<STAGES>{})));  // (BN,BK,PIPE)

  // Threads tile the K-slice 8 x 16 bytes wide (one 128-byte row per 8 threads), K-major.
  static constexpr int kCopyThreadsK = BK / 8;
  using GmemCopy = decltype(cute::make_tiled_copy(
      cute::Copy_Atom<cute::SM80_CP_ASYNC_CACHEGLOBAL_ZFILL<cute::uint128_t>, Element>{},
      cute::Layout<cute::Shape<cute::Int<kThreads / kCopyThreadsK>, cute::Int<kCopyThreadsK>>,
                   cute::Stride<cute::Int<kCopyThreadsK>, cute::_1>>{},
      cute::Layout<cute::Shape<cute::_1, cute::_8>>{}));

  // Warps in a WARPS_M x WARPS_N grid; the permutation tile widens each warp's N step to 16 so
  // B fragments load with one ldmatrix.x4 (two 8-column atoms, k16).
  using TiledMma = decltype(cute::make_tiled_mma(
      cute::SM80_16x8x16_F32BF16BF16F32_TN{},
      cute::Layout<cute::Shape<cute::Int<T::WARPS_M>, cute::Int<T::WARPS_N>, cute::_1>>{},
      cute::Tile<cute::Int<16 * T::WARPS_M>, cute::Int<16 * T::WARPS_N>, cute::_16>{}));
  using S2RAtom = cute::Copy_Atom<cute::SM75_U32x4_LDSM_N, Element>;

  struct SharedStorage {
    alignas(128) cute::ArrayEngine<Element, cute::cosize_v<SmemLayoutA>> a;
    alignas(128) cute::ArrayEngine<Element, cute::cosize_v<SmemLayoutB>> b;
  };
  static_assert(sizeof(SharedStorage) <= T::kSmemBytes, "config.hpp's shared-memory bound is too small");

  struct Params {
    const Element* a;
    const Element* b;
    const __nv_bfloat16* bias;
    Element* c;
    int m, n, k;
    bool bias_gelu;
  };

  static __device__ void run(const Params& p, char* smem_raw) {
    using namespace cute;
    SharedStorage& smem = *reinterpret_cast<SharedStorage*>(smem_raw);
    const int tid = threadIdx.x;

    // 64-bit row strides: m*k exceeds 2^31 at the family's largest sizes.
    Tensor mA = make_tensor(make_gmem_ptr(p.a), make_shape(p.m, p.k), make_stride(int64_t(p.k), _1{}));  // (M,K)
    Tensor mB = make_tensor(make_gmem_ptr(p.b), make_shape(p.n, p.k), make_stride(int64_t(p.k), _1{}));  // (N,K)
    Tensor mC = make_tensor(make_gmem_ptr(p.c), make_shape(p.m, p.n), make_stride(int64_t(p.n), _1{}));  // (M,N)
    Tensor cA = make_identity_tensor(make_shape(p.m, p.k));  // (M,K) -> (m,k)
    Tensor cB = make_identity_tensor(make_shape(p.n, p.k));  // (N,K) -> (n,k)
    Tensor cC = make_identity_tensor(make_shape(p.m, p.n));  // (M,N) -> (m,n)

    auto tiler = make_shape(Int<BM>{}, Int<BN>{}, Int<BK>{});
    auto cta = make_coord(blockIdx.x, blockIdx.y, _);
    Tensor gA = local_tile(mA, tiler, cta, Step<_1, X, _1>{});  // (BM,BK,k)
    Tensor gB = local_tile(mB, tiler, cta, Step<X, _1, _1>{});  // (BN,BK,k)
    Tensor gC = local_tile(mC, tiler, cta, Step<_1, _1, X>{});  // (BM,BN)
    Tensor tileA = local_tile(cA, tiler, cta, Step<_1, X, _1>{});  // (BM,BK,k) -> (m,k)
    Tensor tileB = local_tile(cB, tiler, cta, Step<X, _1, _1>{});  // (BN,BK,k) -> (n,k)
    Tensor tileC = local_tile(cC, tiler, cta, Step<_1, _1, X>{});  // (BM,BN) -> (m,n)

    Tensor sA = make_tensor(make_smem_ptr(smem.a.begin()), SmemLayoutA{});  // (BM,BK,PIPE)
    Tensor sB = make_tensor(make_smem_ptr(smem.b.begin()), SmemLayoutB{});  // (BN,BK,PIPE)

    GmemCopy gmem_copy;
    ThrCopy thr_copy = gmem_copy.get_slice(tid);
    Tensor tAgA = thr_copy.partition_S(gA);     // (CPY,CPY_M,CPY_K,k)
    Tensor tAsA = thr_copy.partition_D(sA);     // (CPY,CPY_M,CPY_K,PIPE)
    Tensor tAcA = thr_copy.partition_S(tileA);  // (CPY,CPY_M,CPY_K,k) -> (m,k)
    Tensor tBgB = thr_copy.partition_S(gB);     // (CPY,CPY_N,CPY_K,k)
    Tensor tBsB = thr_copy.partition_D(sB);     // (CPY,CPY_N,CPY_K,PIPE)
    Tensor tBcB = thr_copy.partition_S(tileB);  // (CPY,CPY_N,CPY_K,k) -> (n,k)

    // Predicates per 16-byte vector: row in range and K-column in range (k % 8 == 0, so a
    // vector is either wholly inside or wholly outside). False -> the copy writes zeros.
    Tensor tApA = make_tensor<bool>(make_shape(size<1>(tAsA), size<2>(tAsA)));  // (CPY_M,CPY_K)
    Tensor tBpB = make_tensor<bool>(make_shape(size<1>(tBsB), size<2>(tBsB)));  // (CPY_N,CPY_K)
    auto load_tile = [&](int k_tile, int pipe) {
      CUTE_UNROLL
      for (int i = 0; i < size<0>(tApA); ++i)
        CUTE_UNROLL
        for (int j = 0; j < size<1>(tApA); ++j) tApA(i, j) = elem_less(tAcA(0, i, j, k_tile), shape(cA));
      CUTE_UNROLL
      for (int i = 0; i < size<0>(tBpB); ++i)
        CUTE_UNROLL
        for (int j = 0; j < size<1>(tBpB); ++j) tBpB(i, j) = elem_less(tBcB(0, i, j, k_tile), shape(cB));
      copy_if(gmem_copy, tApA, tAgA(_, _, _, k_tile), tAsA(_, _, _, pipe));
      copy_if(gmem_copy, tBpB, tBgB(_, _, _, k_tile), tBsB(_, _, _, pipe));
    };

    // Prologue: STAGES-1 K-slices in flight. Past the last slice the last one is reloaded
    // (harmless, never consumed) so every iteration commits exactly one cp.async group.
    const int k_tiles = size<3>(tAgA);
    int k_tile_count = k_tiles;
    int k_tile_next = 0;
    CUTE_UNROLL
    for (int pipe = 0; pipe < STAGES - 1; ++pipe) {
      load_tile(k_tile_next, pipe);
      cp_async_fence();
      --k_tile_count;
      if (k_tile_count > 0) ++k_tile_next;
    }

    TiledMma mma;
    ThrMMA thr_mma = mma.get_slice(tid);
    Tensor tCgC = thr_mma.partition_C(gC);     // (MMA,MMA_M,MMA_N)
    Tensor tCcC = thr_mma.partition_C(tileC);  // (MMA,MMA_M,MMA_N) -> (m,n)
    Tensor tCrA = thr_mma.partition_fragment_A(sA(_, _, 0));  // (MMA,MMA_M,MMA_K)
    Tensor tCrB = thr_mma.partition_fragment_B(sB(_, _, 0));  // (MMA,MMA_N,MMA_K)
    Tensor acc = thr_mma.make_fragment_C(tCgC);               // (MMA,MMA_M,MMA_N)
    clear(acc);

    TiledCopy s2r_a = make_tiled_copy_A(S2RAtom{}, mma);
    ThrCopy s2r_thr_a = s2r_a.get_slice(tid);
    Tensor tXsA = s2r_thr_a.partition_S(sA);   // (CPY,MMA_M,MMA_K,PIPE)
    Tensor tXrA = s2r_thr_a.retile_D(tCrA);    // (CPY,MMA_M,MMA_K)
    TiledCopy s2r_b = make_tiled_copy_B(S2RAtom{}, mma);
    ThrCopy s2r_thr_b = s2r_b.get_slice(tid);
    Tensor tXsB = s2r_thr_b.partition_S(sB);   // (CPY,MMA_N,MMA_K,PIPE)
    Tensor tXrB = s2r_thr_b.retile_D(tCrB);    // (CPY,MMA_N,MMA_K)

    int pipe_read = 0;
    int pipe_write = STAGES - 1;
    Tensor tXsA_p = tXsA(_, _, _, pipe_read);  // (CPY,MMA_M,MMA_K)
    Tensor tXsB_p = tXsB(_, _, _, pipe_read);  // (CPY,MMA_N,MMA_K)
    constexpr int K_BLOCKS = decltype(size<2>(tCrA))::value;

    // First slice resident, its first k-block in registers.
    cp_async_wait<STAGES - 2>();
    __syncthreads();
    copy(S2RAtom{}, tXsA_p(_, _, Int<0>{}), tXrA(_, _, Int<0>{}));
    copy(S2RAtom{}, tXsB_p(_, _, Int<0>{}), tXrB(_, _, Int<0>{}));

    CUTE_NO_UNROLL
    while (k_tile_count > -(STAGES - 1)) {
      CUTE_UNROLL
      for (int k_block = 0; k_block < K_BLOCKS; ++k_block) {
        if (k_block == K_BLOCKS - 1) {
          // Move to the next slice: wait until it has landed and every warp is done reading
          // the slot the next cp.async group will overwrite.
          tXsA_p = tXsA(_, _, _, pipe_read);
          tXsB_p = tXsB(_, _, _, pipe_read);
          cp_async_wait<STAGES - 2>();
          __syncthreads();
        }
        const int k_next = (k_block + 1) % K_BLOCKS;
        copy(S2RAtom{}, tXsA_p(_, _, k_next), tXrA(_, _, k_next));
        copy(S2RAtom{}, tXsB_p(_, _, k_next), tXrB(_, _, k_next));
        if (k_block == 0) {
          load_tile(k_tile_next, pipe_write);
          cp_async_fence();
          --k_tile_count;
          if (k_tile_count > 0) ++k_tile_next;
          pipe_write = pipe_read;
          pipe_read = (pipe_read == STAGES - 1) ? 0 : pipe_read + 1;
        }
        cute::gemm(mma, tCrA(_, _, k_block), tCrB(_, _, k_block), acc);
      }
    }
    cp_async_wait<0>();

    store_accumulators(acc, tCgC, tCcC, p.m, p.n, p.bias, p.bias_gelu);
  }
};

template <class T>
__global__ void __launch_bounds__(T::kThreads) gemm_sm80_kernel(const typename GemmSm80<T>::Params p) {
  extern __shared__ __align__(128) char smem_raw[];
  GemmSm80<T>::run(p, smem_raw);
}

}  // namespace cutelab::gemm::tensorop_sm80_v1
