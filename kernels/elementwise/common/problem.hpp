#pragma once
// The elementwise family: y = gelu_tanh(x) * kAlpha + kBeta over a flat vector.
// gelu_tanh(x) = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))  (the tanh approximation of
// GELU, used by GPT-2 style MLPs). Every design of the family computes this function; the
// reference evaluates the same formula in fp64.

#include <cstdint>

#include "cutelab/core/dtype.hpp"
#include "cutelab/runtime/check.hpp"
#include "cutelab/runtime/kernel.hpp"
#include "cutelab/runtime/problem.hpp"

namespace cutelab::elementwise {

// The affine part is fixed by the family (not a problem parameter): the kernel's job is the
// memory stream, and a scale plus a shift keeps the output's sign and zero crossing nontrivial.
inline constexpr float kAlpha = 1.25f;
inline constexpr float kBeta = -0.125f;
inline constexpr double kSqrt2OverPi = 0.79788456080286535588;  // sqrt(2/pi)
inline constexpr double kCubic = 0.044715;

inline constexpr std::int64_t kMaxElements = std::int64_t{1} << 34;
// Flops per element, counted on the formula: x*x, fma(kCubic, x^2, 1), *x, *sqrt(2/pi),
// tanh (1), +1, 0.5*x, *, *kAlpha, +kBeta = 11.
inline constexpr double kFlopsPerElement = 11;

struct ElementwiseProblem {
  std::int64_t n = 134217728;  // elements (256 MiB of bf16 input)
  DType dtype = DType::bf16;

  [[nodiscard]] static const Family& family();
  // Throws UsageError naming the parameter for sizes the family does not support.
  [[nodiscard]] static ElementwiseProblem from(const Problem& p);
};

// flops = 11 n; bytes = n * sizeof(in) + n * sizeof(out).
[[nodiscard]] Cost elementwise_cost(const ElementwiseProblem& p);

// bf16 output: see tolerance() in problem.cpp for the derivation.
[[nodiscard]] Tolerance elementwise_tolerance(DType dtype);

// fp64 host evaluation of the family's function (the CPU check of the GPU reference).
[[nodiscard]] double gelu_affine_host(double x);

}  // namespace cutelab::elementwise
