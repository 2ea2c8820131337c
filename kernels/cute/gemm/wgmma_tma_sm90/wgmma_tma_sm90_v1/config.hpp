#pragma once
// cute/gemm/wgmma_tma_sm90/v1: every compile-time constant of the version, and the runtime
// config naming one of them. Host-only C++ (no CuTe), so host tests can validate configs.

#include <cstddef>
#include <optional>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "cutelab/core/error.hpp"
#include "cutelab/runtime/device.hpp"
#include "cutelab/runtime/kernel.hpp"
#include "gemm/common/config_list.hpp"
#include "gemm/common/problem.hpp"

namespace cutelab::gemm::wgmma_tma_sm90_v1 {

// One instantiation: CTA tile and TMA pipeline depth. Every warpgroup computes 64 rows of the
// tile with WGMMA (64 x BN x 16 per instruction); one thread also issues the TMA loads.
template <int BM_, int BN_, int BK_, int STAGES_>
struct Tile {
  static constexpr int BM = BM_, BN = BN_, BK = BK_, STAGES = STAGES_;
  static constexpr int kWarpgroups = BM / 64;
  static constexpr int kThreads = 128 * kWarpgroups;
  // A and B stages (each a multiple of 1 KiB, the 128B-swizzle period) plus 1 KiB for the
  // mbarriers; the kernel static_asserts sizeof(SharedStorage) <= this.
  static constexpr std::size_t kSmemBytes = std::size_t(STAGES) * (BM + BN) * BK * 2 + 1024;
  static std::string name() {
    return "m" + std::to_string(BM) + "_n" + std::to_string(BN) + "_k" + std::to_string(BK) + "_s" +
           std::to_string(STAGES);
  }
};

using Tile128x128 = Tile<128, 128, 64, 6>;  // 193 KiB
using Tile128x256 = Tile<128, 256, 64, 4>;  // 193 KiB
using Tiles = TileList<Tile128x256, Tile128x128>;

struct Config {
  std::string tile;
  int bm = 0, bn = 0, bk = 0, stages = 0, threads = 0;
  std::size_t smem_bytes = 0;

  template <class T>
  static Config of() {
    return {T::name(), T::BM, T::BN, T::BK, T::STAGES, T::kThreads, T::kSmemBytes};
  }
  [[nodiscard]] std::string name() const { return tile; }
  [[nodiscard]] nlohmann::json to_json() const;  // defined in plan.cpp (kernel code sees json_fwd only)
  [[nodiscard]] std::optional<std::string> validate(const GemmProblem& p, const DeviceInfo& dev) const {
    if (dev.cc_major != 9 || dev.cc_minor != 0)
      return concat("needs sm_90a (WGMMA, TMA), found ", dev.sm());
    if (p.k % 8 != 0)
      return concat("k (", p.k, ") must be a multiple of 8: TMA needs 16-byte aligned row strides for A and B");
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

}  // namespace cutelab::gemm::wgmma_tma_sm90_v1
