#pragma once
// A planned kernel: everything needed to launch it on a stream, with what it needs and costs.

#include <cuda_runtime_api.h>

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>  // declarations only: kernel code includes this header

#include "cutelab/runtime/device.hpp"

namespace cutelab {

// Algorithmic cost: each input read once, each output written once.
struct Cost {
  double flops = 0;
  double bytes = 0;
};

// Resources of one compiled __global__ function as launched.
struct FunctionResources {
  std::string name;
  int registers = 0;
  std::size_t static_smem = 0;
  std::size_t dynamic_smem = 0;
  std::size_t local_bytes = 0;  // per-thread local memory: spills or stack
  int block_threads = 0;
  int binary_version = 0;  // SASS version the function was compiled for (90 = sm_90)

  [[nodiscard]] nlohmann::json to_json() const;
};

// Reads the compiled function's attributes; throws CudaError (cudaErrorInvalidDeviceFunction
// or cudaErrorNoKernelImageForDevice) when there is no binary for this device.
[[nodiscard]] FunctionResources read_resources(const void* func, std::string name, int block_threads,
                                               std::size_t dynamic_smem);

struct Kernel {
  std::string name;    // registry name "cute/mla_decode/paged_sm90/v1"
  std::string config;  // config name "m64_n64_stages2"
  ArchRequirement arch;
  std::function<void(cudaStream_t)> launch;  // launches everything one call does
  // Optional work a caller does once and reuses over many calls (MLA decode: the split schedule,
  // made once per decode step and reused by every layer). When set, `setup` followed by any
  // number of `launch_reusing_setup` calls on the same stream computes what `launch` computes;
  // reports then time both ways. Both are set or neither.
  std::function<void(cudaStream_t)> setup;
  std::function<void(cudaStream_t)> launch_reusing_setup;
  // `launch` waits on the host (a host-side planner reading lengths back): it cannot be captured
  // in a CUDA graph, so it is timed with direct launches (said in the timing's stop reason).
  bool launch_syncs_host = false;
  std::vector<FunctionResources> resources;  // one per __global__ it launches
  Cost cost;
};

}  // namespace cutelab
