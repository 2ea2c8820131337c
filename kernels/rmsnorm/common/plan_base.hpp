#pragma once
// What every RMSNorm plan shares: inputs, reference and cost. A design derives from
// RmsNormPlanBase<ItsConfig> and adds id(), arch(), summary(), make_configs(), make_kernel().

#include <memory>
#include <vector>

#include "cutelab/runtime/plan.hpp"
#include "rmsnorm/common/problem.hpp"
#include "rmsnorm/common/workspace.hpp"
#include "rmsnorm/reference/reference.hpp"

namespace cutelab::rmsnorm {

template <class ConfigT>
class RmsNormPlanBase : public TypedPlan<RmsNormProblem, ConfigT, RmsNormWorkspace> {
 protected:
  [[nodiscard]] std::unique_ptr<RmsNormWorkspace> make_inputs(const RmsNormProblem& p,
                                                              std::uint64_t seed) const override {
    return std::make_unique<RmsNormWorkspace>(p, seed);
  }
  [[nodiscard]] std::vector<std::vector<float>> make_reference(const RmsNormProblem&,
                                                               RmsNormWorkspace& ws) const override {
    return {rmsnorm_reference(ws.x(), ws.w())};
  }
  [[nodiscard]] Cost make_cost(const RmsNormProblem& p) const override { return rmsnorm_cost(p); }
};

}  // namespace cutelab::rmsnorm
