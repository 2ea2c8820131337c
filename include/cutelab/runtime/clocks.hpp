#pragma once
// SM and memory clocks, read (never set) through nvidia-smi, sampled while a measurement runs,
// with the driver's reasons for holding the SM clock down (a long tensor-bound row runs at the
// power cap's clock; its median depends on how much of it did).

#include <atomic>
#include <cstdint>
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
  // NVML's clocks event (throttle) reasons bitmask; nothing where the driver does not say.
  std::optional<std::uint64_t> event_reasons;
};

// The event reasons that hold the SM clock below its maximum while work runs (NVML's bits).
inline constexpr std::uint64_t kSwPowerCap = 0x4, kHwSlowdown = 0x8, kSwThermal = 0x20, kHwThermal = 0x40,
                               kHwPowerBrake = 0x80;
inline constexpr std::uint64_t kSlowdownReasons =
    kSwPowerCap | kHwSlowdown | kSwThermal | kHwThermal | kHwPowerBrake;
// "SW power cap, HW slowdown" for the slowdown bits of `reasons`; "" for none.
[[nodiscard]] std::string slowdown_names(std::uint64_t reasons);

// Parses one line of `nvidia-smi --query-gpu=clocks.sm,clocks.mem,clocks.max.sm,power.draw,
// temperature.gpu[,clocks_event_reasons.active] --format=csv,noheader,nounits` (5 or 6 fields; the
// reasons in hex). Nothing on a malformed line.
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
  int reason_samples = 0;            // samples whose event reasons the driver gave
  int slowed_samples = 0;            // of those, samples with a slowdown reason (kSlowdownReasons)
  std::uint64_t slowdowns_seen = 0;  // the slowdown bits seen in any sample

  [[nodiscard]] nlohmann::json to_json() const;
  // "SM 1755 MHz (1650-1980), mem 2619 MHz, ..., SW power cap in 2 of 3 samples"
  [[nodiscard]] std::string str() const;
  // For a table cell: "1980", "1725-1980", "1725-1980 slow 2/3" (a slowdown in 2 of 3 samples).
  [[nodiscard]] std::string brief() const;
};

[[nodiscard]] ClockSummary summarize_clocks(const std::vector<ClockReading>& readings);

// Polls in a background thread between start() and stop().
class ClockSampler {
 public:
  explicit ClockSampler(int device_index, int period_ms = 100);
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
