#pragma once
// Host side every paged_sm90 version shares, free of CuTe: tuning knobs, scratch sized once,
// kernel parameters and the KV tensor map of a call, and the runner that launches
// schedule -> the version's main kernel -> combine.

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "cute/mla_decode/paged_sm90/common/params.hpp"
#include "cutelab/runtime/device.hpp"
#include "cutelab/runtime/kernel.hpp"
#include "cutelab/runtime/tensor.hpp"
#include "mla_decode/common/args.hpp"

namespace cutelab::mla::paged_sm90 {

inline constexpr int kBlockM = 64;    // packed query rows per CTA (every version)
inline constexpr int kThreads = 384;  // producer warpgroup + two consumer warpgroups

// Run-time knobs the tuner varies (no recompilation).
struct TuneConfig {
  int fixed_overhead_blocks = 8;  // schedule: cost of a request piece beyond its KV blocks
  bool kv_evict_first = true;     // L2 hint on streamed KV tiles
  int min_blocks_per_part = 1;    // schedule: shortest part (small batches: fewer partials)

  [[nodiscard]] std::string name() const;
};

// Scratch and launch geometry, sized when the plan is made.
struct LaunchState {
  LaunchState(const MlaDecodeDims& dims, const DeviceInfo& dev, const TuneConfig& config);

  MlaDecodeDims dims;  // the largest batch served; heads, s_q and dtype must match every call
  TuneConfig config;
  int m_tiles = 0;
  int num_parts = 0;
  DeviceBuffer parts, requests, partial_out, partial_lse;
};

// One version's main kernel for one element type. It is launched as a programmatic dependent
// of the schedule kernel and must call sm90::wait_for_prior_grid() before reading the schedule.
struct MainKernel {
  const char* name = "";
  const void* function = nullptr;
  std::size_t shared_bytes = 0;
  void (*set_attributes)() = nullptr;  // raises the dynamic shared-memory limit (plan time)
  void (*launch)(const Params&, const CUtensorMap&, dim3 grid, cudaStream_t) = nullptr;
};

// Everything one call needs, checked and encoded once: a launch only enqueues kernels.
struct PreparedCall {
  Params params;
  CUtensorMap kv_map{};
  MlaDecodeDims dims;
  void* out = nullptr;
};

// The host API object of a design. prepare() validates the arguments (host-side checks only: no
// device reads, no sync), rejects views the kernels cannot address (they need contiguous q, KV
// cache, block table, out and lse) and encodes the call; launch() only enqueues its kernels.
class Runner {
 public:
  Runner(const MlaDecodeDims& dims, const DeviceInfo& dev, const TuneConfig& config, MainKernel main);
  [[nodiscard]] PreparedCall prepare(const MlaDecodeArgs& args) const;
  void launch(const PreparedCall& call, cudaStream_t stream) const;
  [[nodiscard]] std::vector<FunctionResources> resources() const;

 private:
  std::shared_ptr<LaunchState> state_;
  MainKernel main_;
};

}  // namespace cutelab::mla::paged_sm90
