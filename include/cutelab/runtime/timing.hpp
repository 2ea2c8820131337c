#pragma once
// Device timing: CUDA events around CUDA-graph replays, warm-up first, L2 flushed before each
// sample, at least `min_samples`, stopping early once the 95% confidence interval of the mean is tight.

#include <cuda_runtime_api.h>

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cutelab/runtime/device.hpp"
#include "cutelab/runtime/tensor.hpp"

namespace cutelab {

struct TimingOptions {
  int warmup = 5;
  int min_samples = 20;
  int max_samples = 2000;
  double max_seconds = 2.0;        // wall-clock cap for the sampling loop
  double target_rel_ci = 0.005;    // stop when the 95% CI of the mean is within +-0.5% of it
  bool flush_l2 = true;
  bool use_graph = true;
};

struct TimingStats {
  std::vector<double> samples_us;
  int n = 0;
  double median_us = 0, p10_us = 0, p90_us = 0, min_us = 0, max_us = 0, mean_us = 0, stdev_us = 0;
  double rel_ci = 0;        // 1.96 * stdev / sqrt(n) / mean
  std::string stop_reason;  // "converged", "time cap", "sample cap"

  [[nodiscard]] nlohmann::json to_json(bool with_samples = false) const;
};

// Pure statistics, for the host tests.
[[nodiscard]] TimingStats summarize_samples(std::vector<double> samples_us);
// Whether sampling may stop after these samples and this much wall time; sets `reason`.
[[nodiscard]] bool sampling_done(const std::vector<double>& samples_us, double elapsed_seconds,
                                 const TimingOptions& options, std::string* reason);

// Writes a buffer larger than L2 so the next sample starts from a cold cache.
class L2Flusher {
 public:
  explicit L2Flusher(const DeviceInfo& dev);
  void flush(cudaStream_t stream);

 private:
  DeviceBuffer buffer_;
};

// Times `launch` (all the work one call does). Captured into a CUDA graph when
// options.use_graph, falling back to direct launches (reported) if capture fails.
[[nodiscard]] TimingStats time_launch(const std::function<void(cudaStream_t)>& launch, const DeviceInfo& dev,
                                      const TimingOptions& options, cudaStream_t stream);

}  // namespace cutelab
