#pragma once
// Host interface of the launcher: what plan.cpp calls. The definitions are in launch.cuh,
// compiled once per variant by instantiations/*.cu.

#include <cuda_runtime_api.h>

#include <cstdint>
#include <functional>

#include "cute/elementwise/gelu_affine/gelu_affine_v1/config.hpp"
#include "cutelab/runtime/device.hpp"
#include "cutelab/runtime/kernel.hpp"

namespace cutelab::elementwise::gelu_affine_v1 {

struct Args {
  const void* x;  // bf16[n]
  void* y;        // bf16[n]
  std::int64_t n;
};

struct PlannedLaunch {
  std::function<void(cudaStream_t)> launch;
  FunctionResources resources;
};

// Grid and parameters fixed here, at plan time; the closure only launches.
template <int Threads, int Vecs>
[[nodiscard]] PlannedLaunch plan_launch(const Args& args, GridMode grid, const DeviceInfo& dev);

}  // namespace cutelab::elementwise::gelu_affine_v1
