#include "cutelab/runtime/problem.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <numeric>

#include <nlohmann/json.hpp>

#include "cutelab/core/error.hpp"
#include "text.hpp"

namespace cutelab {
namespace {

using detail::join;
using detail::lower;
using detail::trim;

std::string known_params(const Family& family) {
  std::vector<std::string> names;
  for (const ParamSpec& p : family.params) names.push_back(p.name);
  return join(names);
}

enum class IntegerParse { ok, not_an_integer, out_of_range };

// Decimal, optionally signed ("+5" too); nothing else in `text`.
IntegerParse parse_integer(const std::string& text, std::int64_t& v) {
  const char* begin = text.data() + (text.size() > 1 && text[0] == '+' ? 1 : 0);
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(begin, end, v);
  if (ec == std::errc::result_out_of_range) return IntegerParse::out_of_range;
  if (text.empty() || ec != std::errc() || ptr != end) return IntegerParse::not_an_integer;
  return IntegerParse::ok;
}

// Bounds of element i of a list: "lens[2] = -5 is negative".
void check_element(const std::string& where, const ParamSpec& spec, std::size_t i, std::int64_t v) {
  const std::string what = concat(where, ": ", spec.name, "[", i, "] = ", v);
  if (v < spec.min) {
    if (spec.min == 0) throw UsageError(concat(what, " is negative"));
    throw UsageError(concat(what, " is below the minimum ", spec.min));
  }
  if (v > spec.max) throw UsageError(concat(what, " exceeds the maximum ", spec.max));
}

ParamValue parse_value(const Family& family, const ParamSpec& spec, const std::string& text) {
  const std::string where = concat("parameter '", spec.name, "' of ", family.name);
  switch (spec.kind) {
    case ParamSpec::Kind::integer: {
      std::int64_t v = 0;
      const IntegerParse r = parse_integer(text, v);
      if (text.empty() || r == IntegerParse::out_of_range)
        throw UsageError(concat(where, ": expected an integer in [", spec.min, ", ", spec.max, "], got '", text, "'"));
      if (r != IntegerParse::ok) throw UsageError(concat(where, ": expected an integer, got '", text, "'"));
      if (v < spec.min || v > spec.max)
        throw UsageError(concat(where, " must be in [", spec.min, ", ", spec.max, "], got ", v));
      return v;
    }
    case ParamSpec::Kind::integer_list: {
      IntegerList list;
      std::size_t begin = 0;
      for (std::size_t i = 0; begin <= text.size(); ++i) {
        std::size_t end = text.find(',', begin);
        if (end == std::string::npos) end = text.size();
        const std::string token = trim(text.substr(begin, end - begin));
        if (token.empty() && text.find_first_not_of(" \t") == std::string::npos) break;  // no values at all
        if (token.empty())
          throw UsageError(concat(where, ": ", spec.name, "[", i, "] is empty in '", text, "'"));
        std::int64_t v = 0;
        const IntegerParse r = parse_integer(token, v);
        if (r != IntegerParse::ok)
          throw UsageError(concat(where, ": ", spec.name, "[", i, "] = '", token, "' is not an integer",
                                  r == IntegerParse::out_of_range ? " (out of range)" : ""));
        check_element(where, spec, i, v);
        list.push_back(v);
        begin = end + 1;
      }
      if (list.empty())
        throw UsageError(
            concat(where, ": empty list (expected integers separated by commas, e.g. 4096,77,130000)"));
      return list;
    }
    case ParamSpec::Kind::boolean: {
      const std::string t = lower(text);
      if (t == "true" || t == "1") return true;
      if (t == "false" || t == "0") return false;
      throw UsageError(concat(where, ": expected true, false, 1 or 0, got '", text, "'"));
    }
    case ParamSpec::Kind::choice: {
      if (std::find(spec.choices.begin(), spec.choices.end(), text) == spec.choices.end())
        throw UsageError(concat(where, ": expected one of ", join(spec.choices), "; got '", text, "'"));
      return text;
    }
  }
  throw Error(concat(where, ": unknown parameter kind"));
}

const ParamSpec& require_spec(const Family& family, const std::string& name) {
  const ParamSpec* spec = family.find(name);
  if (!spec)
    throw UsageError(concat("unknown parameter '", name, "' for ", family.name, " (known: ", known_params(family), ")"));
  return *spec;
}

Problem build(const Family& family, std::map<std::string, ParamValue> given) {
  for (const ParamSpec& spec : family.params) {
    // An unset list stays out of the problem (and out of its key).
    if (spec.kind == ParamSpec::Kind::integer_list && spec.default_value.empty()) continue;
    ParamValue def;
    try {
      def = parse_value(family, spec, spec.default_value);
    } catch (const UsageError& e) {
      // A bad default is the family's bug, not the user's.
      throw Error(concat("default of ", e.message()));
    }
    const auto it = given.find(spec.name);
    if (spec.omit_default) {
      // Given as its default or not at all: the same problem, with the key it had before the
      // parameter existed.
      if (it != given.end() && it->second == def) given.erase(it);
      continue;
    }
    if (it == given.end()) given.emplace(spec.name, std::move(def));
  }
  return Problem(family.name, std::move(given));
}

// Text for a JSON scalar, so JSON and flags share one parser.
std::string json_text(const Family& family, const ParamSpec& spec, const nlohmann::json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) {
    if (spec.kind == ParamSpec::Kind::boolean) return v.get<bool>() ? "true" : "false";
  } else if (v.is_number_integer()) {
    if (spec.kind != ParamSpec::Kind::choice) return v.dump();
  } else if (v.is_number_float()) {
    const double d = v.get<double>();
    if (spec.kind == ParamSpec::Kind::integer && d == static_cast<double>(static_cast<std::int64_t>(d)))
      return std::to_string(static_cast<std::int64_t>(d));
  }
  throw UsageError(concat("parameter '", spec.name, "' of ", family.name, ": unexpected JSON value ", v.dump()));
}

// A JSON array for a list parameter, element by element (a nested array must not be taken
// apart at its commas).
IntegerList json_list(const Family& family, const ParamSpec& spec, const nlohmann::json& v) {
  const std::string where = concat("parameter '", spec.name, "' of ", family.name);
  if (v.empty()) throw UsageError(concat(where, ": empty list (expected an array of integers)"));
  IntegerList list;
  for (std::size_t i = 0; i < v.size(); ++i) {
    const nlohmann::json& e = v[i];
    std::int64_t x = 0;
    if (e.is_number_integer() && !(e.is_number_unsigned() && e.get<std::uint64_t>() > INT64_MAX)) {
      x = e.get<std::int64_t>();
    } else if (e.is_number_float() && std::fabs(e.get<double>()) < 0x1p62 &&
               e.get<double>() == std::trunc(e.get<double>())) {
      x = static_cast<std::int64_t>(e.get<double>());  // 4096.0: what a JSON writer may make of 4096
    } else {
      throw UsageError(concat(where, ": ", spec.name, "[", i, "] = ", e.dump(), " is not an integer"));
    }
    check_element(where, spec, i, x);
    list.push_back(x);
  }
  return list;
}

const char* kind_name(const ParamValue& v) {
  switch (v.index()) {
    case 0:
      return "an integer";
    case 1:
      return "a boolean";
    case 2:
      return "a choice";
    default:
      return "a list of integers";
  }
}

std::string list_text(const IntegerList& v) {
  std::string out;
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (i) out += ',';
    out += std::to_string(v[i]);
  }
  return out;
}

