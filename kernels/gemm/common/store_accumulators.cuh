#pragma once
// Epilogue shared by the register-accumulator GEMM kernels (mma.sync and WGMMA): fp32
// accumulators -> optional bias + GELU -> bf16, stored straight to global memory with
// per-element bounds checks, two columns per 4-byte store where alignment allows.

#include <cuda_bf16.h>

#include <cute/tensor.hpp>

#include "gemm/common/epilogue.cuh"

namespace cutelab::gemm {

// acc:  fp32 accumulators of one thread                       // (MMA,MMA_M,MMA_N)
// tCgC: the same partition of the C tile in global memory      // (MMA,MMA_M,MMA_N)
// tCcC: the same partition of the identity tensor of C: (row, col) of each element
// Both MMA families used here (SM80 16x8 and SM90 64xN fp32 accumulators) hold two adjacent
// columns of one row in consecutive registers (value modes of stride "one column" first), so
// elements (i, i+1) with i even are (row, col) and (row, col+1) with col even.
template <class AccTensor, class GTensor, class CTensor>
__device__ __forceinline__ void store_accumulators(const AccTensor& acc, GTensor& tCgC, const CTensor& tCcC, int m,
                                                   int n, const __nv_bfloat16* bias, bool bias_gelu) {
  CUTE_STATIC_ASSERT_V(cute::size(acc) % cute::Int<2>{} == cute::Int<0>{});  // column pairs
  // With n even every pair starts at an even column of an even-length row: 4-byte aligned.
  const bool paired = (n % 2) == 0;
  CUTE_UNROLL
  for (int i = 0; i < cute::size(acc); i += 2) {
    const int row = cute::get<0>(tCcC(i));
    const int col = cute::get<1>(tCcC(i));
    if (row >= m || col >= n) continue;
    float v0 = acc(i);
    float v1 = acc(i + 1);
    const bool second = col + 1 < n;
    if (bias_gelu) {
      v0 = apply_bias_gelu(v0, bias, col);
      if (second) v1 = apply_bias_gelu(v1, bias, col + 1);
    }
    if (paired) {
      *reinterpret_cast<__nv_bfloat162*>(&tCgC(i)) = __floats2bfloat162_rn(v0, v1);
    } else {
      tCgC(i) = static_cast<cute::bfloat16_t>(v0);
      if (second) tCgC(i + 1) = static_cast<cute::bfloat16_t>(v1);
    }
  }
}

}  // namespace cutelab::gemm
