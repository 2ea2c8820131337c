#pragma once
// The plain CUDA kernel to compare against: one bf16 element per thread, the formula written
// as the family defines it (tanhf, fp32).

#include <cuda_bf16.h>

#include <cstdint>

#include "elementwise/common/problem.hpp"

namespace cutelab::elementwise::scalar_v1 {

__global__ void gelu_affine_scalar_kernel(const __nv_bfloat16* __restrict__ x, __nv_bfloat16* __restrict__ y,
                                          std::int64_t n) {
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  constexpr float kC = static_cast<float>(kSqrt2OverPi);
  constexpr float kK = static_cast<float>(kCubic);
  const float v = __bfloat162float(x[i]);
  const float g = 0.5f * v * (1.0f + tanhf(kC * (v + kK * v * v * v)));
  y[i] = __float2bfloat16_rn(g * kAlpha + kBeta);
}

}  // namespace cutelab::elementwise::scalar_v1