// "[1,2,3]" (built by appending: GCC 12 warns falsely, -Wrestrict, on "[" + std::string).
std::string bracketed(const IntegerList& v) {
  std::string out = "[";
  out += list_text(v);
  out += ']';
  return out;
}

std::string hex64(std::uint64_t x) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(x));
  return buf;
}

}  // namespace

const ParamSpec* Family::find(const std::string& name) const {
  for (const ParamSpec& p : params)
    if (p.name == name) return &p;
  return nullptr;
}

Problem make_problem(const Family& family, const std::map<std::string, std::string>& given) {
  std::map<std::string, ParamValue> values;
  for (const auto& [name, text] : given) values.emplace(name, parse_value(family, require_spec(family, name), text));
  return build(family, std::move(values));
}

Problem make_problem(const Family& family, const nlohmann::json& given) {
  if (given.is_null()) return build(family, {});
  if (!given.is_object())
    throw UsageError(concat("problem for ", family.name, " must be a JSON object, got ", given.dump()));
  std::map<std::string, ParamValue> values;
  for (const auto& [name, v] : given.items()) {
    const ParamSpec& spec = require_spec(family, name);
    if (spec.kind == ParamSpec::Kind::integer_list && v.is_array()) {
      values.emplace(name, json_list(family, spec, v));
      continue;
    }
    values.emplace(name, parse_value(family, spec, json_text(family, spec, v)));
  }
  return build(family, std::move(values));
}

namespace {
const ParamValue& find_value(const Problem& p, const std::string& name) {
  auto it = p.values().find(name);
  if (it == p.values().end())
    throw Error(concat("problem of family '", p.family(), "' has no parameter '", name, "'"));
  return it->second;
}
}  // namespace

