#pragma once
// cute/gemm/tensorop_sm80/v1: every compile-time constant of the version, and the runtime
// config that names one of them. Host-only C++ (no CuTe), so host tests can validate configs.

#include <cstddef>
#include <optional>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "cutelab/core/error.hpp"
#include "cutelab/runtime/device.hpp"
#include "cutelab/runtime/kernel.hpp"
#include "gemm/common/config_list.hpp"
#include "gemm/common/problem.hpp"

namespace cutelab::gemm::tensorop_sm80_v1 {

// One instantiation: CTA tile, cp.async pipeline depth, warp grid (each warp owns a
// (BM/WARPS_M) x (BN/WARPS_N) block of C, 64x64 in both tiles below).
template <int BM_, int BN_, int BK_, int STAGES_, int WARPS_M_, int WARPS_N_>
struct Tile {
  static constexpr int BM = BM_, BN = BN_, BK = BK_, STAGES = STAGES_;
  static constexpr int WARPS_M = WARPS_M_, WARPS_N = WARPS_N_;
  static constexpr int kThreads = 32 * WARPS_M * WARPS_N;
  // A and B stages, bf16; the kernel static_asserts sizeof(SharedStorage) <= this.
  static constexpr std::size_t kSmemBytes = std::size_t(STAGES) * (BM + BN) * BK * 2;
  static std::string name() {
    return "m" + std::to_string(BM) + "_n" + std::to_string(BN) + "_k" + std::to_string(BK) + "_s" +
           std::to_string(STAGES) + "_w" + std::to_string(WARPS_M) + "x" + std::to_string(WARPS_N);
  }
};

// BK = 64: one 128-byte row per K-slice, the width the 128B swizzle and 16-byte cp.async want.
using Tile128x128 = Tile<128, 128, 64, 4, 2, 2>;  // 128 KiB smem, 128 threads
using Tile128x256 = Tile<128, 256, 64, 3, 2, 4>;  // 144 KiB smem, 256 threads
using Tiles = TileList<Tile128x128, Tile128x256>;

struct Config {
  std::string tile;  // Tile<...>::name()
  int bm = 0, bn = 0, bk = 0, stages = 0, threads = 0;
  std::size_t smem_bytes = 0;

  template <class T>
  static Config of() {
    return {T::name(), T::BM, T::BN, T::BK, T::STAGES, T::kThreads, T::kSmemBytes};
  }
  [[nodiscard]] std::string name() const { return tile; }
  [[nodiscard]] nlohmann::json to_json() const;  // defined in plan.cpp (kernel code sees json_fwd only)
  [[nodiscard]] std::optional<std::string> validate(const GemmProblem& p, const DeviceInfo& dev) const {
    if (dev.cc_major < 8)
      return concat("needs sm_80 or newer (cp.async, bf16 mma.sync), found ", dev.sm());
    if (p.k % 8 != 0)
      return concat("k (", p.k, ") must be a multiple of 8: rows of A and B are copied in 16-byte vectors");
    if (smem_bytes > dev.smem_per_block_optin)
      return concat("needs ", smem_bytes, " bytes of shared memory per block, the device allows ",
                    dev.smem_per_block_optin);
    if (threads > dev.max_threads_per_block)
      return concat("needs ", threads, " threads per block, the device allows ", dev.max_threads_per_block);
    return std::nullopt;
  }
};

// Defined in launch.cuh, instantiated once per tile in instantiations/.
template <class T>
[[nodiscard]] Kernel build_kernel(const GemmOperands& ops, const DeviceInfo& dev);

}  // namespace cutelab::gemm::tensorop_sm80_v1
