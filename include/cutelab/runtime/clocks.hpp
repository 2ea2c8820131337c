#pragma once
// SM and memory clocks, read (never set) through nvidia-smi, sampled while a measurement runs.

#include <atomic>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

namespace cutelab {

struct ClockReading {
  int sm_mhz = 0;
  int mem_mhz = 0;
  int sm_max_mhz = 0;
  double power_w = 0;
  int temperature_c = 0;
};

// Parses one line of `nvidia-smi --query-gpu=clocks.sm,clocks.mem,clocks.max.sm,power.draw,
// temperature.gpu --format=csv,noheader,nounits`. Nothing on a malformed line.
[[nodiscard]] std::optional<ClockReading> parse_clock_line(const std::string& line);
// Reads device `index` now; nothing (and `why`) when nvidia-smi is missing or fails.
[[nodiscard]] std::optional<ClockReading> read_clocks(int index, std::string* why = nullptr);
// Runs `nvidia-smi --query-gpu=<fields> --format=csv,noheader,nounits` for CUDA device `index`
// (addressed by PCI bus id when the runtime knows it, so CUDA_VISIBLE_DEVICES is respected) and
// returns its first output line; nothing, and `why`, when nvidia-smi is missing or fails.
[[nodiscard]] std::optional<std::string> nvidia_smi_query(int index, const std::string& fields,
                                                          std::string* why = nullptr);

struct ClockSummary {
  bool available = false;
  std::string why_unavailable;
  int samples = 0;
  int sm_mhz_min = 0, sm_mhz_median = 0, sm_mhz_max = 0;
  int mem_mhz_median = 0;
  int sm_max_mhz = 0;
  double power_w_max = 0;
  int temperature_c_max = 0;

  [[nodiscard]] nlohmann::json to_json() const;
  [[nodiscard]] std::string str() const;  // "SM 1755 MHz (1650-1980), mem 2619 MHz"
};

[[nodiscard]] ClockSummary summarize_clocks(const std::vector<ClockReading>& readings);

// Polls in a background thread between start() and stop().
class ClockSampler {
 public:
  explicit ClockSampler(int device_index, int period_ms = 200);
  ~ClockSampler();
  ClockSampler(const ClockSampler&) = delete;
  ClockSampler& operator=(const ClockSampler&) = delete;
  void start();
  ClockSummary stop();

 private:
  int index_;
  int period_ms_;
  std::atomic<bool> running_{false};
  std::thread thread_;
  std::vector<ClockReading> readings_;
  std::string why_;
};

}  // namespace cutelab
