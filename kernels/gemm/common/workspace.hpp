#pragma once
// Device buffers of one GEMM problem, filled from a seed: A ~ N(0, 1), B ~ N(0, 1/sqrt(k)) so
// that outputs are O(1) whatever k is (GELU then sees its curved region), bias ~ N(0, 1),
// C poisoned.

#include <cstdint>
#include <memory>
#include <vector>

#include "cutelab/runtime/plan.hpp"
#include "gemm/common/problem.hpp"

namespace cutelab::gemm {

class GemmWorkspace : public Workspace {
 public:
  GemmWorkspace(const GemmProblem& p, std::uint64_t seed);

  [[nodiscard]] std::vector<OutputSpec> outputs() const override;  // c
  [[nodiscard]] GemmOperands operands() const;
  [[nodiscard]] const GemmProblem& problem() const noexcept { return problem_; }

  DeviceTensor a, b, bias, c;

 private:
  GemmProblem problem_;
};

// The reference of the family: fp32 accumulation of the same bf16 inputs on the GPU
// (gemm/reference), epilogue in fp32; one host array for C.
[[nodiscard]] std::vector<std::vector<float>> gemm_reference(const GemmProblem& p, GemmWorkspace& ws);

// What every GEMM plan shares: inputs, reference and cost. A design adds its id, arch,
// configs and kernel.
template <class ConfigT>
class GemmPlan : public TypedPlan<GemmProblem, ConfigT, GemmWorkspace> {
 protected:
  [[nodiscard]] std::unique_ptr<GemmWorkspace> make_inputs(const GemmProblem& p, std::uint64_t seed) const override {
    return std::make_unique<GemmWorkspace>(p, seed);
  }
  [[nodiscard]] std::vector<std::vector<float>> make_reference(const GemmProblem& p, GemmWorkspace& ws) const override {
    return gemm_reference(p, ws);
  }
  [[nodiscard]] Cost make_cost(const GemmProblem& p) const override { return gemm_cost(p); }
};

}  // namespace cutelab::gemm