std::int64_t Problem::integer(const std::string& name) const {
  const ParamValue& v = find_value(*this, name);
  if (const auto* i = std::get_if<std::int64_t>(&v)) return *i;
  throw Error(concat("parameter '", name, "' of ", family_, " is ", kind_name(v), ", not an integer"));
}

bool Problem::boolean(const std::string& name) const {
  const ParamValue& v = find_value(*this, name);
  if (const auto* b = std::get_if<bool>(&v)) return *b;
  throw Error(concat("parameter '", name, "' of ", family_, " is ", kind_name(v), ", not a boolean"));
}

const std::string& Problem::choice(const std::string& name) const {
  const ParamValue& v = find_value(*this, name);
  if (const auto* s = std::get_if<std::string>(&v)) return *s;
  throw Error(concat("parameter '", name, "' of ", family_, " is ", kind_name(v), ", not a choice"));
}

const IntegerList& Problem::integers(const std::string& name) const {
  static const IntegerList kUnset;
  auto it = values_.find(name);
  if (it == values_.end()) return kUnset;
  if (const auto* l = std::get_if<IntegerList>(&it->second)) return *l;
  throw Error(concat("parameter '", name, "' of ", family_, " is ", kind_name(it->second),
                     ", not a list of integers"));
}

std::string param_text(const ParamValue& v) {
  switch (v.index()) {
    case 0:
      return std::to_string(std::get<std::int64_t>(v));
    case 1:
      return std::get<bool>(v) ? "true" : "false";
    case 2:
      return std::get<std::string>(v);
    default:
      return list_text(std::get<IntegerList>(v));
  }
}

std::string display_text(const ParamValue& v) {
  if (const auto* b = std::get_if<bool>(&v)) return *b ? "1" : "0";
  const auto* l = std::get_if<IntegerList>(&v);
  if (!l) return param_text(v);
  if (l->size() <= kDisplayInlineListMax) return bracketed(*l);
  const double mean = std::accumulate(l->begin(), l->end(), 0.0) / static_cast<double>(l->size());
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1f", mean);
  std::string m = buf;
  if (m.size() > 2 && m.compare(m.size() - 2, 2, ".0") == 0) m.resize(m.size() - 2);
  return concat("[", l->size(), " values, mean ", m, "]");
}

std::uint64_t list_hash(const IntegerList& v) {
  std::uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a 64 offset basis
  for (const char c : list_text(v)) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ull;  // FNV-1a 64 prime
  }
  return h;
}

namespace {
std::string joined(const std::map<std::string, ParamValue>& values, std::string (*text)(const ParamValue&)) {
  std::string out;
  for (const auto& [name, v] : values)  // std::map: sorted by name
    out += (out.empty() ? "" : ",") + name + "=" + text(v);
  return out;
}

std::string key_text(const ParamValue& v) {
  const auto* l = std::get_if<IntegerList>(&v);
  if (!l) return display_text(v);  // scalars: the same as for people
  if (l->size() <= kKeyInlineListMax) return bracketed(*l);
  return concat("[n=", l->size(), ",fnv1a=", hex64(list_hash(*l)), "]");
}
}  // namespace

std::string Problem::key() const { return joined(values_, key_text); }

std::string Problem::display() const { return joined(values_, display_text); }

nlohmann::json Problem::to_json() const {
  nlohmann::json params = nlohmann::json::object();
  for (const auto& [name, v] : values_) std::visit([&](const auto& x) { params[name] = x; }, v);
  return {{"family", family_}, {"params", params}, {"key", key()}};
}

IntegerList read_integer_list_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw UsageError(concat(path, ": is a directory, not a list file"));
  std::ifstream in(path);
  if (!in) throw UsageError(concat(path, ": cannot open the file"));
  IntegerList list;
  std::string line;
  for (int line_no = 1; std::getline(in, line); ++line_no) {
    if (const std::size_t hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    for (char& c : line)
      if (c == ',' || std::isspace(static_cast<unsigned char>(c))) c = ' ';
    std::size_t pos = 0;
    while ((pos = line.find_first_not_of(' ', pos)) != std::string::npos) {
      const std::size_t end = std::min(line.find(' ', pos), line.size());
      const std::string token = line.substr(pos, end - pos);
      std::int64_t v = 0;
      const IntegerParse r = parse_integer(token, v);
      if (r != IntegerParse::ok)
        throw UsageError(concat(path, ":", line_no, ": '", token, "' is not an integer",
                                r == IntegerParse::out_of_range ? " (out of range)" : ""));
      list.push_back(v);
      pos = end;
    }
  }
  if (in.bad()) throw UsageError(concat(path, ": read error"));
  if (list.empty()) throw UsageError(concat(path, ": no integers in the file (an empty list)"));
  return list;
}

}  // namespace cutelab
