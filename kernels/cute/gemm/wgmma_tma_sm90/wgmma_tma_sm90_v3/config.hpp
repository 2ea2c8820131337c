#pragma once
// cute/gemm/wgmma_tma_sm90/v3: every compile-time constant of the version, and the runtime
// config (tile instantiation + tile order). Host-only C++ (no CuTe), so host tests can
// validate configs.

#include <cstddef>
#include <optional>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "cutelab/core/error.hpp"
#include "cutelab/runtime/device.hpp"
#include "cutelab/runtime/kernel.hpp"
#include "gemm/common/config_list.hpp"
#include "gemm/common/problem.hpp"
#include "gemm/common/tile_order.hpp"

namespace cutelab::gemm::wgmma_tma_sm90_v3 {

// Warpgroup roles: one producer warpgroup (one elected thread issues every TMA), two consumer
// warpgroups running WGMMA. setmaxnreg moves registers from the producer to the consumers:
// 128 x 40 + 256 x 232 = 64512 <= 65536 registers per SM.
inline constexpr int kConsumerWarpgroups = 2;
inline constexpr int kThreads = 128 * (1 + kConsumerWarpgroups);
inline constexpr int kProducerRegs = 40;
inline constexpr int kConsumerRegs = 232;

// One instantiation: CTA tile, pipeline depth and cluster shape. The CM x CN CTAs of a cluster
// compute neighbouring tiles: the CM CTAs of one column share B tiles, the CN CTAs of one row
// share A tiles, and each loads 1/CM of B (1/CN of A) and multicasts it to its partners.
// The consumers split the 128-row tile by rows (64 each).
template <int BM_, int BN_, int BK_, int STAGES_, int CM_, int CN_>
struct Tile {
  static constexpr int BM = BM_, BN = BN_, BK = BK_, STAGES = STAGES_;
  static constexpr int CM = CM_, CN = CN_, kClusterSize = CM_ * CN_;
  static_assert(BM == 128, "two consumer warpgroups of 64 rows each");
  static_assert(kClusterSize >= 1 && kClusterSize <= 8, "portable cluster sizes are 1..8");
  // A and B stages (multiples of the 1 KiB swizzle period) plus 1 KiB for the mbarriers;
  // the kernel static_asserts sizeof(SharedStorage) <= this.
  static constexpr std::size_t kSmemBytes = std::size_t(STAGES) * (BM + BN) * BK * 2 + 1024;
  static std::string name() {
    return "m" + std::to_string(BM) + "_n" + std::to_string(BN) + "_k" + std::to_string(BK) + "_s" +
           std::to_string(STAGES) + "_c" + std::to_string(CM) + "x" + std::to_string(CN);
  }
};

using Tile128x256C2x1 = Tile<128, 256, 64, 4, 2, 1>;  // B (the 256-row operand) multicast to 2 CTAs
using Tile128x256C1x2 = Tile<128, 256, 64, 4, 1, 2>;  // A multicast to 2 CTAs
using Tile128x128C2x1 = Tile<128, 128, 64, 6, 2, 1>;  // twice the tiles, for mid-size problems
using Tiles = TileList<Tile128x256C2x1, Tile128x256C1x2, Tile128x128C2x1>;

struct Config {
  std::string tile;
  int bm = 0, bn = 0, bk = 0, stages = 0, cluster_m = 1, cluster_n = 1;
  std::size_t smem_bytes = 0;
  Raster raster = Raster::along_n;
  int band = 8;  // tiles across the raster direction per band (TileOrder)

  template <class T>
  static Config of(Raster raster, int band) {
    return {T::name(), T::BM, T::BN, T::BK, T::STAGES, T::CM, T::CN, T::kSmemBytes, raster, band};
  }
  [[nodiscard]] std::string name() const {
    return tile + "_r" + raster_name(raster) + "_b" + std::to_string(band);
  }
  [[nodiscard]] nlohmann::json to_json() const;  // defined in plan.cpp (kernel code sees json_fwd only)
  [[nodiscard]] std::optional<std::string> validate(const GemmProblem& p, const DeviceInfo& dev) const {
    if (dev.cc_major != 9 || dev.cc_minor != 0)
      return concat("needs sm_90a (WGMMA, TMA multicast, clusters, setmaxnreg), found ", dev.sm());
    if (p.k % 8 != 0)
      return concat("k (", p.k, ") must be a multiple of 8: TMA needs 16-byte aligned row strides for A and B");
    if (smem_bytes > dev.smem_per_block_optin)
      return concat("needs ", smem_bytes, " bytes of shared memory per block, the device allows ",
                    dev.smem_per_block_optin);
    if (kThreads > dev.max_threads_per_block)
      return concat("needs ", kThreads, " threads per block, the device allows ", dev.max_threads_per_block);
    if (kProducerRegs * 128 + kConsumerRegs * 128 * kConsumerWarpgroups > dev.regs_per_sm)
      return concat("the register split needs ", kProducerRegs * 128 + kConsumerRegs * 256,
                    " registers per SM, the device has ", dev.regs_per_sm);
    if (band < 1) return concat("band (", band, ") must be at least 1");
    if (dev.sm_count > 0 && dev.sm_count < cluster_m * cluster_n)
      return concat("a cluster of ", cluster_m * cluster_n, " CTAs needs as many SMs, the device has ", dev.sm_count);
    return std::nullopt;
  }
};

// Defined in launch.cuh, instantiated once per tile in instantiations/.
template <class T>
[[nodiscard]] Kernel build_kernel(const GemmOperands& ops, const Config& c, const DeviceInfo& dev);

}  // namespace cutelab::gemm::wgmma_tma_sm90_v3
