#include "cutelab/runtime/timing.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <numeric>
#include <optional>

#include <nlohmann/json.hpp>

#include "cuda_raii.hpp"
#include "cutelab/runtime/energy.hpp"

namespace cutelab {
namespace {

// Linear interpolation between the order statistics around q*(n-1).
double quantile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  const double pos = q * static_cast<double>(sorted.size() - 1);
  const std::size_t lo = static_cast<std::size_t>(std::floor(pos));
  const std::size_t hi = std::min(lo + 1, sorted.size() - 1);
  const double frac = pos - static_cast<double>(lo);
  return sorted[lo] + frac * (sorted[hi] - sorted[lo]);
}

double relative_ci(const std::vector<double>& samples) {
  const std::size_t n = samples.size();
  if (n < 2) return std::numeric_limits<double>::infinity();
  const double mean = std::accumulate(samples.begin(), samples.end(), 0.0) / static_cast<double>(n);
  double ss = 0;
  for (double s : samples) ss += (s - mean) * (s - mean);
  const double stdev = std::sqrt(ss / static_cast<double>(n - 1));
  if (mean <= 0) return std::numeric_limits<double>::infinity();
  return 1.96 * stdev / std::sqrt(static_cast<double>(n)) / mean;
}

// Captures the calls, in order, into one executable graph; the reason when it cannot.
std::string capture_graph(const std::vector<std::function<void(cudaStream_t)>>& launches, cudaStream_t stream,
                          detail::GraphExec* exec) {
  cudaError_t err = cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal);
  if (err != cudaSuccess) {
    (void)cudaGetLastError();
    return concat("cudaStreamBeginCapture: ", cudaGetErrorName(err));
  }
  std::string launch_error;
  try {
    for (const auto& launch : launches) launch(stream);
  } catch (const std::exception& e) {
    launch_error = e.what();
  }
  cudaGraph_t raw = nullptr;
  err = cudaStreamEndCapture(stream, &raw);
  detail::Graph graph(raw);
  const cudaError_t pending = cudaGetLastError();
  if (!launch_error.empty()) return concat("the launch failed under capture: ", launch_error);
  if (err != cudaSuccess) return concat("cudaStreamEndCapture: ", cudaGetErrorName(err));
  if (pending != cudaSuccess) return concat("error during capture: ", cudaGetErrorName(pending));
  cudaGraphExec_t x = nullptr;
  err = cudaGraphInstantiate(&x, graph.get(), 0);
  if (err != cudaSuccess) {
    (void)cudaGetLastError();
    return concat("cudaGraphInstantiate: ", cudaGetErrorName(err));
  }
  *exec = detail::GraphExec(x);
  // One replay uploads the graph; a fault here is the kernel's, not the capture's.
  CUTELAB_CUDA(cudaGraphLaunch(exec->get(), stream));
  CUTELAB_CUDA(cudaStreamSynchronize(stream));
  return {};
}

void launch_all(const std::vector<std::function<void(cudaStream_t)>>& launches, cudaStream_t stream) {
  for (const auto& launch : launches) {
    launch(stream);
    CUTELAB_CUDA_LAUNCH();
  }
}

// One pass over the calls: the graph when there is one, else direct launches.
void replay(const detail::GraphExec& exec, const std::vector<std::function<void(cudaStream_t)>>& launches,
            cudaStream_t stream) {
  if (exec) {
    CUTELAB_CUDA(cudaGraphLaunch(exec.get(), stream));
  } else {
    launch_all(launches, stream);
  }
}

