#pragma once
// The plain CUDA kernel to compare against: one block per row, scalar bf16 loads, a first pass
// for the sum of squares (fp32, block reduction through shared memory), a second pass that
// reads x again and writes y.

#include <cuda_bf16.h>

#include <cstdint>

namespace cutelab::rmsnorm::naive_v1 {

inline constexpr int kMaxWarps = 32;

__global__ void rmsnorm_naive_kernel(const __nv_bfloat16* __restrict__ x, const __nv_bfloat16* __restrict__ w,
                                     __nv_bfloat16* __restrict__ y, int cols, float eps) {
  __shared__ float warp_sums[kMaxWarps];
  __shared__ float inv_rms;
  const std::int64_t row_start = static_cast<std::int64_t>(blockIdx.x) * cols;

  float sum = 0.0f;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) {
    const float v = __bfloat162float(x[row_start + c]);
    sum += v * v;
  }
  for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, offset);
  if (threadIdx.x % 32 == 0) warp_sums[threadIdx.x / 32] = sum;
  __syncthreads();
  if (threadIdx.x == 0) {
    float total = 0.0f;
    for (int i = 0; i < static_cast<int>(blockDim.x / 32); ++i) total += warp_sums[i];
    inv_rms = rsqrtf(total / static_cast<float>(cols) + eps);
  }
  __syncthreads();

  for (int c = threadIdx.x; c < cols; c += blockDim.x) {
    const float v = __bfloat162float(x[row_start + c]);
    y[row_start + c] = __float2bfloat16_rn(v * inv_rms * __bfloat162float(w[c]));
  }
}

}  // namespace cutelab::rmsnorm::naive_v1
