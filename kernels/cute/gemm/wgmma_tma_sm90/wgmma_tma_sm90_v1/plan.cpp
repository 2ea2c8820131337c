// cute/gemm/wgmma_tma_sm90/v1: the KernelPlan. Heavy device code lives in the instantiation
// units; this file only picks a tile and forwards.

#include <nlohmann/json.hpp>

#include "cute/gemm/wgmma_tma_sm90/wgmma_tma_sm90_v1/config.hpp"
#include "cutelab/core/math.hpp"
#include "cutelab/runtime/registry.hpp"
#include "gemm/common/workspace.hpp"

namespace cutelab::gemm::wgmma_tma_sm90_v1 {

nlohmann::json Config::to_json() const {
  return {{"bm", bm},         {"bn", bn},           {"bk", bk},
          {"stages", stages}, {"threads", threads}, {"smem_bytes", smem_bytes}};
}

namespace {

class Plan final : public GemmPlan<Config> {
 public:
  [[nodiscard]] KernelId id() const override { return {"cute", "gemm", "wgmma_tma_sm90", "v1"}; }
  [[nodiscard]] ArchRequirement arch() const override { return {9, 0, true}; }
  [[nodiscard]] std::string summary() const override {
    return "CuTe WGMMA + TMA + mbarrier ring, one CTA per tile, all warpgroups compute";
  }

 protected:
  [[nodiscard]] std::vector<Config> make_configs(const GemmProblem& p, const DeviceInfo& dev) const override {
    // The wide tile first while it still gives every SM a CTA.
    const long wide_tiles = long(ceil_div(p.m, Tile128x256::BM)) * ceil_div(p.n, Tile128x256::BN);
    if (dev.sm_count > 0 && wide_tiles >= dev.sm_count)
      return {Config::of<Tile128x256>(), Config::of<Tile128x128>()};
    return {Config::of<Tile128x128>(), Config::of<Tile128x256>()};
  }

  [[nodiscard]] Kernel make_kernel(const GemmProblem&, const Config& c, GemmWorkspace& ws,
                                   const DeviceInfo& dev) const override {
    Kernel k;
    const GemmOperands ops = ws.operands();
    if (!Tiles::dispatch(c.tile, [&](auto t) { k = build_kernel<decltype(t)>(ops, dev); }))
      throw Error(concat("wgmma_tma_sm90/v1: no instantiation for tile ", c.tile));
    return k;
  }
};

}  // namespace

CUTELAB_REGISTER_PLAN(Plan);
// The family's default design: `cutelab run gemm` takes its newest version.
CUTELAB_FAMILY_DEFAULT("gemm", "cute/gemm/wgmma_tma_sm90");

}  // namespace cutelab::gemm::wgmma_tma_sm90_v1
