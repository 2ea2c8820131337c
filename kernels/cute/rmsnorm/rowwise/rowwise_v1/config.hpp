#pragma once
// cute/rmsnorm/rowwise/v1: every constant of this version, and the host config that picks one
// of the compiled variants.

#include <algorithm>
#include <array>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "cutelab/runtime/device.hpp"
#include "rmsnorm/common/problem.hpp"

namespace cutelab::rmsnorm::rowwise_v1 {

// Elements per 16-byte access of bf16.
inline constexpr int kVecElems = 8;

// Compile-time shape of one variant: `ThreadsPerRow` threads own one row and keep it in
// registers, `Vecs` 16-byte vectors each (so a row of up to ThreadsPerRow * Vecs * 8 columns);
// a block holds `RowsPerCta` such groups (several rows per block only for warp-sized groups).
template <int ThreadsPerRow, int Vecs, int RowsPerCta>
struct KernelConfig {
  static constexpr int kThreadsPerRow = ThreadsPerRow;
  static constexpr int kVecs = Vecs;
  static constexpr int kRowsPerCta = RowsPerCta;
  static constexpr int kThreads = ThreadsPerRow * RowsPerCta;
  static constexpr int kWarpsPerRow = ThreadsPerRow / 32;
  static constexpr int kRowTile = ThreadsPerRow * Vecs * kVecElems;  // columns one row group holds
  static_assert(ThreadsPerRow % 32 == 0, "a row group is whole warps");
  static_assert(kThreads <= 1024, "at most 1024 threads per block");
  static_assert(Vecs >= 1 && Vecs <= 8, "1 to 8 vectors per thread");
};

struct Variant {
  int threads_per_row;
  int vecs;
  int rows_per_cta;
};

// The variants compiled into the library; instantiations/ has one line for each.
// clang-format off
inline constexpr std::array<Variant, 24> kCompiled = {{
    {32, 1, 4},   {32, 2, 4},   {32, 4, 4},   {32, 8, 4},    // one warp per row, 4 rows per block
    {64, 1, 1},   {64, 2, 1},   {64, 4, 1},   {64, 8, 1},    // one block per row
    {128, 1, 1},  {128, 2, 1},  {128, 4, 1},  {128, 8, 1},
    {256, 1, 1},  {256, 2, 1},  {256, 4, 1},  {256, 8, 1},
    {512, 1, 1},  {512, 2, 1},  {512, 4, 1},  {512, 8, 1},
    {1024, 1, 1}, {1024, 2, 1}, {1024, 4, 1}, {1024, 8, 1},
}};
// clang-format on

struct Config {
  int threads_per_row = 256;
  int vecs = 4;
  int rows_per_cta = 1;

  [[nodiscard]] int block_threads() const noexcept { return threads_per_row * rows_per_cta; }
  [[nodiscard]] int max_cols() const noexcept { return threads_per_row * vecs * kVecElems; }
  [[nodiscard]] std::string name() const {  // "t256_v4" or "t32_v2_r4"
    std::string s = "t" + std::to_string(threads_per_row) + "_v" + std::to_string(vecs);
    if (rows_per_cta > 1) s += "_r" + std::to_string(rows_per_cta);
    return s;
  }
  [[nodiscard]] nlohmann::json to_json() const;  // defined in plan.cpp (kernel code sees json_fwd only)
  [[nodiscard]] bool compiled() const noexcept {
    for (const Variant& v : kCompiled)
      if (v.threads_per_row == threads_per_row && v.vecs == vecs && v.rows_per_cta == rows_per_cta)
        return true;
    return false;
  }
  [[nodiscard]] std::optional<std::string> validate(const RmsNormProblem& p, const DeviceInfo& dev) const {
    if (!compiled()) return name() + " is not compiled in";
    if (block_threads() > dev.max_threads_per_block)
      return "block of " + std::to_string(block_threads()) +
             " threads exceeds the device's max_threads_per_block (" +
             std::to_string(dev.max_threads_per_block) + ")";
    if (p.cols > max_cols())
      return "the row is kept in registers: cols=" + std::to_string(p.cols) +
             " needs threads_per_row * vecs * 8 >= " + std::to_string(p.cols) + ", this config holds " +
             std::to_string(max_cols());
    if ((p.rows + rows_per_cta - 1) / rows_per_cta > 2147483647LL)
      return "rows=" + std::to_string(p.rows) + " needs more than 2^31-1 blocks";
    return std::nullopt;
  }
};

[[nodiscard]] inline std::vector<Config> all_configs() {
  std::vector<Config> out;
  for (const Variant& v : kCompiled) out.push_back(Config{v.threads_per_row, v.vecs, v.rows_per_cta});
  return out;
}

// Every config, best guess first (a run without --tune takes the first valid one): configs that
// hold the row before those that do not, then the narrowest row tile that holds it (the least
// masked work), then 4 vectors per thread (enough 16-byte loads in flight per thread without the
// register cost of 8), then fewer threads per row.
[[nodiscard]] inline std::vector<Config> ranked_configs(const RmsNormProblem& p) {
  std::vector<Config> out = all_configs();
  auto vec_distance = [](int vecs) {
    return vecs >= 4 ? vecs / 4 - 1 : 4 / vecs - 1;
  };  // 4: 0; 2, 8: 1; 1: 3
  auto key = [&](const Config& c) {
    return std::tuple(c.max_cols() < p.cols, c.max_cols(), vec_distance(c.vecs), c.threads_per_row);
  };
  std::stable_sort(out.begin(), out.end(), [&](const Config& a, const Config& b) { return key(a) < key(b); });
  return out;
}

}  // namespace cutelab::rmsnorm::rowwise_v1
