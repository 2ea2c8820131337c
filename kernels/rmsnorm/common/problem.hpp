#pragma once
// The rmsnorm family: y[r, c] = x[r, c] / sqrt(mean_c(x[r, :]^2) + eps) * w[c], rows
// normalized independently, fp32 accumulation, x/w/y of one dtype. All designs share this file.

#include <cstdint>

#include "cutelab/core/dtype.hpp"
#include "cutelab/runtime/check.hpp"
#include "cutelab/runtime/kernel.hpp"
#include "cutelab/runtime/problem.hpp"

namespace cutelab::rmsnorm {

inline constexpr float kEps = 1e-6f;
inline constexpr int kMaxCols = 65536;
inline constexpr std::int64_t kMaxRows = 2147483647;  // one grid dimension
inline constexpr std::int64_t kMaxElements = std::int64_t{1} << 34;
// Flops per element: x*x and the sum (2), * inv_rms (1), * w (1). The per-row mean, sqrt
// and reciprocal are not counted.
inline constexpr double kFlopsPerElement = 4;

struct RmsNormProblem {
  std::int64_t rows = 16384;
  int cols = 8192;
  DType dtype = DType::bf16;

  [[nodiscard]] std::int64_t elements() const noexcept { return rows * cols; }
  [[nodiscard]] static const Family& family();
  // Throws UsageError naming the parameter for sizes the family does not support.
  [[nodiscard]] static RmsNormProblem from(const Problem& p);
};

// flops = 4 rows cols; bytes = x + y + w = (2 rows cols + cols) * sizeof(dtype).
[[nodiscard]] Cost rmsnorm_cost(const RmsNormProblem& p);

// bf16 output: see problem.cpp for the derivation.
[[nodiscard]] Tolerance rmsnorm_tolerance(DType dtype);

}  // namespace cutelab::rmsnorm
