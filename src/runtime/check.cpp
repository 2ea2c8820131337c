#include "cutelab/runtime/check.hpp"

#include <cmath>
#include <limits>

#include <nlohmann/json.hpp>

#include "cutelab/core/error.hpp"

namespace cutelab {
namespace {

// JSON has no Inf/NaN: write them as strings rather than the null nlohmann would emit.
nlohmann::json number(double v) {
  if (std::isfinite(v)) return v;
  return std::isnan(v) ? "nan" : (v > 0 ? "inf" : "-inf");
}

struct FirstBad {
  std::size_t index = SIZE_MAX;
  double got = 0;
  double ref = 0;
  void note(std::size_t i, double g, double r) {
    if (index != SIZE_MAX) return;
    index = i;
    got = g;
    ref = r;
  }
};

std::string fmt(double v) { return concat(v); }

}  // namespace

nlohmann::json CheckResult::to_json() const {
  nlohmann::json j = {{"output", output},
                      {"count", count},
                      {"rel_l2", number(rel_l2)},
                      {"max_abs", number(max_abs)},
                      {"max_rel", number(max_rel)},
                      {"mismatches", mismatches},
                      {"nan_inf", nan_inf},
                      {"unwritten", unwritten},
                      {"tol", {{"atol", tol.atol}, {"rtol", tol.rtol}, {"max_rel_l2", tol.max_rel_l2}}},
                      {"passed", passed},
                      {"reason", reason}};
  j["first_bad"] = first_bad == SIZE_MAX ? nlohmann::json(nullptr) : nlohmann::json(first_bad);
  return j;
}

CheckResult check_output(const std::string& name, DType got_type, const void* got, std::span<const float> ref,
                         const Tolerance& tol) {
  CUTELAB_REQUIRE(got != nullptr || ref.empty(), "check_output(", name, "): no data to check");
  CheckResult r;
  r.output = name;
  r.count = ref.size();
  r.tol = tol;

  double diff2 = 0, ref2 = 0;  // accumulated in double: millions of bf16 terms
  FirstBad unwritten, nan_inf, mismatch;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    const double rv = ref[i];
    if (is_poison(got_type, got, i)) {
      ++r.unwritten;
      unwritten.note(i, std::numeric_limits<double>::quiet_NaN(), rv);
      r.first_bad = std::min(r.first_bad, i);
      continue;
    }
    const double g = load_as_double(got_type, got, i);
    if (!std::isfinite(rv)) {
      // A non-finite reference must be matched in kind: NaN by NaN, +Inf by +Inf.
      const bool same = std::isnan(rv) ? std::isnan(g) : g == rv;
      if (!same) {
        ++r.mismatches;
        mismatch.note(i, g, rv);
        r.first_bad = std::min(r.first_bad, i);
      }
      continue;
    }
    if (!std::isfinite(g)) {
      ++r.nan_inf;
      ++r.mismatches;
      nan_inf.note(i, g, rv);
      r.first_bad = std::min(r.first_bad, i);
      continue;
    }
    const double d = std::fabs(g - rv);
    diff2 += d * d;
    ref2 += rv * rv;
    r.max_abs = std::max(r.max_abs, d);
    const double denom = std::max(std::fabs(rv), tol.atol);
    const double rel = denom > 0 ? d / denom : (d > 0 ? std::numeric_limits<double>::infinity() : 0.0);
    r.max_rel = std::max(r.max_rel, rel);
    if (d > tol.atol + tol.rtol * std::fabs(rv)) {
      ++r.mismatches;
      mismatch.note(i, g, rv);
      r.first_bad = std::min(r.first_bad, i);
    }
  }
  r.rel_l2 = ref2 > 0 ? std::sqrt(diff2 / ref2) : (diff2 > 0 ? std::numeric_limits<double>::infinity() : 0.0);

  const bool l2_ok = tol.max_rel_l2 <= 0 || r.rel_l2 <= tol.max_rel_l2;
  r.passed = r.unwritten == 0 && r.nan_inf == 0 && r.mismatches == 0 && l2_ok;
  if (r.passed) return r;

  std::vector<std::string> why;
  if (r.unwritten)
    why.push_back(concat(r.unwritten, " of ", r.count, " elements never written (still poisoned), first at index ",
                         unwritten.index));
  if (r.nan_inf)
    why.push_back(concat(r.nan_inf, " NaN/Inf where the reference is finite, first at index ", nan_inf.index,
                         ": got ", fmt(nan_inf.got), ", expected ", fmt(nan_inf.ref)));
  if (r.mismatches > r.nan_inf)
    why.push_back(concat(r.mismatches - r.nan_inf, " of ", r.count, " elements outside atol ", tol.atol, " + rtol ",
                         tol.rtol, " * |ref|, first at index ", mismatch.index, ": got ", fmt(mismatch.got),
                         ", expected ", fmt(mismatch.ref), " (max abs error ", r.max_abs, ")"));
  if (!l2_ok) why.push_back(concat("relative L2 error ", r.rel_l2, " exceeds ", tol.max_rel_l2));
  for (std::size_t i = 0; i < why.size(); ++i) r.reason += (i ? "; " : "") + why[i];
  r.reason = concat(name, ": ", r.reason);
  return r;
}

}  // namespace cutelab
