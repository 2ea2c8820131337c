#pragma once
// Host interface of the launcher: what plan.cpp calls. The definitions are in launch.cuh,
// compiled once per variant by instantiations/*.cu.

#include <cuda_runtime_api.h>

#include <cstdint>
#include <functional>

#include "cute/rmsnorm/rowwise/rowwise_v1/config.hpp"
#include "cutelab/runtime/kernel.hpp"

namespace cutelab::rmsnorm::rowwise_v1 {

struct Args {
  const void* x;  // bf16[rows, cols], contiguous
  const void* w;  // bf16[cols]
  void* y;        // bf16[rows, cols], contiguous
  std::int64_t rows;
  int cols;
  float eps;
};

struct PlannedLaunch {
  std::function<void(cudaStream_t)> launch;
  FunctionResources resources;
};

// Grid and parameters fixed here, at plan time; the closure only launches.
template <int ThreadsPerRow, int Vecs, int RowsPerCta>
[[nodiscard]] PlannedLaunch plan_launch(const Args& args);

}  // namespace cutelab::rmsnorm::rowwise_v1
