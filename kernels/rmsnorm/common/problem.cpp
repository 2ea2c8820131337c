#include "rmsnorm/common/problem.hpp"

#include <optional>
#include <string>

#include "cutelab/core/error.hpp"

namespace cutelab::rmsnorm {

const Family& RmsNormProblem::family() {
  static const Family f = [] {
    Family fam;
    fam.name = "rmsnorm";
    fam.description = "y = x / sqrt(mean(x^2 over a row) + 1e-6) * w, fp32 accumulation";
    ParamSpec rows;
    rows.name = "rows";
    rows.help = "rows, each normalized on its own";
    rows.kind = ParamSpec::Kind::integer;
    rows.default_value = "16384";
    rows.min = 1;
    rows.max = kMaxRows;
    ParamSpec cols;
    cols.name = "cols";
    cols.help = "elements per row (the normalized dimension; w has this length)";
    cols.kind = ParamSpec::Kind::integer;
    cols.default_value = "8192";
    cols.min = 1;
    cols.max = kMaxCols;
    ParamSpec dtype;
    dtype.name = "dtype";
    dtype.help = "element type of x, w and y";
    dtype.kind = ParamSpec::Kind::choice;
    dtype.default_value = "bf16";
    dtype.choices = {"bf16"};
    fam.params = {rows, cols, dtype};
    // 37 rows: not a multiple of the 4-row blocks; 1000 columns: vectors past the row's end
    // are masked in every row tile (none is 1000 wide).
    fam.sanitize_problem = {{"rows", "37"}, {"cols", "1000"}, {"dtype", "bf16"}};
    return fam;
  }();
  return f;
}

RmsNormProblem RmsNormProblem::from(const Problem& p) {
  CUTELAB_REQUIRE(p.family() == "rmsnorm", "problem of family '", p.family(),
                  "' given to the rmsnorm family");
  RmsNormProblem out;
  const std::int64_t rows = p.integer("rows");
  const std::int64_t cols = p.integer("cols");
  CUTELAB_REQUIRE(rows >= 1 && rows <= kMaxRows, "rows must be in [1, ", kMaxRows, "], got ", rows);
  CUTELAB_REQUIRE(cols >= 1 && cols <= kMaxCols, "cols must be in [1, ", kMaxCols, "], got ", cols);
  CUTELAB_REQUIRE(rows * cols <= kMaxElements, "rows * cols must be at most 2^34 elements, got rows=", rows,
                  " cols=", cols, " (", rows * cols, ")");
  out.rows = rows;
  out.cols = static_cast<int>(cols);
  const std::string& dt = p.choice("dtype");
  const std::optional<DType> parsed = parse_dtype(dt);
  CUTELAB_REQUIRE(parsed && *parsed == DType::bf16, "dtype must be bf16 (the only one implemented), got '",
                  dt, "'");
  out.dtype = *parsed;
  return out;
}

Cost rmsnorm_cost(const RmsNormProblem& p) {
  const double elems = static_cast<double>(p.rows) * p.cols;
  const double size = static_cast<double>(dtype_size(p.dtype));
  return Cost{kFlopsPerElement * elems, (2.0 * elems + p.cols) * size};
}

// A correctly rounded bf16 output is within u = 2^-8 (3.9e-3) of the exact value, relatively;
// the fp32 sum of squares (up to 65536 terms, tree-ordered) and rsqrt add ~1e-6. y is a
// product, so the relative bound holds down to tiny |y|: atol only absorbs fp32 noise.
// rtol = 1e-2 is 2.5 u; rounding alone gives a relative L2 error near u / sqrt(3) ~ 2e-3 at
// worst, so 5e-3 leaves room without letting a wrong-by-a-bit kernel through.
Tolerance rmsnorm_tolerance(DType dtype) {
  CUTELAB_REQUIRE(dtype == DType::bf16, "rmsnorm tolerance: dtype must be bf16, got ", dtype_name(dtype));
  return Tolerance{1e-4, 1e-2, 5e-3};
}

}  // namespace cutelab::rmsnorm
