// The KernelPlan of cute/elementwise/gelu_affine/v1, and the family's default design.

#include <memory>
#include <utility>

#include "cute/elementwise/gelu_affine/gelu_affine_v1/config.hpp"
#include "cute/elementwise/gelu_affine/gelu_affine_v1/launch.hpp"
#include "cutelab/runtime/registry.hpp"
#include "elementwise/common/plan_base.hpp"
#include "elementwise/common/workspace.hpp"
#include "elementwise/reference/reference.hpp"

namespace cutelab::elementwise::gelu_affine_v1 {
namespace {

// Runtime (threads, vecs) -> the compiled variant.
template <std::size_t I = 0>
PlannedLaunch dispatch(const Args& args, const Config& c, const DeviceInfo& dev) {
  if constexpr (I == kCompiled.size()) {
    throw Error(concat("gelu_affine v1: config ", c.name(), " is not compiled in"));
  } else {
    constexpr std::pair<int, int> tv = kCompiled[I];
    if (c.threads == tv.first && c.vecs == tv.second)
      return plan_launch<tv.first, tv.second>(args, c.grid, dev);
    return dispatch<I + 1>(args, c, dev);
  }
}

class GeluAffineV1Plan final : public ElementwisePlanBase<Config> {
 public:
  [[nodiscard]] KernelId id() const override { return {"cute", "elementwise", "gelu_affine", "v1"}; }
  [[nodiscard]] ArchRequirement arch() const override { return {8, 0, false}; }
  [[nodiscard]] std::string summary() const override {
    return "y = gelu_tanh(x)*1.25-0.125, bf16, CuTe 16-byte vectors, scalar tail";
  }

 protected:
  [[nodiscard]] std::vector<Config> make_configs(const ElementwiseProblem& /*p*/,
                                                 const DeviceInfo& /*dev*/) const override {
    return all_configs();
  }
  [[nodiscard]] Kernel make_kernel(const ElementwiseProblem& p, const Config& c, ElementwiseWorkspace& ws,
                                   const DeviceInfo& dev) const override {
    CUTELAB_REQUIRE(ws.n() == p.n, "gelu_affine v1: workspace holds n=", ws.n(), ", problem has n=", p.n);
    PlannedLaunch planned = dispatch(Args{ws.x().data, ws.y().data, ws.n()}, c, dev);
    Kernel k;
    k.launch = std::move(planned.launch);
    k.resources = {std::move(planned.resources)};
    return k;
  }
};

}  // namespace

CUTELAB_REGISTER_PLAN(GeluAffineV1Plan);
CUTELAB_FAMILY_DEFAULT("elementwise", "cute/elementwise/gelu_affine");

}  // namespace cutelab::elementwise::gelu_affine_v1
