// cutlass/gemm/collective_sm90/v1: the KernelPlan. The CUTLASS instantiations live in
// instantiations/; this file lists the variants that fit the problem's epilogue.

#include <nlohmann/json.hpp>

#include "cutelab/runtime/registry.hpp"
#include "cutlass/gemm/collective_sm90/collective_sm90_v1/config.hpp"
#include "gemm/common/workspace.hpp"

namespace cutelab::gemm::collective_sm90_v1 {

nlohmann::json Config::to_json() const {
  return {{"bm", bm},
          {"bn", bn},
          {"bk", bk},
          {"cluster_m", cluster_m},
          {"cluster_n", cluster_n},
          {"schedule", schedule == Schedule::cooperative ? "KernelTmaWarpSpecializedCooperative"
                                                         : "KernelTmaWarpSpecializedPingpong"},
          {"epilogue", bias_gelu ? "LinCombPerColBiasEltAct<GELU_taylor>" : "LinearCombination"},
          {"max_swizzle_size", swizzle}};
}

namespace {

class Plan final : public GemmPlan<Config> {
 public:
  [[nodiscard]] KernelId id() const override { return {"cutlass", "gemm", "collective_sm90", "v1"}; }
  [[nodiscard]] ArchRequirement arch() const override { return {9, 0, true}; }
  [[nodiscard]] std::string summary() const override {
    return "CUTLASS collective builder: TMA warp-specialized cooperative / ping-pong, persistent, "
           "TMA epilogue (bias + GELU through the fusion API)";
  }

 protected:
  [[nodiscard]] std::vector<Config> make_configs(const GemmProblem& p, const DeviceInfo&) const override {
    // Variants built for the other epilogue are listed too: validate() says why they cannot run.
    if (p.epilogue == Epilogue::bias_gelu)
      return {Config::of<CoopM128N256C2BiasGelu>(1), Config::of<CoopM128N256C2BiasGelu>(8),
              Config::of<CoopM128N256C2>(1)};
    return {Config::of<CoopM128N256C2>(1), Config::of<CoopM128N256C1>(1), Config::of<PingM128N128C1>(1),
            Config::of<CoopM128N256C2>(8), Config::of<CoopM128N256C2BiasGelu>(1)};
  }

  [[nodiscard]] Kernel make_kernel(const GemmProblem&, const Config& c, GemmWorkspace& ws,
                                   const DeviceInfo& dev) const override {
    Kernel k;
    const GemmOperands ops = ws.operands();
    if (!Variants::dispatch(c.variant, [&](auto v) { k = build_kernel<decltype(v)>(ops, c, dev); }))
      throw Error(concat("collective_sm90/v1: no instantiation for variant ", c.variant));
    return k;
  }
};

}  // namespace

CUTELAB_REGISTER_PLAN(Plan);

}  // namespace cutelab::gemm::collective_sm90_v1
