#pragma once
// cute/elementwise/gelu_affine/v1: every constant of this version, and the host config that
// picks one of the compiled variants plus the grid shape.

#include <array>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "cutelab/runtime/device.hpp"
#include "elementwise/common/problem.hpp"

namespace cutelab::elementwise::gelu_affine_v1 {

// Elements per 16-byte access of bf16.
inline constexpr int kVecElems = 8;

// Compile-time shape of one variant: a block of `Threads` threads owns tiles of
// Threads * Vecs * 8 contiguous elements; each thread moves `Vecs` 16-byte vectors per tile,
// all loads issued before the first use.
template <int Threads, int Vecs>
struct KernelConfig {
  static constexpr int kThreads = Threads;
  static constexpr int kVecs = Vecs;
  static constexpr int kTileElems = Threads * Vecs * kVecElems;
  static_assert(Threads % 32 == 0 && Threads <= 1024, "whole warps, at most 1024 threads");
  static_assert(Vecs >= 1 && Vecs <= 8, "1 to 8 vectors per thread");
};

// The (threads, vecs) pairs compiled into the library; instantiations/ has one line for each.
inline constexpr std::array<std::pair<int, int>, 9> kCompiled = {{
    {128, 1},
    {128, 2},
    {128, 4},
    {256, 1},
    {256, 2},
    {256, 4},
    {512, 1},
    {512, 2},
    {512, 4},
}};

enum class GridMode {
  persistent,  // as many blocks as fit on the device at once, each looping over tiles
  tiles,       // one block per tile
};

struct Config {
  int threads = 256;
  int vecs = 4;
  GridMode grid = GridMode::persistent;

  [[nodiscard]] int tile_elems() const noexcept { return threads * vecs * kVecElems; }
  [[nodiscard]] const char* grid_name() const noexcept {
    return grid == GridMode::persistent ? "persistent" : "tiles";
  }
  [[nodiscard]] std::string name() const {  // "t256_v4_persistent"
    return "t" + std::to_string(threads) + "_v" + std::to_string(vecs) + "_" + grid_name();
  }
  [[nodiscard]] nlohmann::json to_json() const;  // config.cpp (kernel code sees json_fwd only)
  [[nodiscard]] bool compiled() const noexcept {
    for (const auto& [t, v] : kCompiled)
      if (t == threads && v == vecs) return true;
    return false;
  }
  // Any n runs (full tiles vectorized, the rest by a scalar loop), so only the device limits
  // and the compiled list can refuse a config.
  [[nodiscard]] std::optional<std::string> validate(const ElementwiseProblem& /*p*/,
                                                    const DeviceInfo& dev) const {
    if (!compiled())
      return "threads=" + std::to_string(threads) + ", vecs=" + std::to_string(vecs) + " is not compiled in";
    if (threads > dev.max_threads_per_block)
      return "threads=" + std::to_string(threads) + " exceeds the device's max_threads_per_block (" +
             std::to_string(dev.max_threads_per_block) + ")";
    if (threads > dev.max_threads_per_sm)
      return "threads=" + std::to_string(threads) + " exceeds the device's max_threads_per_sm (" +
             std::to_string(dev.max_threads_per_sm) + ")";
    return std::nullopt;
  }
};

// The config a run without --tune takes: 256 threads keep 8 blocks per SM resident, 4 vectors
// per thread put 64 bytes of loads per thread in flight, and the persistent grid pays for
// block launches once per SM instead of once per tile.
inline constexpr Config kDefaultConfig{256, 4, GridMode::persistent};

// Every compiled pair in both grid modes, the default first.
[[nodiscard]] inline std::vector<Config> all_configs() {
  std::vector<Config> out{kDefaultConfig};
  for (const auto& [t, v] : kCompiled)
    for (GridMode g : {GridMode::persistent, GridMode::tiles})
      if (!(t == kDefaultConfig.threads && v == kDefaultConfig.vecs && g == kDefaultConfig.grid))
        out.push_back(Config{t, v, g});
  return out;
}

}  // namespace cutelab::elementwise::gelu_affine_v1
