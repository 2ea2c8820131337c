#include "gemm/common/problem.hpp"

#include <cmath>

#include "cutelab/core/error.hpp"
#include "gemm/common/workspace.hpp"
#include "gemm/reference/reference.hpp"

namespace cutelab::gemm {

const char* layout_name(OperandLayout l) noexcept {
  switch (l) {
    case OperandLayout::tn: return "tn";
  }
  return "?";
}

const char* epilogue_name(Epilogue e) noexcept {
  switch (e) {
    case Epilogue::none: return "none";
    case Epilogue::bias_gelu: return "bias_gelu";
  }
  return "?";
}

const Family& GemmProblem::family() {
  static const Family f = [] {
    Family fam;
    fam.name = "gemm";
    fam.description = "C = epilogue(A * B^T): bf16 A [m,k] and B [n,k] (both K-major), fp32 accumulation, bf16 C [m,n]";
    auto size = [](const char* name, const char* help, const char* def) {
      ParamSpec s;
      s.name = name;
      s.help = help;
      s.kind = ParamSpec::Kind::integer;
      s.default_value = def;
      s.min = 1;
      s.max = 65536;
      return s;
    };
    fam.params.push_back(size("m", "rows of A and C", "4096"));
    fam.params.push_back(size("n", "rows of B, columns of C", "4096"));
    fam.params.push_back(size("k", "reduction length (columns of A and B)", "4096"));
    ParamSpec layout;
    layout.name = "layout";
    layout.help = "operand layouts: tn = A row-major [m,k], B row-major [n,k], C row-major [m,n]";
    layout.kind = ParamSpec::Kind::choice;
    layout.default_value = "tn";
    layout.choices = {"tn"};
    fam.params.push_back(layout);
    ParamSpec epi;
    epi.name = "epilogue";
    epi.help = "none: C = A*B^T; bias_gelu: C = gelu_tanh(A*B^T + bias[n])";
    epi.kind = ParamSpec::Kind::choice;
    epi.default_value = "none";
    epi.choices = {"none", "bias_gelu"};
    fam.params.push_back(epi);
    ParamSpec dtype;
    dtype.name = "dtype";
    dtype.help = "element type of A, B, bias and C";
    dtype.kind = ParamSpec::Kind::choice;
    dtype.default_value = "bf16";
    dtype.choices = {"bf16"};
    fam.params.push_back(dtype);
    // Not a multiple of any tile in m and n, two k-tiles of 64 plus a remainder of 8; n a
    // multiple of 8 so that every design (the CUTLASS tier's TMA-store epilogue too) can run it.
    fam.sanitize_problem = {{"m", "129"}, {"n", "264"}, {"k", "136"}, {"epilogue", "bias_gelu"}};
    return fam;
  }();
  return f;
}

GemmProblem GemmProblem::from(const Problem& p) {
  CUTELAB_REQUIRE(p.family() == "gemm", "GemmProblem::from: expected a problem of family 'gemm', got '",
                  p.family(), "'");
  GemmProblem g;
  auto dim = [&](const char* name) {
    const std::int64_t v = p.integer(name);
    CUTELAB_REQUIRE(v >= 1 && v <= 65536, "gemm: ", name, " must be in [1, 65536], got ", v);
    return static_cast<int>(v);
  };
  g.m = dim("m");
  g.n = dim("n");
  g.k = dim("k");
  const std::string& layout = p.choice("layout");
  CUTELAB_REQUIRE(layout == "tn", "gemm: layout must be 'tn', got '", layout, "'");
  g.layout = OperandLayout::tn;
  const std::string& epi = p.choice("epilogue");
  if (epi == "none") {
    g.epilogue = Epilogue::none;
  } else if (epi == "bias_gelu") {
    g.epilogue = Epilogue::bias_gelu;
  } else {
    throw UsageError(concat("gemm: epilogue must be 'none' or 'bias_gelu', got '", epi, "'"));
  }
  const std::string& dtype = p.choice("dtype");
  CUTELAB_REQUIRE(dtype == "bf16", "gemm: dtype must be 'bf16', got '", dtype, "'");
  g.dtype = DType::bf16;
  return g;
}

Problem GemmProblem::to_problem() const {
  return Problem("gemm", {{"m", std::int64_t{m}},
                          {"n", std::int64_t{n}},
                          {"k", std::int64_t{k}},
                          {"layout", std::string(layout_name(layout))},
                          {"epilogue", std::string(epilogue_name(epilogue))},
                          {"dtype", std::string(dtype_name(dtype))}});
}

Cost gemm_cost(const GemmProblem& p) noexcept {
  const double m = p.m, n = p.n, k = p.k;
  const double elem = 2.0;  // bf16
  Cost c;
  c.flops = 2.0 * m * n * k;
  c.bytes = (m * k + n * k + m * n) * elem + (p.epilogue == Epilogue::bias_gelu ? n * elem : 0.0);
  return c;
}

Tolerance gemm_tolerance(const GemmProblem&) noexcept {
  Tolerance t;
  t.atol = 1e-3;
  t.rtol = 1e-2;
  t.max_rel_l2 = 5e-3;
  return t;
}

GemmWorkspace::GemmWorkspace(const GemmProblem& p, std::uint64_t seed)
    : a(DType::bf16, {p.m, p.k}),
      b(DType::bf16, {p.n, p.k}),
      bias(DType::bf16, {p.n}),
      c(DType::bf16, {p.m, p.n}),
      problem_(p) {
  fill_normal(a.view(), seed, 0.0, 1.0);
  fill_normal(b.view(), seed + 1, 0.0, 1.0 / std::sqrt(static_cast<double>(p.k)));
  fill_normal(bias.view(), seed + 2, 0.0, 1.0);
  fill_poison(c.view());
  CUTELAB_CUDA(cudaDeviceSynchronize());
}

std::vector<OutputSpec> GemmWorkspace::outputs() const { return {{"c", c.view(), gemm_tolerance(problem_)}}; }

GemmOperands GemmWorkspace::operands() const {
  GemmOperands ops;
  ops.a = a.data();
  ops.b = b.data();
  ops.bias = bias.data();
  ops.c = c.data();
  ops.m = problem_.m;
  ops.n = problem_.n;
  ops.k = problem_.k;
  ops.epilogue = problem_.epilogue;
  return ops;
}

std::vector<std::vector<float>> gemm_reference(const GemmProblem& p, GemmWorkspace& ws) {
  DeviceTensor out(DType::f32, {p.m, p.n});
  reference_gemm(ws.operands(), out.as<float>(), nullptr);
  CUTELAB_CUDA(cudaDeviceSynchronize());
  return {copy_to_host_float(out.view())};
}

}  // namespace cutelab::gemm
