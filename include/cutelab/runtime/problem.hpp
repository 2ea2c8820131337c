#pragma once
// A problem is a family's named parameters (sizes, flags, dtype). Each family declares its
// parameters once; the CLI turns them into flags, suites into JSON fields, plans into typed
// problem structs (MlaDecodeProblem, GemmProblem, ...) through `from(const Problem&)`.

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <utility>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include <nlohmann/json_fwd.hpp>  // declarations only: kernel code includes this header

namespace cutelab {

struct ParamSpec {
  // integer_list: a non-empty list of integers, e.g. per-request sequence lengths. Text form
  // "a,b,c", JSON form [a, b, c]; min and max bound every element. The CLI adds --X and
  // --X-file for it, suites take X (an array) or X_file.
  enum class Kind { integer, boolean, choice, integer_list };
  std::string name;  // flag name without dashes: "b", "rows", "dtype"
  std::string help;
  Kind kind = Kind::integer;
  std::string default_value;  // as text: "128", "false", "bf16"; "" for an integer_list: unset
  std::int64_t min = 0;       // integer bounds, inclusive (of each element for integer_list)
  std::int64_t max = INT64_MAX;
  std::vector<std::string> choices;  // for Kind::choice
  // A parameter added after problems were keyed: while it holds its default it stays out of the
  // problem, like an unset list, so the keys (tuning caches, reports) of problems that do not use
  // it stay as they were. Problem::has() says whether it was given a value other than the default.
  bool omit_default = false;
};

using IntegerList = std::vector<std::int64_t>;
using ParamValue = std::variant<std::int64_t, bool, std::string, IntegerList>;

// Lists of at most this many values appear inline in Problem::key(); longer ones as their
// count and a hash (see Problem::key()).
inline constexpr std::size_t kKeyInlineListMax = 16;
// Lists of at most this many values appear inline in reports; longer ones as a summary.
inline constexpr std::size_t kDisplayInlineListMax = 8;

// Text that make_problem parses back to the same value: "128", "true", "bf16", "1,2,3".
[[nodiscard]] std::string param_text(const ParamValue& v);
// Short text for reports: booleans as 1/0, lists of up to kDisplayInlineListMax values inline
// ("[4641,45118,1730]"), longer ones as "[1024 values, mean 4096.5]".
[[nodiscard]] std::string display_text(const ParamValue& v);
// 64-bit FNV-1a of the list's text form "v0,v1,...", the hash in Problem::key(). In Python:
// h = 0xcbf29ce484222325; for c in ",".join(map(str, v)).encode(): h = ((h ^ c) * 0x100000001b3) % 2**64
[[nodiscard]] std::uint64_t list_hash(const IntegerList& v);

class Problem {
 public:
  Problem() = default;
  Problem(std::string family, std::map<std::string, ParamValue> values)
      : family_(std::move(family)), values_(std::move(values)) {}

  [[nodiscard]] const std::string& family() const noexcept { return family_; }
  [[nodiscard]] std::int64_t integer(const std::string& name) const;
  [[nodiscard]] bool boolean(const std::string& name) const;
  [[nodiscard]] const std::string& choice(const std::string& name) const;
  // An integer_list parameter; empty when it is not set (an unset list is not in values()).
  [[nodiscard]] const IntegerList& integers(const std::string& name) const;
  [[nodiscard]] bool has(const std::string& name) const { return values_.count(name) > 0; }
  [[nodiscard]] const std::map<std::string, ParamValue>& values() const noexcept { return values_; }
  // Stable key for caches and reports: "b=128,causal=0,dtype=bf16,..." (sorted by name). A list
  // of up to kKeyInlineListMax values is written inline, "lens=[4641,45118,1730,1696]"; a longer
  // one as its count and list_hash() in hex, "lens=[n=1024,fnv1a=0123456789abcdef]". Unset lists
  // are left out, so problems that do not use a list keep the keys they had before it existed.
  [[nodiscard]] std::string key() const;
  // key() with lists in display_text() form, for people: "b=4,lens=[4641,45118,1730,1696],..."
  // or "b=1024,lens=[1024 values, mean 4096.5],...".
  [[nodiscard]] std::string display() const;
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
// the parameter (and for a list the element: "lens[2] = -5 is negative"). A list parameter
// takes "a,b,c" as text and an array of integers (or that text) as JSON; an empty list is an
// error.
[[nodiscard]] Problem make_problem(const Family& family, const std::map<std::string, std::string>& given);
[[nodiscard]] Problem make_problem(const Family& family, const nlohmann::json& given);
// Braced text values, e.g. make_problem(f, {{"n", "1000"}, {"dtype", "bf16"}}): without this the
// call would be ambiguous between the two above.
[[nodiscard]] inline Problem make_problem(const Family& family,
                                          std::initializer_list<std::pair<const std::string, std::string>> given) {
  return make_problem(family, std::map<std::string, std::string>(given));
}

// Reads the integers of a list file: separated by commas, spaces or newlines; '#' starts a
// comment that runs to the end of the line. Throws UsageError naming the file: unreadable,
// no integers at all, or a token that is not an integer ("lens.txt:3: 'abc' is not an integer").
[[nodiscard]] IntegerList read_integer_list_file(const std::string& path);

}  // namespace cutelab