// The sampling loop shared by both modes: each sample replays `exec` (or launches every call
// directly when there is no graph) between two events and divides by the number of calls.
// `measure_energy`: the rotating figure's loop, calls alone (no flush's writes in it): the energy
// counter around it gives joules a call.
TimingStats sample_calls(const std::vector<std::function<void(cudaStream_t)>>& launches,
                         const detail::GraphExec& exec, const std::string& fallback, L2Flusher* flusher,
                         const TimingOptions& options, cudaStream_t stream, bool measure_energy = false) {
  const detail::Event start = detail::make_event(), stop = detail::make_event();
  const double calls = static_cast<double>(launches.size());
  std::vector<double> samples;
  std::string reason;
  std::optional<EnergyMeter> energy;
  if (measure_energy && !flusher) {
    int device = 0;
    CUTELAB_CUDA(cudaGetDevice(&device));
    energy.emplace(device);
  }
  const auto t0 = std::chrono::steady_clock::now();
  for (;;) {
    if (flusher) flusher->flush(stream);
    CUTELAB_CUDA(cudaEventRecord(start.get(), stream));
    replay(exec, launches, stream);
    CUTELAB_CUDA(cudaEventRecord(stop.get(), stream));
    CUTELAB_CUDA(cudaEventSynchronize(stop.get()));
    float ms = 0;
    CUTELAB_CUDA(cudaEventElapsedTime(&ms, start.get(), stop.get()));
    samples.push_back(static_cast<double>(ms) * 1e3 / calls);
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (sampling_done(samples, elapsed, options, &reason)) break;
  }
  const double calls_timed = calls * static_cast<double>(samples.size());
  TimingStats stats = summarize_samples(std::move(samples));
  stats.stop_reason = reason;
  if (energy) {
    const EnergyMeter::Result e = energy->finish(calls_timed, "--min-samples");
    if (e.reading) {
      stats.joules_per_call = e.reading->joules_per_call;
      stats.mean_watts = e.reading->mean_watts;
    }
    stats.energy_note = e.note;
  }
  if (!fallback.empty()) stats.stop_reason += " (direct launches: graph capture failed: " + fallback + ")";
  return stats;
}

}  // namespace

nlohmann::json TimingStats::to_json(bool with_samples) const {
  const auto finite = [](double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); };
  nlohmann::json j = {{"n", n},
                      {"median_us", median_us},
                      {"p10_us", p10_us},
                      {"p90_us", p90_us},
                      {"min_us", min_us},
                      {"max_us", max_us},
                      {"mean_us", mean_us},
                      {"stdev_us", stdev_us},
                      {"rel_ci", finite(rel_ci)},
                      {"stop_reason", stop_reason}};
  if (joules_per_call) j["joules_per_call"] = *joules_per_call;
  if (mean_watts) j["mean_watts"] = *mean_watts;
  if (!energy_note.empty()) j["energy_note"] = energy_note;
  if (with_samples) j["samples_us"] = samples_us;
  return j;
}

TimingStats summarize_samples(std::vector<double> samples_us) {
  TimingStats s;
  s.n = static_cast<int>(samples_us.size());
  s.samples_us = samples_us;
  if (samples_us.empty()) return s;
  std::sort(samples_us.begin(), samples_us.end());
  s.median_us = quantile(samples_us, 0.5);
  s.p10_us = quantile(samples_us, 0.1);
  s.p90_us = quantile(samples_us, 0.9);
  s.min_us = samples_us.front();
  s.max_us = samples_us.back();
  s.mean_us = std::accumulate(samples_us.begin(), samples_us.end(), 0.0) / s.n;
  double ss = 0;
  for (double v : samples_us) ss += (v - s.mean_us) * (v - s.mean_us);
  s.stdev_us = s.n > 1 ? std::sqrt(ss / (s.n - 1)) : 0.0;
  s.rel_ci = relative_ci(samples_us);
  return s;
}

bool sampling_done(const std::vector<double>& samples_us, double elapsed_seconds, const TimingOptions& options,
                   std::string* reason) {
  const int n = static_cast<int>(samples_us.size());
  const int cap = std::max(1, options.max_samples);
  const int floor = std::min(std::max(1, options.min_samples), cap);
  const auto done = [&](const char* why) {
    if (reason) *reason = why;
    return true;
  };
  if (n < floor) return false;
  if (relative_ci(samples_us) <= options.target_rel_ci) return done("converged");
  if (elapsed_seconds >= options.max_seconds) return done("time cap");
  if (n >= cap) return done("sample cap");
  return false;
}

std::size_t l2_cache_bytes(const DeviceInfo& dev) {
  if (dev.l2_bytes > 0) return dev.l2_bytes;
  int device = 0, bytes = 0;
  if (cudaGetDevice(&device) == cudaSuccess &&
      cudaDeviceGetAttribute(&bytes, cudaDevAttrL2CacheSize, device) == cudaSuccess)
    return static_cast<std::size_t>(bytes);
  (void)cudaGetLastError();
  return 0;
}

