#pragma once
// Device code of cute/rmsnorm/rowwise/v1: one row per group of ThreadsPerRow threads, the row
// read once into registers (16-byte vectors), fp32 sum of squares reduced by warp shuffles and,
// across warps, through shared memory, then scaled and written from the same registers.

#include <cute/tensor.hpp>

#include <cstdint>

#include "cute/rmsnorm/rowwise/rowwise_v1/config.hpp"

namespace cutelab::rmsnorm::rowwise_v1 {

template <class Cfg>
struct RowwiseKernel {
  using Element = cute::bfloat16_t;
  static constexpr int kThreads = Cfg::kThreads;
  static constexpr int kThreadsPerRow = Cfg::kThreadsPerRow;
  static constexpr int kVecs = Cfg::kVecs;
  static constexpr int kRowsPerCta = Cfg::kRowsPerCta;
  static constexpr int kWarpsPerRow = Cfg::kWarpsPerRow;
  static constexpr int kRowTile = Cfg::kRowTile;

  struct Params {
    const Element* x;  // [rows, cols]
    const Element* w;  // [cols]
    Element* y;        // [rows, cols]
    std::int64_t rows;
    int cols;
    float eps;
    // cols % 8 == 0 and x, w, y 16-byte aligned: whole vectors; else element by element.
    bool vectorized;
  };

  struct SharedStorage {
    float warp_sums[kRowsPerCta][kWarpsPerRow];
  };

  CUTE_DEVICE static float warp_sum(float v) {
    CUTE_UNROLL
    for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
    return v;
  }

  // Sum over the row group: shuffles inside each warp, then shared memory across its warps.
  // Every thread of the block calls it (it may hold a barrier).
  CUTE_DEVICE static float row_sum(float partial, SharedStorage& smem, int row_in_cta, int thr_in_row) {
    float sum = warp_sum(partial);
    if constexpr (kWarpsPerRow > 1) {
      if (thr_in_row % 32 == 0) smem.warp_sums[row_in_cta][thr_in_row / 32] = sum;
      __syncthreads();
      sum = 0.0f;
      CUTE_UNROLL
      for (int w = 0; w < kWarpsPerRow; ++w) sum += smem.warp_sums[row_in_cta][w];
    }
    return sum;
  }

  CUTE_DEVICE static void devfunc(const Params& p) {
    using namespace cute;
    static_assert(sizeof(Element) * kVecElems == 16, "one vector is one 16-byte access");
    __shared__ SharedStorage smem;

    const int row_in_cta = threadIdx.x / kThreadsPerRow;
    const int thr_in_row = threadIdx.x % kThreadsPerRow;
    const std::int64_t row = static_cast<std::int64_t>(blockIdx.x) * kRowsPerCta + row_in_cta;
    // Groups past the last row keep running (they reach the barrier) but touch no memory.
    const bool row_ok = row < p.rows;
    const std::int64_t safe_row = row_ok ? row : 0;

    auto row_major =
        make_layout(make_shape(p.rows, p.cols), make_stride(static_cast<std::int64_t>(p.cols), _1{}));
    Tensor mX = make_tensor(make_gmem_ptr(p.x), row_major);           // (ROWS,COLS)
    Tensor mY = make_tensor(make_gmem_ptr(p.y), row_major);           // (ROWS,COLS)
    Tensor mW = make_tensor(make_gmem_ptr(p.w), make_shape(p.cols));  // (COLS)

    // p.vectorized is the same for the whole grid, so each branch's barrier is reached by all.
    if (p.vectorized) {
      vector_path(p, mX(safe_row, _), mW, mY(safe_row, _), row_ok, smem, row_in_cta, thr_in_row);
    } else {
      scalar_path(p, mX(safe_row, _), mW, mY(safe_row, _), row_ok, smem, row_in_cta, thr_in_row);
    }
  }

