// The KernelPlan of baseline/elementwise/scalar/v1.

#include <memory>

#include "baseline/elementwise/scalar/scalar_v1/config.hpp"
#include "baseline/elementwise/scalar/scalar_v1/launch.cuh"
#include "cutelab/runtime/registry.hpp"
#include "elementwise/common/plan_base.hpp"
#include "elementwise/common/workspace.hpp"
#include "elementwise/reference/reference.hpp"

namespace cutelab::elementwise::scalar_v1 {
namespace {

class ScalarV1Plan final : public ElementwisePlanBase<Config> {
 public:
  [[nodiscard]] KernelId id() const override { return {"baseline", "elementwise", "scalar", "v1"}; }
  [[nodiscard]] ArchRequirement arch() const override { return {8, 0, false}; }
  [[nodiscard]] std::string summary() const override {
    return "y = gelu_tanh(x)*1.25-0.125, bf16, plain CUDA, one element per thread";
  }

 protected:
  [[nodiscard]] std::vector<Config> make_configs(const ElementwiseProblem& /*p*/,
                                                 const DeviceInfo& /*dev*/) const override {
    return all_configs();
  }
  [[nodiscard]] Kernel make_kernel(const ElementwiseProblem& p, const Config& c, ElementwiseWorkspace& ws,
                                   const DeviceInfo& /*dev*/) const override {
    CUTELAB_REQUIRE(ws.n() == p.n, "scalar v1: workspace holds n=", ws.n(), ", problem has n=", p.n);
    return plan_launch(ws.x(), ws.y(), c);
  }
};

}  // namespace

CUTELAB_REGISTER_PLAN(ScalarV1Plan);

}  // namespace cutelab::elementwise::scalar_v1
