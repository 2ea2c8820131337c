#pragma once
// The reference the checker trusts for the elementwise family: one thread per element,
// the family's formula evaluated in fp64 on the GPU, rounded once to fp32.

#include <cuda_runtime_api.h>

#include <vector>

#include "cutelab/runtime/tensor.hpp"

namespace cutelab::elementwise {

// x: bf16[n]; y_f32: device fp32[n].
void gelu_affine_reference_gpu(const TensorView& x, float* y_f32, cudaStream_t stream = nullptr);
// The same, returned as host floats (allocates a device fp32 buffer for the call).
[[nodiscard]] std::vector<float> gelu_affine_reference(const TensorView& x, cudaStream_t stream = nullptr);

}  // namespace cutelab::elementwise
