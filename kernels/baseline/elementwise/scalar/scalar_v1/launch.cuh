#pragma once
// Host launcher of baseline/elementwise/scalar/v1.

#include <functional>

#include "baseline/elementwise/scalar/scalar_v1/config.hpp"
#include "baseline/elementwise/scalar/scalar_v1/kernel.cuh"
#include "cutelab/core/math.hpp"
#include "cutelab/runtime/kernel.hpp"
#include "cutelab/runtime/launch.hpp"
#include "cutelab/runtime/tensor.hpp"

namespace cutelab::elementwise::scalar_v1 {

inline Kernel plan_launch(const TensorView& x, const TensorView& y, const Config& c) {
  const std::int64_t n = x.numel();
  LaunchShape shape;
  shape.grid = dim3(static_cast<unsigned>(ceil_div<std::int64_t>(n, c.threads)));
  shape.block = dim3(c.threads);
  const auto* xp = static_cast<const __nv_bfloat16*>(x.data);
  auto* yp = static_cast<__nv_bfloat16*>(y.data);
  Kernel k;
  k.resources = {read_resources(reinterpret_cast<const void*>(&gelu_affine_scalar_kernel),
                                "gelu_affine_scalar_kernel", c.threads, 0)};
  k.launch = [shape, xp, yp, n](cudaStream_t stream) {
    cutelab::launch(&gelu_affine_scalar_kernel, shape, stream, xp, yp, n);
  };
  return k;
}

}  // namespace cutelab::elementwise::scalar_v1
