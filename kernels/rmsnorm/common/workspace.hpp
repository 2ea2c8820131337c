#pragma once
// Device buffers of one rmsnorm problem: x ~ N(0, 1), w ~ U(0.5, 1.5) from the seed, y poisoned.

#include <cstdint>
#include <vector>

#include "cutelab/runtime/plan.hpp"
#include "rmsnorm/common/problem.hpp"

namespace cutelab::rmsnorm {

class RmsNormWorkspace : public Workspace {
 public:
  // `misalign_elems` > 0 starts x, w and y that many elements past their allocation's start,
  // so tests reach the path for pointers that are not 16-byte aligned.
  RmsNormWorkspace(const RmsNormProblem& p, std::uint64_t seed, int misalign_elems = 0);

  [[nodiscard]] std::vector<OutputSpec> outputs() const override;    // y
  [[nodiscard]] const TensorView& x() const noexcept { return x_; }  // [rows, cols]
  [[nodiscard]] const TensorView& w() const noexcept { return w_; }  // [cols]
  [[nodiscard]] const TensorView& y() const noexcept { return y_; }  // [rows, cols]
  [[nodiscard]] std::int64_t rows() const noexcept { return rows_; }
  [[nodiscard]] int cols() const noexcept { return cols_; }

 private:
  std::int64_t rows_ = 0;
  int cols_ = 0;
  DeviceTensor x_buf_, w_buf_, y_buf_;
  TensorView x_, w_, y_;
};

}  // namespace cutelab::rmsnorm
