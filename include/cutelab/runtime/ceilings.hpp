#pragma once
// Hardware ceilings measured on the device at hand: a device-to-device copy (bytes read +
// written), a read-only stream (a large sum), and a cuBLAS bf16 GEMM. Cached per device and
// driver so `cutelab run` can report fractions without re-measuring every time.

#include <functional>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "cutelab/runtime/clocks.hpp"
#include "cutelab/runtime/device.hpp"

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

}  // namespace cutelab
