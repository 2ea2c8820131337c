#pragma once
// baseline/elementwise/scalar/v1: one element per thread; the only knob is the block size.

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cutelab/runtime/device.hpp"
#include "elementwise/common/problem.hpp"

namespace cutelab::elementwise::scalar_v1 {

struct Config {
  int threads = 256;

  [[nodiscard]] std::string name() const { return "t" + std::to_string(threads); }
  [[nodiscard]] nlohmann::json to_json() const { return {{"threads", threads}}; }
  [[nodiscard]] std::optional<std::string> validate(const ElementwiseProblem& p,
                                                    const DeviceInfo& dev) const {
    if (threads > dev.max_threads_per_block)
      return "threads=" + std::to_string(threads) + " exceeds the device's max_threads_per_block (" +
             std::to_string(dev.max_threads_per_block) + ")";
    // One block per `threads` elements: the grid's x dimension caps n.
    if ((p.n + threads - 1) / threads > 2147483647LL)
      return "n=" + std::to_string(p.n) + " needs more than 2^31-1 blocks of " + std::to_string(threads);
    return std::nullopt;
  }
};

// The first one is what a run without --tune takes.
[[nodiscard]] inline std::vector<Config> all_configs() { return {Config{256}, Config{128}, Config{512}}; }

}  // namespace cutelab::elementwise::scalar_v1
