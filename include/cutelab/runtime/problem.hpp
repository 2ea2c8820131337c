#pragma once
// A problem is a family's named parameters (sizes, flags, dtype). Each family declares its
// parameters once; the CLI turns them into flags, suites into JSON fields, plans into typed
// problem structs (MlaDecodeProblem, GemmProblem, ...) through `from(const Problem&)`.

#include <cstdint>
#include <initializer_list>
#include <utility>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

namespace cutelab {

struct ParamSpec {
  enum class Kind { integer, boolean, choice };
  std::string name;  // flag name without dashes: "b", "rows", "dtype"
  std::string help;
  Kind kind = Kind::integer;
  std::string default_value;  // as text: "128", "false", "bf16"
  std::int64_t min = 0;       // integer bounds, inclusive
  std::int64_t max = INT64_MAX;
  std::vector<std::string> choices;  // for Kind::choice
};

using ParamValue = std::variant<std::int64_t, bool, std::string>;

class Problem {
 public:
  Problem() = default;
  Problem(std::string family, std::map<std::string, ParamValue> values)
      : family_(std::move(family)), values_(std::move(values)) {}

  [[nodiscard]] const std::string& family() const noexcept { return family_; }
  [[nodiscard]] std::int64_t integer(const std::string& name) const;
  [[nodiscard]] bool boolean(const std::string& name) const;
  [[nodiscard]] const std::string& choice(const std::string& name) const;
  [[nodiscard]] const std::map<std::string, ParamValue>& values() const noexcept { return values_; }
  // Stable key for caches and reports: "b=128,causal=0,dtype=bf16,..." (sorted by name).
  [[nodiscard]] std::string key() const;
  [[nodiscard]] nlohmann::json to_json() const;

 private:
  std::string family_;
  std::map<std::string, ParamValue> values_;
};

struct Family {
  std::string name;  // "mla_decode", "gemm", "rmsnorm", "elementwise"
  std::string description;
  std::vector<ParamSpec> params;
  // A small problem of this family for compute-sanitizer runs (flag values as text).
  std::map<std::string, std::string> sanitize_problem;

  [[nodiscard]] const ParamSpec* find(const std::string& name) const;
};

// Builds a problem from text values (CLI flags, suite fields); unset parameters take their
// default. Unknown names, unparsable text and values out of range throw UsageError naming
// the parameter.
[[nodiscard]] Problem make_problem(const Family& family, const std::map<std::string, std::string>& given);
[[nodiscard]] Problem make_problem(const Family& family, const nlohmann::json& given);
// Braced text values, e.g. make_problem(f, {{"n", "1000"}, {"dtype", "bf16"}}): without this the
// call would be ambiguous between the two above.
[[nodiscard]] inline Problem make_problem(const Family& family,
                                          std::initializer_list<std::pair<const std::string, std::string>> given) {
  return make_problem(family, std::map<std::string, std::string>(given));
}

}  // namespace cutelab
