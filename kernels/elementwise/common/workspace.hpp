#pragma once
// Device buffers of one elementwise problem: x ~ N(0, 2^2) from the seed (wide enough to reach
// both of GELU's asymptotes), y poisoned.

#include <cstdint>
#include <vector>

#include "cutelab/runtime/plan.hpp"
#include "elementwise/common/problem.hpp"

namespace cutelab::elementwise {

class ElementwiseWorkspace : public Workspace {
 public:
  // `misalign_elems` > 0 starts x and y that many elements past their allocation's start, so
  // tests reach the path for pointers that are not 16-byte aligned.
  ElementwiseWorkspace(const ElementwiseProblem& p, std::uint64_t seed, int misalign_elems = 0);

  [[nodiscard]] std::vector<OutputSpec> outputs() const override;  // y
  [[nodiscard]] const TensorView& x() const noexcept { return x_; }
  [[nodiscard]] const TensorView& y() const noexcept { return y_; }
  [[nodiscard]] std::int64_t n() const noexcept { return n_; }

 private:
  std::int64_t n_ = 0;
  DeviceTensor x_buf_, y_buf_;
  TensorView x_, y_;
};

}  // namespace cutelab::elementwise
