#pragma once
// The family's epilogue math, shared by every GEMM kernel and the reference so that they
// compute the same function (problem.hpp says which).

#include <cuda_bf16.h>

namespace cutelab::gemm {

// GELU, tanh form. tanhf (not tanh.approx) keeps the epilogue's own error far below the bf16
// rounding of the output; its cost is a few instructions per output element.
__device__ __forceinline__ float gelu_tanh(float x) {
  constexpr float kSqrt2OverPi = 0.7978845608028654f;
  constexpr float kCubic = 0.044715f;
  return 0.5f * x * (1.0f + tanhf(kSqrt2OverPi * (x + kCubic * x * x * x)));
}

__device__ __forceinline__ float apply_bias_gelu(float acc, const __nv_bfloat16* bias, int col) {
  return gelu_tanh(acc + __bfloat162float(bias[col]));
}

}  // namespace cutelab::gemm
