#pragma once
// Device code of cute/elementwise/gelu_affine/v1: y = gelu_tanh(x) * kAlpha + kBeta, bf16.
// Full tiles move as 16-byte vectors through a CuTe TiledCopy; the elements after the last
// full tile (and everything, when a pointer is not 16-byte aligned) go through a scalar loop.

#include <cute/tensor.hpp>

#include <cstdint>

#include "cute/elementwise/gelu_affine/gelu_affine_v1/config.hpp"
#include "cutelab/device/fast_math.cuh"
#include "elementwise/common/problem.hpp"

namespace cutelab::elementwise::gelu_affine_v1 {

// 0.5 x (1 + tanh(u)) == x * sigmoid(2u) == x / (1 + exp(-2u)), u = sqrt(2/pi) (x + 0.044715 x^3).
// This form has no cancellation where tanh(u) -> -1 (x << 0) and costs two MUFU ops (ex2, rcp);
// exp(-2u) = 2^(t * -2 sqrt(2/pi) log2(e)) with t = x + 0.044715 x^3 folds three multiplies into
// one. exp overflowing to +inf gives x * rcp(inf) = -0, the right limit.
CUTE_DEVICE float gelu_affine(float x) {
  constexpr float kK = static_cast<float>(kCubic);
  constexpr float kExpScale = static_cast<float>(-2.0 * kSqrt2OverPi * 1.4426950408889634074);  // log2(e)
  const float t = x * fmaf(kK, x * x, 1.0f);
  const float e = device::ex2_approx_ftz(t * kExpScale);
  return fmaf(x * device::rcp_approx_ftz(1.0f + e), kAlpha, kBeta);
}

template <class Cfg>
struct GeluAffineKernel {
  using Element = cute::bfloat16_t;
  static constexpr int kThreads = Cfg::kThreads;
  static constexpr int kVecs = Cfg::kVecs;
  static constexpr int kTileElems = Cfg::kTileElems;

  struct Params {
    const Element* x;
    Element* y;
    std::int64_t n;
    std::int64_t num_tiles;  // full tiles done vectorized (0 when a pointer is unaligned)
  };

  CUTE_DEVICE static void devfunc(const Params& p) {
    using namespace cute;
    static_assert(sizeof(Element) * kVecElems == 16, "one vector is one 16-byte access");

    // Tile t holds elements [t * kTileElems, (t+1) * kTileElems); inside it, vector v of
    // thread i starts at element (v * kThreads + i) * 8, so every vector step of a warp reads
    // 512 contiguous bytes.
    auto tile_layout = make_layout(make_shape(Int<kThreads * kVecElems>{}, Int<kVecs>{}, p.num_tiles));
    Tensor mX = make_tensor(make_gmem_ptr(p.x), tile_layout);  // (THR_VAL,VECS,TILES)
    Tensor mY = make_tensor(make_gmem_ptr(p.y), tile_layout);  // (THR_VAL,VECS,TILES)

    auto tiled_copy = make_tiled_copy(Copy_Atom<UniversalCopy<uint128_t>, Element>{},
                                      Layout<Shape<Int<kThreads>, _1>>{},    // (THR,1) threads
                                      Layout<Shape<Int<kVecElems>, _1>>{});  // (VEC,1) values each
    ThrCopy thr_copy = tiled_copy.get_thread_slice(threadIdx.x);
    Tensor tXgX = thr_copy.partition_S(mX);              // (CPY,CPY_M,CPY_N,TILES) = ((8,1),1,VECS,TILES)
    Tensor tYgY = thr_copy.partition_D(mY);              // (CPY,CPY_M,CPY_N,TILES)
    Tensor tXrX = make_fragment_like(tXgX(_, _, _, 0));  // (CPY,CPY_M,CPY_N)

    for (std::int64_t tile = blockIdx.x; tile < p.num_tiles; tile += gridDim.x) {
      // The VECS loads are issued before the math (ptxas may sink the later ones past the
      // first vectors' math to stay at 32 registers: see the README).
      copy(tiled_copy, tXgX(_, _, _, tile), tXrX);
      CUTE_UNROLL
      for (int i = 0; i < size(tXrX); ++i) tXrX(i) = Element(gelu_affine(static_cast<float>(tXrX(i))));
      copy(tiled_copy, tXrX, tYgY(_, _, _, tile));
    }

    // The tail after the last full tile, spread over the whole grid.
    Tensor gX = make_tensor(make_gmem_ptr(p.x), make_shape(p.n));  // (N)
    Tensor gY = make_tensor(make_gmem_ptr(p.y), make_shape(p.n));  // (N)
    const std::int64_t first = p.num_tiles * kTileElems + static_cast<std::int64_t>(blockIdx.x) * kThreads;
    const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * kThreads;
    for (std::int64_t i = first + threadIdx.x; i < p.n; i += stride)
      gY(i) = Element(gelu_affine(static_cast<float>(gX(i))));
  }
};

template <class Kernel>
__global__ void __launch_bounds__(Kernel::kThreads)
    gelu_affine_kernel(const __grid_constant__ typename Kernel::Params p) {
  Kernel::devfunc(p);
}

}  // namespace cutelab::elementwise::gelu_affine_v1
