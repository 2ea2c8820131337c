#pragma once
// Device timing: CUDA events around CUDA-graph replays, warm-up first, L2 flushed before each
// sample, at least `min_samples`, stopping early once the 95% confidence interval of the mean is tight.
// The rotating mode replays K calls on K input sets in one graph instead, without a flush.

#include <cuda_runtime_api.h>

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
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

// Which figures a run takes: `flush` (one call per graph replay, L2 flushed before each sample),
// `rotating` (K calls on K input sets per replay, time / K, no flush) or both.
enum class TimingMode { flush, rotating, both };
[[nodiscard]] const char* timing_mode_name(TimingMode m) noexcept;
[[nodiscard]] std::optional<TimingMode> parse_timing_mode(std::string_view text) noexcept;
[[nodiscard]] inline bool times_flush(TimingMode m) noexcept { return m != TimingMode::rotating; }
[[nodiscard]] inline bool times_rotating(TimingMode m) noexcept { return m != TimingMode::flush; }

struct TimingStats {
  std::vector<double> samples_us;
  int n = 0;
  double median_us = 0, p10_us = 0, p90_us = 0, min_us = 0, max_us = 0, mean_us = 0, stdev_us = 0;
  double rel_ci = 0;        // 1.96 * stdev / sqrt(n) / mean
  std::string stop_reason;  // "converged", "time cap", "sample cap"
  // Sampling loops without a flush (the rotating figure): the board's energy over the loop (NVML's
  // counter, runtime/energy.hpp) a call and its mean power; nothing where the counter is missing or the
  // loop was shorter than kEnergyMinSeconds (then `energy_note` says which).
  std::optional<double> joules_per_call, mean_watts;
  std::string energy_note;

  [[nodiscard]] nlohmann::json to_json(bool with_samples = false) const;
};

// Pure statistics, for the host tests.
[[nodiscard]] TimingStats summarize_samples(std::vector<double> samples_us);
// Whether sampling may stop after these samples and this much wall time; sets `reason`.
[[nodiscard]] bool sampling_done(const std::vector<double>& samples_us, double elapsed_seconds,
                                 const TimingOptions& options, std::string* reason);

// The device's L2 size: the record's, else the live attribute; 0 when neither is known.
[[nodiscard]] std::size_t l2_cache_bytes(const DeviceInfo& dev);
// What to assume when l2_cache_bytes() knows nothing: larger than any L2 without a record.
inline constexpr std::size_t kUnknownL2Bytes = std::size_t{64} << 20;

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

// Times one call per entry of `launches` (each on its own input set), all captured in one CUDA
// graph; a sample is the replay time divided by the number of calls. Never flushes L2 (the
// rotation keeps the data cold when the sets together exceed it); one direct pass over the calls,
// then options.warmup replays, then the sampling loop of time_launch. Falls back to direct
// launches (reported in stop_reason) if capture fails.
[[nodiscard]] TimingStats time_rotating(const std::vector<std::function<void(cudaStream_t)>>& launches,
                                        const TimingOptions& options, cudaStream_t stream);

// The rotating figure of a run: K input sets, their size, and the time per call.
struct RotatingTiming {
  int sets = 0;                      // K; set 0 is the run's own workspace
  double set_bytes = 0;              // device memory of one input set (measured, at least the cost's bytes)
  double l2_bytes = 0;               // the device's L2, to tell whether K sets exceed it
  bool reuses_setup = false;         // the graph replays launch_reusing_setup (setup run once per set)
  std::optional<TimingStats> stats;  // per call; nothing when skipped
  std::string skipped;               // why it was not measured (not enough memory, a failure)

  [[nodiscard]] nlohmann::json to_json(bool with_samples = false) const;
};

// How many input sets to rotate over: ceil(3 * l2 / set), clamped to [2, 32], then lowered so
// that the sets beyond the first two fit in `free_bytes` (free memory with two sets made) less
// `margin_bytes`. Never below 2 (the caller checks that two sets fit).
[[nodiscard]] int rotating_set_count(double l2_bytes, double set_bytes, double free_bytes,
                                     double margin_bytes);

}  // namespace cutelab
