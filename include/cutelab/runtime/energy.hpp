#pragma once
// The board's energy counter: NVML's total energy consumption (millijoules since the driver loaded),
// read through the driver's libnvidia-ml, loaded at run time (no build dependency; where it is
// missing the counter says why). Under a power cap a call's time is its energy over the power limit,
// so the rotating figure carries the energy a call beside the µs.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

namespace cutelab {

class EnergyCounter {
 public:
  // The counter of the board behind CUDA device `cuda_device` (matched by PCI bus id). Shared,
  // opened once a process; never throws.
  [[nodiscard]] static const EnergyCounter& of(int cuda_device);

  [[nodiscard]] bool available() const noexcept { return handle_ != nullptr; }
  [[nodiscard]] const std::string& why_unavailable() const noexcept { return why_; }
  // Millijoules since the driver loaded; nothing when unavailable or the read fails.
  [[nodiscard]] std::optional<std::uint64_t> millijoules() const;

 private:
  explicit EnergyCounter(int cuda_device);
  void* handle_ = nullptr;  // nvmlDevice_t
  std::string why_;
};

// Energy over an interval of `calls` calls (the rotating figure's sampling loop): joules a call and
// the interval's mean power, or nothing over an interval too short for the counter, which the driver
// does not update continuously: on the H200 here loops of ~0.5 s read 0.109-0.139 J a call for one
// kernel and config (means above the 700 W limit among them), loops of ~2 s 0.458-0.489 J
// (bench/results/2026-11-25-h200-thirty-sixth-session/, call m).
struct EnergyReading {
  double joules_per_call = 0;
  double mean_watts = 0;
};
inline constexpr double kEnergyMinSeconds = 1.0;
[[nodiscard]] std::optional<EnergyReading> energy_over(std::uint64_t mj_before, std::uint64_t mj_after,
                                                       double seconds, double calls);

// The board's energy over one sampling loop: made just before it (reads the counter, starts a clock),
// finish() just after. The harness's rotating figure and cutelab.testing.bench both use it.
class EnergyMeter {
 public:
  explicit EnergyMeter(int cuda_device);
  struct Result {
    std::optional<EnergyReading> reading;
    std::string note;  // why there is no reading
  };
  // `calls` made in the loop; `raise` names what lengthens a loop that was too short ("--min-samples").
  [[nodiscard]] Result finish(double calls, const std::string& raise) const;

 private:
  const EnergyCounter& counter_;
  std::optional<std::uint64_t> mj_before_;
  std::chrono::steady_clock::time_point began_;
};

}  // namespace cutelab
