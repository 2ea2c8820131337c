#include "cutelab/runtime/problem.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>

#include "cutelab/core/error.hpp"

namespace cutelab {
namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

std::string join(const std::vector<std::string>& items, const char* sep = ", ") {
  std::string out;
  for (const std::string& s : items) out += (out.empty() ? "" : sep) + s;
  return out;
}

std::string known_params(const Family& family) {
  std::vector<std::string> names;
  for (const ParamSpec& p : family.params) names.push_back(p.name);
  return join(names);
}

ParamValue parse_value(const Family& family, const ParamSpec& spec, const std::string& text) {
  const std::string where = concat("parameter '", spec.name, "' of ", family.name);
  switch (spec.kind) {
    case ParamSpec::Kind::integer: {
      std::int64_t v = 0;
      const char* begin = text.data() + (text.size() > 1 && text[0] == '+' ? 1 : 0);
      const char* end = text.data() + text.size();
      const auto [ptr, ec] = std::from_chars(begin, end, v);
      if (text.empty() || ec == std::errc::result_out_of_range)
        throw UsageError(concat(where, ": expected an integer in [", spec.min, ", ", spec.max, "], got '", text, "'"));
      if (ec != std::errc() || ptr != end)
        throw UsageError(concat(where, ": expected an integer, got '", text, "'"));
      if (v < spec.min || v > spec.max)
        throw UsageError(concat(where, " must be in [", spec.min, ", ", spec.max, "], got ", v));
      return v;
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
    if (given.count(spec.name)) continue;
    try {
      given.emplace(spec.name, parse_value(family, spec, spec.default_value));
    } catch (const UsageError& e) {
      // A bad default is the family's bug, not the user's.
      throw Error(concat("default of ", e.message()));
    }
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

const char* kind_name(const ParamValue& v) {
  return std::holds_alternative<std::int64_t>(v) ? "an integer" : std::holds_alternative<bool>(v) ? "a boolean" : "a choice";
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

std::string Problem::key() const {
  std::string key;
  for (const auto& [name, v] : values_) {  // std::map: sorted by name
    key += key.empty() ? "" : ",";
    key += name + "=";
    std::visit(
        [&](const auto& x) {
          using T = std::decay_t<decltype(x)>;
          if constexpr (std::is_same_v<T, bool>) key += x ? "1" : "0";
          else if constexpr (std::is_same_v<T, std::int64_t>) key += std::to_string(x);
          else key += x;
        },
        v);
  }
  return key;
}

nlohmann::json Problem::to_json() const {
  nlohmann::json params = nlohmann::json::object();
  for (const auto& [name, v] : values_) std::visit([&](const auto& x) { params[name] = x; }, v);
  return {{"family", family_}, {"params", params}, {"key", key()}};
}

}  // namespace cutelab
