#pragma once
// What every elementwise plan shares: inputs, reference and cost. A design derives from
// ElementwisePlanBase<ItsConfig> and adds id(), arch(), summary(), make_configs(), make_kernel().

#include <memory>
#include <vector>

#include "cutelab/runtime/plan.hpp"
#include "elementwise/common/problem.hpp"
#include "elementwise/common/workspace.hpp"
#include "elementwise/reference/reference.hpp"

namespace cutelab::elementwise {

template <class ConfigT>
class ElementwisePlanBase : public TypedPlan<ElementwiseProblem, ConfigT, ElementwiseWorkspace> {
 protected:
  [[nodiscard]] std::unique_ptr<ElementwiseWorkspace> make_inputs(const ElementwiseProblem& p,
                                                                  std::uint64_t seed) const override {
    return std::make_unique<ElementwiseWorkspace>(p, seed);
  }
  [[nodiscard]] std::vector<std::vector<float>> make_reference(const ElementwiseProblem&,
                                                               ElementwiseWorkspace& ws) const override {
    return {gelu_affine_reference(ws.x())};
  }
  [[nodiscard]] Cost make_cost(const ElementwiseProblem& p) const override { return elementwise_cost(p); }
};

}  // namespace cutelab::elementwise
