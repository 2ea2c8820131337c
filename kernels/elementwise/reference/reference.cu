#include "elementwise/reference/reference.hpp"

#include <cuda_bf16.h>

#include <cstdint>

#include "cutelab/core/error.hpp"
#include "cutelab/core/math.hpp"
#include "elementwise/common/problem.hpp"

namespace cutelab::elementwise {

namespace {

__global__ void gelu_affine_reference_kernel(const __nv_bfloat16* x, float* y, std::int64_t n) {
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const double v = static_cast<double>(__bfloat162float(x[i]));
  const double g = 0.5 * v * (1.0 + tanh(kSqrt2OverPi * (v + kCubic * v * v * v)));
  y[i] = static_cast<float>(g * static_cast<double>(kAlpha) + static_cast<double>(kBeta));
}

}  // namespace

void gelu_affine_reference_gpu(const TensorView& x, float* y_f32, cudaStream_t stream) {
  CUTELAB_REQUIRE(x.dtype == DType::bf16, "elementwise reference: x must be bf16, got ", x.describe());
  CUTELAB_REQUIRE(x.contiguous(), "elementwise reference: x must be contiguous, got ", x.describe());
  const std::int64_t n = x.numel();
  if (n == 0) return;
  constexpr int kThreads = 256;
  const std::int64_t blocks = ceil_div<std::int64_t>(n, kThreads);
  gelu_affine_reference_kernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(
      static_cast<const __nv_bfloat16*>(x.data), y_f32, n);
  CUTELAB_CUDA_LAUNCH();
}

std::vector<float> gelu_affine_reference(const TensorView& x, cudaStream_t stream) {
  DeviceTensor y(DType::f32, {x.numel()});
  gelu_affine_reference_gpu(x, y.as<float>(), stream);
  CUTELAB_CUDA(cudaStreamSynchronize(stream));
  return copy_to_host<float>(y.view());
}

}  // namespace cutelab::elementwise
