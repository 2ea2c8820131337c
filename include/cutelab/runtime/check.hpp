#pragma once
// Comparing a kernel's output with the reference.

#include <cstddef>
#include <span>
#include <string>

#include <nlohmann/json_fwd.hpp>  // declarations only: kernel code includes this header

#include "cutelab/core/dtype.hpp"

namespace cutelab {

struct Tolerance {
  double atol = 0;
  double rtol = 0;
  double max_rel_l2 = 0;  // the relative L2 error must also stay under this; 0: not applied
};

struct CheckResult {
  std::string output;
  std::size_t count = 0;
  double rel_l2 = 0;       // ||got - ref|| / ||ref|| over elements where both are finite
  double max_abs = 0;
  double max_rel = 0;      // |got - ref| / max(|ref|, atol)
  std::size_t mismatches = 0;  // |got - ref| > atol + rtol * |ref|, or a non-finite disagreement
  std::size_t nan_inf = 0;     // NaN/Inf in `got` where the reference is finite
  std::size_t unwritten = 0;   // still holding the poison pattern
  std::size_t first_bad = SIZE_MAX;  // index of the first element that failed
  Tolerance tol;
  bool passed = false;
  std::string reason;  // empty when passed, else why it failed

  [[nodiscard]] nlohmann::json to_json() const;
};

// `got` holds `count` host elements of dtype `got_type` (raw bits, so poison is visible);
// `ref` the reference. A reference value that is +-Inf or NaN must be matched exactly in kind.
[[nodiscard]] CheckResult check_output(const std::string& name, DType got_type, const void* got,
                                       std::span<const float> ref, const Tolerance& tol);

}  // namespace cutelab
