// cute/gemm/tensorop_sm80/v1: the KernelPlan. Heavy device code lives in the instantiation
// units; this file only picks a tile and forwards.

#include <nlohmann/json.hpp>

#include "cute/gemm/tensorop_sm80/tensorop_sm80_v1/config.hpp"
#include "cutelab/core/math.hpp"
#include "cutelab/runtime/registry.hpp"
#include "gemm/common/workspace.hpp"

namespace cutelab::gemm::tensorop_sm80_v1 {

nlohmann::json Config::to_json() const {
  return {{"bm", bm},         {"bn", bn},           {"bk", bk},
          {"stages", stages}, {"threads", threads}, {"smem_bytes", smem_bytes}};
}

namespace {

class Plan final : public GemmPlan<Config> {
 public:
  [[nodiscard]] KernelId id() const override { return {"cute", "gemm", "tensorop_sm80", "v1"}; }
  [[nodiscard]] ArchRequirement arch() const override { return {8, 0, false}; }
  [[nodiscard]] std::string summary() const override {
    return "CuTe mma.sync 16x8x16 + cp.async multistage + swizzled smem + ldmatrix (Ampere recipe)";
  }

 protected:
  [[nodiscard]] std::vector<Config> make_configs(const GemmProblem& p, const DeviceInfo& dev) const override {
    // The wide tile reuses each A and B element twice as often; it goes first once it still
    // fills every SM with at least one CTA.
    const long wide_tiles = long(ceil_div(p.m, Tile128x256::BM)) * ceil_div(p.n, Tile128x256::BN);
    if (dev.sm_count > 0 && wide_tiles >= dev.sm_count)
      return {Config::of<Tile128x256>(), Config::of<Tile128x128>()};
    return {Config::of<Tile128x128>(), Config::of<Tile128x256>()};
  }

  [[nodiscard]] Kernel make_kernel(const GemmProblem&, const Config& c, GemmWorkspace& ws,
                                   const DeviceInfo& dev) const override {
    Kernel k;
    const GemmOperands ops = ws.operands();
    const bool found = Tiles::dispatch(c.tile, [&](auto t) { k = build_kernel<decltype(t)>(ops, dev); });
    if (!found) throw Error(concat("tensorop_sm80/v1: no instantiation for tile ", c.tile));
    return k;
  }
};

}  // namespace

CUTELAB_REGISTER_PLAN(Plan);

}  // namespace cutelab::gemm::tensorop_sm80_v1
