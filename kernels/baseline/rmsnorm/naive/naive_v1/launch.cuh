#pragma once
// Host launcher of baseline/rmsnorm/naive/v1.

#include "baseline/rmsnorm/naive/naive_v1/config.hpp"
#include "baseline/rmsnorm/naive/naive_v1/kernel.cuh"
#include "cutelab/core/error.hpp"
#include "cutelab/runtime/kernel.hpp"
#include "cutelab/runtime/launch.hpp"
#include "cutelab/runtime/tensor.hpp"

namespace cutelab::rmsnorm::naive_v1 {

inline Kernel plan_launch(const TensorView& x, const TensorView& w, const TensorView& y, const Config& c) {
  const std::int64_t rows = x.shape.at(0);
  const int cols = static_cast<int>(x.shape.at(1));
  CUTELAB_REQUIRE(c.threads % 32 == 0 && c.threads / 32 <= kMaxWarps,
                  "rmsnorm naive: threads must be whole warps, ", "at most ", kMaxWarps * 32, ", got ",
                  c.threads);
  LaunchShape shape;
  shape.grid = dim3(static_cast<unsigned>(rows));
  shape.block = dim3(c.threads);
  const auto* xp = static_cast<const __nv_bfloat16*>(x.data);
  const auto* wp = static_cast<const __nv_bfloat16*>(w.data);
  auto* yp = static_cast<__nv_bfloat16*>(y.data);
  const float eps = kEps;
  Kernel k;
  k.resources = {read_resources(reinterpret_cast<const void*>(&rmsnorm_naive_kernel), "rmsnorm_naive_kernel",
                                c.threads, 0)};
  k.launch = [shape, xp, wp, yp, cols, eps](cudaStream_t stream) {
    cutelab::launch(&rmsnorm_naive_kernel, shape, stream, xp, wp, yp, cols, eps);
  };
  return k;
}

}  // namespace cutelab::rmsnorm::naive_v1
