#pragma once
// baseline/rmsnorm/naive/v1: one block per row, two passes over the row; the only knob is
// the block size.

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cutelab/runtime/device.hpp"
#include "rmsnorm/common/problem.hpp"

namespace cutelab::rmsnorm::naive_v1 {

struct Config {
  int threads = 256;

  [[nodiscard]] std::string name() const { return "t" + std::to_string(threads); }
  [[nodiscard]] nlohmann::json to_json() const { return {{"threads", threads}}; }
  [[nodiscard]] std::optional<std::string> validate(const RmsNormProblem& /*p*/,
                                                    const DeviceInfo& dev) const {
    if (threads > dev.max_threads_per_block)
      return "threads=" + std::to_string(threads) + " exceeds the device's max_threads_per_block (" +
             std::to_string(dev.max_threads_per_block) + ")";
    return std::nullopt;
  }
};

// The first one is what a run without --tune takes.
[[nodiscard]] inline std::vector<Config> all_configs() { return {Config{256}, Config{128}, Config{512}}; }

}  // namespace cutelab::rmsnorm::naive_v1
