#include "rmsnorm/reference/reference.hpp"

#include <cuda_bf16.h>

#include <cmath>

#include "cutelab/core/error.hpp"
#include "rmsnorm/common/problem.hpp"

namespace cutelab::rmsnorm {

namespace {

constexpr int kRefThreads = 256;

__global__ void rmsnorm_reference_kernel(const __nv_bfloat16* x, const __nv_bfloat16* w, float* y, int cols) {
  __shared__ double partial[kRefThreads];
  const std::int64_t row_start = static_cast<std::int64_t>(blockIdx.x) * cols;
  double sum = 0;
  for (int c = threadIdx.x; c < cols; c += kRefThreads) {
    const double v = __bfloat162float(x[row_start + c]);
    sum += v * v;
  }
  partial[threadIdx.x] = sum;
  __syncthreads();
  for (int half = kRefThreads / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) partial[threadIdx.x] += partial[threadIdx.x + half];
    __syncthreads();
  }
  const double inv_rms = 1.0 / sqrt(partial[0] / cols + static_cast<double>(kEps));
  for (int c = threadIdx.x; c < cols; c += kRefThreads) {
    const double v = __bfloat162float(x[row_start + c]);
    y[row_start + c] = static_cast<float>(v * inv_rms * static_cast<double>(__bfloat162float(w[c])));
  }
}

void require_shapes(const TensorView& x, const TensorView& w) {
  CUTELAB_REQUIRE(x.dtype == DType::bf16 && w.dtype == DType::bf16,
                  "rmsnorm reference: x and w must be bf16, got ", x.describe(), " and ", w.describe());
  CUTELAB_REQUIRE(x.rank() == 2 && x.contiguous(),
                  "rmsnorm reference: x must be a contiguous [rows, cols], got ", x.describe());
  CUTELAB_REQUIRE(w.rank() == 1 && w.shape[0] == x.shape[1], "rmsnorm reference: w must be [", x.shape[1],
                  "], got ", w.describe());
}

}  // namespace

void rmsnorm_reference_gpu(const TensorView& x, const TensorView& w, float* y_f32, cudaStream_t stream) {
  require_shapes(x, w);
  const std::int64_t rows = x.shape[0];
  const int cols = static_cast<int>(x.shape[1]);
  if (rows == 0) return;
  rmsnorm_reference_kernel<<<static_cast<unsigned>(rows), kRefThreads, 0, stream>>>(
      static_cast<const __nv_bfloat16*>(x.data), static_cast<const __nv_bfloat16*>(w.data), y_f32, cols);
  CUTELAB_CUDA_LAUNCH();
}

std::vector<float> rmsnorm_reference(const TensorView& x, const TensorView& w, cudaStream_t stream) {
  DeviceTensor y(DType::f32, {x.numel()});
  rmsnorm_reference_gpu(x, w, y.as<float>(), stream);
  CUTELAB_CUDA(cudaStreamSynchronize(stream));
  return copy_to_host<float>(y.view());
}

std::vector<float> rmsnorm_reference_cpu(const std::vector<std::uint16_t>& x_bits,
                                         const std::vector<std::uint16_t>& w_bits, std::int64_t rows,
                                         int cols) {
  CUTELAB_REQUIRE(static_cast<std::int64_t>(x_bits.size()) == rows * cols, "rmsnorm_reference_cpu: x holds ",
                  x_bits.size(), " elements, expected rows*cols = ", rows * cols);
  CUTELAB_REQUIRE(static_cast<int>(w_bits.size()) == cols, "rmsnorm_reference_cpu: w holds ", w_bits.size(),
                  " elements, expected cols = ", cols);
  std::vector<float> y(x_bits.size());
  for (std::int64_t r = 0; r < rows; ++r) {
    const std::uint16_t* xr = x_bits.data() + r * cols;
    double sum = 0;
    for (int c = 0; c < cols; ++c) {
      const double v = bf16_bits_to_float(xr[c]);
      sum += v * v;
    }
    const double inv_rms = 1.0 / std::sqrt(sum / cols + static_cast<double>(kEps));
    for (int c = 0; c < cols; ++c)
      y[r * cols + c] =
          static_cast<float>(bf16_bits_to_float(xr[c]) * inv_rms * bf16_bits_to_float(w_bits[c]));
  }
  return y;
}

}  // namespace cutelab::rmsnorm
