#pragma once
// References the checker trusts for rmsnorm: a GPU kernel (one block per row, fp64 sum of
// squares with a plain shared-memory tree, fp64 normalization rounded once to fp32), and an
// fp64 CPU loop for small cases that checks the GPU one.

#include <cuda_runtime_api.h>

#include <cstdint>
#include <vector>

#include "cutelab/runtime/tensor.hpp"

namespace cutelab::rmsnorm {

// x: bf16[rows, cols], w: bf16[cols]; y_f32: device fp32[rows, cols].
void rmsnorm_reference_gpu(const TensorView& x, const TensorView& w, float* y_f32,
                           cudaStream_t stream = nullptr);
// The same, returned as host floats (allocates a device fp32 buffer for the call).
[[nodiscard]] std::vector<float> rmsnorm_reference(const TensorView& x, const TensorView& w,
                                                   cudaStream_t stream = nullptr);
// Host fp64 loop over raw bf16 bits.
[[nodiscard]] std::vector<float> rmsnorm_reference_cpu(const std::vector<std::uint16_t>& x_bits,
                                                       const std::vector<std::uint16_t>& w_bits,
                                                       std::int64_t rows, int cols);

}  // namespace cutelab::rmsnorm