  // The row in registers as 16-byte vectors: one read of x, one of w, one write of y.
  template <class RowX, class RowW, class RowY>
  CUTE_DEVICE static void vector_path(const Params& p, RowX const& gRowX, RowW const& gRowW, RowY&& gRowY,
                                      bool row_ok, SharedStorage& smem, int row_in_cta, int thr_in_row) {
    using namespace cute;
    // The row padded to the group's static extent; vectors past cols are masked.
    Tensor gX = local_tile(gRowX, Shape<Int<kRowTile>>{}, make_coord(0));  // (ROW_TILE)
    Tensor gW = local_tile(gRowW, Shape<Int<kRowTile>>{}, make_coord(0));  // (ROW_TILE)
    Tensor gY = local_tile(gRowY, Shape<Int<kRowTile>>{}, make_coord(0));  // (ROW_TILE)
    Tensor cRow = make_identity_tensor(Shape<Int<kRowTile>>{});            // (ROW_TILE) -> col

    // Vector v of thread t covers columns (v * kThreadsPerRow + t) * 8 ... + 7: each vector
    // step of a warp is 512 contiguous bytes.
    auto tiled_copy = make_tiled_copy(Copy_Atom<UniversalCopy<uint128_t>, Element>{},
                                      Layout<Shape<Int<kThreadsPerRow>>>{},  // (THR)
                                      Layout<Shape<Int<kVecElems>>>{});      // (VEC)
    ThrCopy thr_copy = tiled_copy.get_thread_slice(thr_in_row);
    Tensor tXgX = thr_copy.partition_S(gX);    // (CPY,VECS)
    Tensor tXgW = thr_copy.partition_S(gW);    // (CPY,VECS)
    Tensor tYgY = thr_copy.partition_D(gY);    // (CPY,VECS)
    Tensor tXcX = thr_copy.partition_S(cRow);  // (CPY,VECS) -> col
    Tensor tXrX = make_fragment_like(tXgX);    // (CPY,VECS)
    Tensor tXrW = make_fragment_like(tXgW);    // (CPY,VECS)

    // cols % 8 == 0 here, so a vector is wholly inside the row or wholly outside.
    Tensor tXpV = make_tensor<bool>(make_shape(_1{}, Int<kVecs>{}), make_stride(_0{}, _1{}));  // (1,VECS)
    CUTE_UNROLL
    for (int v = 0; v < kVecs; ++v) tXpV(0, v) = row_ok && get<0>(tXcX(0, v)) < p.cols;

    clear(tXrX);                            // masked vectors add nothing to the sum
    copy_if(tiled_copy, tXpV, tXgX, tXrX);  // all VECS loads in flight before the first use

    float sum = 0.0f;
    CUTE_UNROLL
    for (int i = 0; i < size(tXrX); ++i) {
      const float v = static_cast<float>(tXrX(i));
      sum = fmaf(v, v, sum);
    }
    sum = row_sum(sum, smem, row_in_cta, thr_in_row);
    const float inv_rms = rsqrtf(sum / static_cast<float>(p.cols) + p.eps);

    // w is read after the sum, not with x: every row reads the same w (an L1/L2 hit), and
    // holding it across the reduction would double the registers per thread (the 1024 x 8
    // variant, at most 64 registers per thread, would spill).
    copy_if(tiled_copy, tXpV, tXgW, tXrW);
    CUTE_UNROLL
    for (int i = 0; i < size(tXrX); ++i)
      tXrX(i) = Element(static_cast<float>(tXrX(i)) * inv_rms * static_cast<float>(tXrW(i)));
    copy_if(tiled_copy, tXpV, tXrX, tYgY);
  }

  // Any cols, any alignment: element by element, x read twice (the second read mostly hits
  // L1/L2). Holding the row in registers here would cost a register per element.
  template <class RowX, class RowW, class RowY>
  CUTE_DEVICE static void scalar_path(const Params& p, RowX const& gRowX, RowW const& gRowW, RowY&& gRowY,
                                      bool row_ok, SharedStorage& smem, int row_in_cta, int thr_in_row) {
    float sum = 0.0f;
    if (row_ok) {
      for (int c = thr_in_row; c < p.cols; c += kThreadsPerRow) {
        const float v = static_cast<float>(gRowX(c));
        sum = fmaf(v, v, sum);
      }
    }
    sum = row_sum(sum, smem, row_in_cta, thr_in_row);
    const float inv_rms = rsqrtf(sum / static_cast<float>(p.cols) + p.eps);
    if (row_ok) {
      for (int c = thr_in_row; c < p.cols; c += kThreadsPerRow)
        gRowY(c) = Element(static_cast<float>(gRowX(c)) * inv_rms * static_cast<float>(gRowW(c)));
    }
  }
};

template <class Kernel>
__global__ void __launch_bounds__(Kernel::kThreads)
    rmsnorm_rowwise_kernel(const __grid_constant__ typename Kernel::Params p) {
  Kernel::devfunc(p);
}

}  // namespace cutelab::rmsnorm::rowwise_v1