L2Flusher::L2Flusher(const DeviceInfo& dev) {
  std::size_t l2 = l2_cache_bytes(dev);
  if (l2 == 0) l2 = kUnknownL2Bytes;
  buffer_ = DeviceBuffer(2 * l2);
}

void L2Flusher::flush(cudaStream_t stream) {
  // A different byte each time, so no layer can skip the write as redundant.
  static thread_local unsigned counter = 0;
  CUTELAB_CUDA(cudaMemsetAsync(buffer_.data(), static_cast<int>(++counter & 0xFF), buffer_.bytes(), stream));
}

TimingStats time_launch(const std::function<void(cudaStream_t)>& launch, const DeviceInfo& dev,
                        const TimingOptions& options, cudaStream_t stream) {
  // The legacy default stream cannot be captured: time on a stream of our own then.
  detail::Stream own;
  if (!stream) {
    own = detail::make_stream();
    stream = own.get();
  }
  std::optional<L2Flusher> flusher;
  if (options.flush_l2) flusher.emplace(dev);

  const std::vector<std::function<void(cudaStream_t)>> launches = {launch};
  for (int i = 0; i < options.warmup; ++i) launch_all(launches, stream);
  CUTELAB_CUDA(cudaStreamSynchronize(stream));

  detail::GraphExec exec;
  std::string fallback;
  if (options.use_graph) fallback = capture_graph(launches, stream, &exec);
  return sample_calls(launches, exec, fallback, flusher ? &*flusher : nullptr, options, stream);
}

TimingStats time_rotating(const std::vector<std::function<void(cudaStream_t)>>& launches,
                          const TimingOptions& options, cudaStream_t stream) {
  CUTELAB_REQUIRE(!launches.empty(), "time_rotating: no calls to time");
  detail::Stream own;
  if (!stream) {
    own = detail::make_stream();
    stream = own.get();
  }
  // One direct pass first: a call that fails does so here, not under capture.
  launch_all(launches, stream);
  CUTELAB_CUDA(cudaStreamSynchronize(stream));

  detail::GraphExec exec;
  std::string fallback;
  if (options.use_graph) fallback = capture_graph(launches, stream, &exec);
  for (int i = 0; i < options.warmup; ++i) replay(exec, launches, stream);
  CUTELAB_CUDA(cudaStreamSynchronize(stream));
  return sample_calls(launches, exec, fallback, nullptr, options, stream, /*measure_energy=*/true);
}

int rotating_set_count(double l2_bytes, double set_bytes, double free_bytes, double margin_bytes) {
  constexpr int kMin = 2, kMax = 32;
  int k = kMax;
  if (set_bytes > 0) {
    const double wanted = std::ceil(3.0 * std::max(0.0, l2_bytes) / set_bytes);
    k = static_cast<int>(std::clamp(wanted, static_cast<double>(kMin), static_cast<double>(kMax)));
    // The two sets that exist already are not counted against the free memory.
    const double room = std::floor((free_bytes - margin_bytes) / set_bytes);
    k = std::min(k, kMin + static_cast<int>(std::clamp(room, 0.0, static_cast<double>(kMax))));
  }
  return k;
}

const char* timing_mode_name(TimingMode m) noexcept {
  switch (m) {
    case TimingMode::flush:
      return "flush";
    case TimingMode::rotating:
      return "rotating";
    case TimingMode::both:
      return "both";
  }
  return "?";
}

std::optional<TimingMode> parse_timing_mode(std::string_view text) noexcept {
  for (TimingMode m : {TimingMode::flush, TimingMode::rotating, TimingMode::both})
    if (text == timing_mode_name(m)) return m;
  return std::nullopt;
}

nlohmann::json RotatingTiming::to_json(bool with_samples) const {
  nlohmann::json j = {{"sets", sets},
                      {"set_bytes", set_bytes},
                      {"total_bytes", set_bytes * sets},
                      {"l2_bytes", l2_bytes},
                      {"reuses_setup", reuses_setup}};
  j["timing"] = stats ? stats->to_json(with_samples) : nlohmann::json(nullptr);
  if (!skipped.empty()) j["skipped"] = skipped;
  return j;
}

}  // namespace cutelab
