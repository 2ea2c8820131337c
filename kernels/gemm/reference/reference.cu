#include "gemm/reference/reference.hpp"

#include <cuda_bf16.h>

#include <cstdint>

#include "cutelab/core/error.hpp"
#include "cutelab/core/math.hpp"
#include "gemm/common/epilogue.cuh"

namespace cutelab::gemm {
namespace {

constexpr int kTile = 16;

// One output per thread; 16x16 tiles of A and B staged in shared memory as fp32.
// Indices are 64-bit: m*k alone can exceed 2^31 at the family's largest sizes.
__global__ void reference_gemm_kernel(const __nv_bfloat16* __restrict__ a, const __nv_bfloat16* __restrict__ b,
                                      const __nv_bfloat16* __restrict__ bias, float* __restrict__ c, int m, int n,
                                      int k, bool bias_gelu) {
  __shared__ float s_a[kTile][kTile + 1];  // [row][k], padded against bank conflicts
  __shared__ float s_b[kTile][kTile + 1];  // [col][k]
  const int tx = threadIdx.x, ty = threadIdx.y;
  const std::int64_t row = std::int64_t(blockIdx.y) * kTile + ty;
  const std::int64_t col = std::int64_t(blockIdx.x) * kTile + tx;
  const std::int64_t b_row = std::int64_t(blockIdx.x) * kTile + ty;  // the B row this thread stages
  float acc = 0.0f;
  for (int k0 = 0; k0 < k; k0 += kTile) {
    const int kk = k0 + tx;
    s_a[ty][tx] = (row < m && kk < k) ? __bfloat162float(a[row * k + kk]) : 0.0f;
    s_b[ty][tx] = (b_row < n && kk < k) ? __bfloat162float(b[b_row * k + kk]) : 0.0f;
    __syncthreads();
#pragma unroll
    for (int i = 0; i < kTile; ++i) acc = fmaf(s_a[ty][i], s_b[tx][i], acc);
    __syncthreads();
  }
  if (row < m && col < n) {
    if (bias_gelu) acc = apply_bias_gelu(acc, bias, static_cast<int>(col));
    c[row * n + col] = acc;
  }
}

}  // namespace

void reference_gemm(const GemmOperands& ops, float* out, cudaStream_t stream) {
  CUTELAB_REQUIRE(ops.m > 0 && ops.n > 0 && ops.k > 0, "reference_gemm: sizes must be positive, got m=", ops.m,
                  " n=", ops.n, " k=", ops.k);
  CUTELAB_REQUIRE(ops.epilogue == Epilogue::none || ops.bias != nullptr,
                  "reference_gemm: epilogue bias_gelu needs a bias pointer");
  const dim3 block(kTile, kTile);
  const dim3 grid(ceil_div(ops.n, kTile), ceil_div(ops.m, kTile));
  reference_gemm_kernel<<<grid, block, 0, stream>>>(
      static_cast<const __nv_bfloat16*>(ops.a), static_cast<const __nv_bfloat16*>(ops.b),
      static_cast<const __nv_bfloat16*>(ops.bias), out, ops.m, ops.n, ops.k, ops.epilogue == Epilogue::bias_gelu);
  CUTELAB_CUDA_LAUNCH();
}

}  // namespace cutelab::gemm
