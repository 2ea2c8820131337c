#pragma once
// Tuning and the end-to-end run: arch gate, configs validated and timed, each checked against
// the reference, winner cached; then check and measurement of the chosen config.
//
// A kernel with a `setup` (Kernel::setup / launch_reusing_setup) is checked both ways (the
// whole `launch`; `setup` then `launch_reusing_setup`) and timed both ways: the primary figure
// (`timing`) runs `setup` once and times `launch_reusing_setup`; the second (`timing_with_setup`)
// times the whole `launch`.
//
// Tuning ranks configs by the primary figure, or by the rotating one when that is the only figure
// the run asks for (`--timing=rotating`: calls one after another on inputs that are not in L2, as a
// serving engine makes them). Winners are cached per basis; a run without --tune takes the
// winner of its own basis, else the other one's.

#include <cuda_runtime_api.h>

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cutelab/runtime/cache.hpp"
#include "cutelab/runtime/ceilings.hpp"
#include "cutelab/runtime/check.hpp"
#include "cutelab/runtime/clocks.hpp"
#include "cutelab/runtime/plan.hpp"
#include "cutelab/runtime/timing.hpp"

namespace cutelab {

// What tuning ranks configs by (see above).
enum class TuneBasis { flush, rotating };
[[nodiscard]] TuneBasis tune_basis(TimingMode m) noexcept;
[[nodiscard]] const char* tune_basis_name(TuneBasis b) noexcept;  // "flush", "rotating"

struct ConfigOutcome {
  enum class Status { ok, invalid, launch_failed, check_failed, not_run };
  ConfigDesc config;
  Status status = Status::not_run;
  std::string reason;  // why it was skipped or failed
  TuneBasis basis = TuneBasis::flush;             // which figure `timing` is
  std::optional<TimingStats> timing;              // the figure ranked: flush (setup reused when there
                                                  // is one) or rotating (per call over `rotating_sets`)
  int rotating_sets = 0;                          // basis rotating: K
  std::vector<CheckResult> checks;                // the whole `launch`
  std::vector<CheckResult> checks_reusing_setup;  // `setup` + `launch_reusing_setup`, when set

  [[nodiscard]] nlohmann::json to_json() const;
};
[[nodiscard]] const char* status_name(ConfigOutcome::Status s) noexcept;

struct RunOptions {
  bool check = true;
  bool tune = false;                  // time every valid config (else: cache, then first valid)
  std::optional<std::string> config;  // force a config by name
  std::uint64_t seed = 1;
  bool measure = true;
  bool annotate = false;              // NVTX ranges per phase
  TimingOptions timing;
  TimingMode timing_mode = TimingMode::flush;  // which figures the measurement takes; tune_basis(mode)
  bool read_floor = false;            // also the case's read floor (measure_read_floor), beside the flush figure
  std::string cache_dir;              // TuneCache::default_dir() when empty
};

struct RunResult {
  enum class Status { ok, skipped, check_failed, error };
  Status status = Status::ok;
  std::string message;  // the skip reason or the error
  std::string kernel;
  Problem problem;
  DeviceInfo device;
  std::vector<ConfigOutcome> tuning;  // every config considered (tuning only)
  std::string config_source;          // "forced", "tuned", "cache", "cache (rotating)", "first valid"
  TuneBasis tune_basis = TuneBasis::flush;  // what `tuning` ranked by (flush when the rotating sets
                                            // did not fit), and the cache entry looked up first
  std::optional<ConfigDesc> config;
  std::vector<FunctionResources> resources;
  bool has_setup = false;                         // the kernel sets Kernel::setup
  std::vector<CheckResult> checks;                // the whole `launch`
  std::vector<CheckResult> checks_reusing_setup;  // `setup` + `launch_reusing_setup` (has_setup only)
  TimingMode timing_mode = TimingMode::flush;
  std::optional<TimingStats> timing;             // primary: L2 flushed; setup reused when has_setup
  std::optional<TimingStats> timing_with_setup;  // has_setup only: the whole `launch` in each call
  std::optional<RotatingTiming> rotating;        // when the mode asks for it (maybe skipped, with why)
  std::optional<ReadFloor> read_floor;           // when asked for, with a flush figure (maybe skipped, with why)
  Cost cost;
  std::optional<Ceilings> ceilings;
  ClockSummary clocks;
  std::vector<std::string> warnings;  // e.g. a corrupt tuning cache that was moved aside

  [[nodiscard]] bool passed() const noexcept { return status == Status::ok; }
  // The figure rates (GB/s, TFLOP/s, ceiling shares) and anchor speedups are computed on: the
  // primary `timing`, else the rotating one (`--timing=rotating`); nothing when neither.
  [[nodiscard]] const TimingStats* rate_timing() const noexcept;
  // The flush figure over the read floor's time (>= 1 for a call that cannot beat a plain read of its
  // bytes); nothing without both.
  [[nodiscard]] std::optional<double> over_read_floor() const noexcept;
  [[nodiscard]] nlohmann::json to_json() const;
};
[[nodiscard]] const char* status_name(RunResult::Status s) noexcept;

// CUTELAB_VERBOSE set (and not "0"): say which config was chosen and why.
[[nodiscard]] bool verbose_from_env();
// The key the tuner stores a run's winner under (its tune_basis).
[[nodiscard]] TuneKey tune_key(const RunResult& r);
// The same key for a kernel and problem on a device (what a later lookup outside a run uses).
[[nodiscard]] TuneKey tune_key(const std::string& kernel, const Problem& problem, const DeviceInfo& dev,
                               TuneBasis basis = TuneBasis::flush);

// Never throws for problems of the kernel (they land in the result); throws UsageError for
// bad problems or options.
[[nodiscard]] RunResult run_kernel(const KernelPlan& plan, const Problem& problem, const DeviceInfo& dev,
                                   const RunOptions& options, const std::optional<Ceilings>& ceilings,
                                   const ProgressFn& progress = {});

}  // namespace cutelab
