// cute/gemm/wgmma_tma_sm90/v2: the KernelPlan. Heavy device code lives in the instantiation
// units; this file only picks a tile and a tile order and forwards.

#include <nlohmann/json.hpp>

#include "cute/gemm/wgmma_tma_sm90/wgmma_tma_sm90_v2/config.hpp"
#include "cutelab/core/math.hpp"
#include "cutelab/runtime/registry.hpp"
#include "gemm/common/workspace.hpp"

namespace cutelab::gemm::wgmma_tma_sm90_v2 {

nlohmann::json Config::to_json() const {
  return {{"bm", bm},
          {"bn", bn},
          {"bk", bk},
          {"stages", stages},
          {"threads", kThreads},
          {"smem_bytes", smem_bytes},
          {"raster", raster_name(raster)},
          {"band", band}};
}

namespace {

class Plan final : public GemmPlan<Config> {
 public:
  [[nodiscard]] KernelId id() const override { return {"cute", "gemm", "wgmma_tma_sm90", "v2"}; }
  [[nodiscard]] ArchRequirement arch() const override { return {9, 0, true}; }
  [[nodiscard]] std::string summary() const override {
    return "CuTe WGMMA + TMA, persistent, warp-specialized (1 TMA producer + 2 WGMMA consumer warpgroups, "
           "setmaxnreg), banded tile order";
  }

 protected:
  [[nodiscard]] std::vector<Config> make_configs(const GemmProblem& p, const DeviceInfo& dev) const override {
    std::vector<Config> out;
    const long wide_tiles = long(ceil_div(p.m, 128)) * ceil_div(p.n, 256);
    const bool wide_fills = dev.sm_count > 0 && wide_tiles >= dev.sm_count;
    // Heuristic order (the first valid config runs when nothing is tuned or cached):
    // m <= 64 wastes half of a 128-row tile; small problems want more, smaller tiles.
    if (p.m <= 64) out.push_back(Config::of<Tile64x256>(Raster::along_n, 8));
    if (wide_fills) out.push_back(Config::of<Tile128x256>(Raster::along_n, 8));
    out.push_back(Config::of<Tile128x128>(Raster::along_n, 8));
    if (!wide_fills) out.push_back(Config::of<Tile128x256>(Raster::along_n, 8));
    // Tile-order alternatives for the main tile, for the tuner.
    out.push_back(Config::of<Tile128x256>(Raster::along_m, 8));
    out.push_back(Config::of<Tile128x256>(Raster::along_n, 1));
    if (p.m > 64) out.push_back(Config::of<Tile64x256>(Raster::along_n, 8));
    return out;
  }

  [[nodiscard]] Kernel make_kernel(const GemmProblem&, const Config& c, GemmWorkspace& ws,
                                   const DeviceInfo& dev) const override {
    Kernel k;
    const GemmOperands ops = ws.operands();
    if (!Tiles::dispatch(c.tile, [&](auto t) { k = build_kernel<decltype(t)>(ops, c, dev); }))
      throw Error(concat("wgmma_tma_sm90/v2: no instantiation for tile ", c.tile));
    return k;
  }
};

}  // namespace

CUTELAB_REGISTER_PLAN(Plan);

}  // namespace cutelab::gemm::wgmma_tma_sm90_v2
