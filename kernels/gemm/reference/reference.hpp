#pragma once
// The GEMM reference the checker trusts: one thread per output element over shared-memory
// tiles, fp32 products and sums of the bf16 inputs, the epilogue in fp32, fp32 output.
// Slow (a few TFLOP/s) and obviously right.

#include <cuda_runtime_api.h>

#include "gemm/common/problem.hpp"

namespace cutelab::gemm {

// out: fp32 [m, n] on the device.
void reference_gemm(const GemmOperands& ops, float* out, cudaStream_t stream);

}  // namespace cutelab::gemm
