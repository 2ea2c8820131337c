#pragma once
// The GEMM family: C = epilogue(A * B^T) with bf16 inputs, fp32 accumulation and bf16 output.
// Every design of the family shares this file: the problem, its cost, its tolerance.
//
// Layout `tn` (the only one every kernel supports): A is M x K row-major (K-major), B is stored
// N x K row-major (K-major), C is M x N row-major. Epilogue `bias_gelu`:
//   C[m][n] = gelu(sum_k A[m][k] * B[n][k] + bias[n]),
// with the tanh form of GELU, 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), the one
// cuBLASLt's GELU epilogue and CUTLASS's GELU_taylor use.

#include <cstdint>
#include <string>

#include "cutelab/core/dtype.hpp"
#include "cutelab/runtime/check.hpp"
#include "cutelab/runtime/kernel.hpp"
#include "cutelab/runtime/problem.hpp"

namespace cutelab::gemm {

enum class OperandLayout : std::uint8_t { tn };
enum class Epilogue : std::uint8_t { none, bias_gelu };

[[nodiscard]] const char* layout_name(OperandLayout l) noexcept;
[[nodiscard]] const char* epilogue_name(Epilogue e) noexcept;

struct GemmProblem {
  int m = 4096;
  int n = 4096;
  int k = 4096;
  OperandLayout layout = OperandLayout::tn;
  Epilogue epilogue = Epilogue::none;
  DType dtype = DType::bf16;

  [[nodiscard]] static const Family& family();
  // Throws UsageError naming the parameter for values the family does not support.
  [[nodiscard]] static GemmProblem from(const Problem& p);
  // The generic problem with these values (for tests and tools that build problems directly).
  [[nodiscard]] Problem to_problem() const;
};

// flops = 2 m n k; bytes = (m k + n k + m n) * 2, plus the bias vector when it is read.
[[nodiscard]] Cost gemm_cost(const GemmProblem& p) noexcept;

// bf16 output rounded from an fp32 result: relative rounding <= 2^-9 per element, so rtol 1e-2
// leaves 5x headroom; atol covers outputs near zero where fp32 summation order dominates;
// the relative L2 error of a correct kernel is ~1e-3 (MEASURE.md: well under 1e-2).
[[nodiscard]] Tolerance gemm_tolerance(const GemmProblem& p) noexcept;

// Raw operands of one GEMM as the launchers take them (device pointers).
struct GemmOperands {
  const void* a = nullptr;     // bf16 [m, k]
  const void* b = nullptr;     // bf16 [n, k]
  const void* bias = nullptr;  // bf16 [n]; read only with Epilogue::bias_gelu
  void* c = nullptr;           // bf16 [m, n]
  int m = 0, n = 0, k = 0;
  Epilogue epilogue = Epilogue::none;
};

}  // namespace cutelab::gemm
