#pragma once
// Hardware ceilings measured on the device at hand: a device-to-device copy (bytes read +
// written), a read-only stream (a large sum), and a cuBLAS bf16 GEMM. Cached per device and
// driver so `cutelab run` can report fractions without re-measuring every time.
// Beside them, a case's read floor: the read-only stream over exactly the case's bytes, timed the
// way the case is (the fixed costs of a call of that size, which a rate ceiling leaves out).

#include <cuda_runtime_api.h>

#include <functional>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "cutelab/runtime/clocks.hpp"
#include "cutelab/runtime/device.hpp"
#include "cutelab/runtime/timing.hpp"

namespace cutelab {

struct Ceilings {
  double copy_gbs = 0;          // (read + written) bytes / s of a large D2D copy
  double read_gbs = 0;          // bytes / s of a large read-only reduction
  double gemm_bf16_tflops = 0;  // cuBLAS bf16 GEMM, fp32 accumulate
  int gemm_size = 0;            // the square GEMM's M = N = K
  std::string device;
  std::string driver;
  std::string measured_at;      // ISO 8601 UTC
  ClockSummary clocks;          // during the measurement

  [[nodiscard]] nlohmann::json to_json() const;
  static Ceilings from_json(const nlohmann::json& j);
};

using ProgressFn = std::function<void(const std::string&)>;

[[nodiscard]] Ceilings measure_ceilings(const DeviceInfo& dev, const ProgressFn& progress = {});
// <cache dir>/ceilings.json, keyed by device name + driver.
[[nodiscard]] std::optional<Ceilings> load_cached_ceilings(const DeviceInfo& dev, const std::string& cache_dir);
void store_cached_ceilings(const Ceilings& c, const std::string& cache_dir);

// The time a plain read of `bytes` takes on this device, timed like a kernel's call (same
// options: the L2 flush, graph replay, samples): what a call that moves a case's bytes cannot beat
// by streaming them, launch, flush write-backs and ramp included. The fastest read found here: bulk
// copies into shared memory on sm_90 and later, the read ceiling's 16-byte loads before. Not cached:
// the size is the case's.
struct ReadFloor {
  double bytes = 0;                  // read (a case's algorithmic bytes, written ones counted as read)
  std::string method;                // how: bulk copies into shared memory (sm_90+), else 16-byte loads
  std::optional<TimingStats> stats;  // nothing when skipped
  std::string skipped;               // why not measured (no memory for a second copy of the bytes)

  [[nodiscard]] nlohmann::json to_json() const;
};
// Never throws for a lack of memory (that lands in `skipped`); throws UsageError for bytes < 16.
[[nodiscard]] ReadFloor measure_read_floor(double bytes, const DeviceInfo& dev, const TimingOptions& options,
                                           cudaStream_t stream);

}  // namespace cutelab
