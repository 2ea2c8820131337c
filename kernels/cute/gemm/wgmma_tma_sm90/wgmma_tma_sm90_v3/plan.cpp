// cute/gemm/wgmma_tma_sm90/v3: the KernelPlan. Heavy device code lives in the instantiation
// units; this file only picks a tile, cluster shape and tile order and forwards.

#include <nlohmann/json.hpp>

#include "cute/gemm/wgmma_tma_sm90/wgmma_tma_sm90_v3/config.hpp"
#include "cutelab/core/math.hpp"
#include "cutelab/runtime/registry.hpp"
#include "gemm/common/workspace.hpp"

namespace cutelab::gemm::wgmma_tma_sm90_v3 {

nlohmann::json Config::to_json() const {
  return {{"bm", bm},
          {"bn", bn},
          {"bk", bk},
          {"stages", stages},
          {"threads", kThreads},
          {"smem_bytes", smem_bytes},
          {"raster", raster_name(raster)},
          {"band", band},
          {"cluster_m", cluster_m},
          {"cluster_n", cluster_n}};
}

namespace {

class Plan final : public GemmPlan<Config> {
 public:
  [[nodiscard]] KernelId id() const override { return {"cute", "gemm", "wgmma_tma_sm90", "v3"}; }
  [[nodiscard]] ArchRequirement arch() const override { return {9, 0, true}; }
  [[nodiscard]] std::string summary() const override {
    return "v2 + thread-block clusters (2x1 / 1x2) with TMA multicast of the shared operand";
  }

 protected:
  [[nodiscard]] std::vector<Config> make_configs(const GemmProblem& p, const DeviceInfo& dev) const override {
    // 2x1 (B multicast) first: it beat 1x2 at 8192^3 on H100 (1454 vs 1769 us, 2026-11-22).
    // The 128x256 tile first while it still gives every SM a CTA, else the 128x128 one.
    const long wide_tiles = long(ceil_div(p.m, 128)) * ceil_div(p.n, 256);
    const bool wide_fills = dev.sm_count > 0 && wide_tiles >= dev.sm_count;
    std::vector<Config> out;
    if (wide_fills) out.push_back(Config::of<Tile128x256C2x1>(Raster::along_n, 4));
    out.push_back(Config::of<Tile128x128C2x1>(Raster::along_n, 4));
    if (!wide_fills) out.push_back(Config::of<Tile128x256C2x1>(Raster::along_n, 4));
    out.push_back(Config::of<Tile128x256C1x2>(Raster::along_n, 4));
    out.push_back(Config::of<Tile128x256C2x1>(Raster::along_m, 4));
    return out;
  }

  [[nodiscard]] Kernel make_kernel(const GemmProblem&, const Config& c, GemmWorkspace& ws,
                                   const DeviceInfo& dev) const override {
    Kernel k;
    const GemmOperands ops = ws.operands();
    if (!Tiles::dispatch(c.tile, [&](auto t) { k = build_kernel<decltype(t)>(ops, c, dev); }))
      throw Error(concat("wgmma_tma_sm90/v3: no instantiation for tile ", c.tile));
    return k;
  }
};

}  // namespace

CUTELAB_REGISTER_PLAN(Plan);

}  // namespace cutelab::gemm::wgmma_tma_sm90_v3
