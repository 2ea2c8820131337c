#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "cutelab/core/error.hpp"
#include "cutelab/runtime/problem.hpp"

namespace cutelab {
namespace {

const Family& toy_family() {
  static const Family f{
      "toy",
      "a family for tests",
      {
          {"rows", "rows", ParamSpec::Kind::integer, "128", 1, 1 << 20, {}},
          {"cols", "columns", ParamSpec::Kind::integer, "4096", 8, 65536, {}},
          {"causal", "causal mask", ParamSpec::Kind::boolean, "false", 0, 0, {}},
          {"dtype", "element type", ParamSpec::Kind::choice, "bf16", 0, 0, {"bf16", "f16"}},
      },
      {{"rows", "4"}, {"cols", "64"}}};
  return f;
}

// Flags as text (a braced list alone would also convert to JSON).
Problem text_problem(const std::map<std::string, std::string>& given) { return make_problem(toy_family(), given); }

template <class F>
std::string usage_error(F&& f) {
  try {
    f();
  } catch (const UsageError& e) {
    return e.message();
  }
  ADD_FAILURE() << "expected a UsageError";
  return {};
}

TEST(Problem, DefaultsFillUnsetParameters) {
  const Problem p = text_problem({{"rows", "7"}});
  EXPECT_EQ(p.family(), "toy");
  EXPECT_EQ(p.integer("rows"), 7);
  EXPECT_EQ(p.integer("cols"), 4096);
  EXPECT_FALSE(p.boolean("causal"));
  EXPECT_EQ(p.choice("dtype"), "bf16");
}

TEST(Problem, BadIntegersAreUsageErrorsNamingTheParameter) {
  for (const char* bad : {"abc", "12x", "", "1.5", " 3", "99999999999999999999999"}) {
    const std::string msg = usage_error([&] { (void)text_problem({{"rows", bad}}); });
    EXPECT_NE(msg.find("'rows'"), std::string::npos) << bad << ": " << msg;
  }
  EXPECT_EQ(text_problem({{"rows", "+5"}}).integer("rows"), 5);
}

TEST(Problem, OutOfRangeSaysTheBounds) {
  const std::string low = usage_error([] { (void)text_problem({{"cols", "4"}}); });
  EXPECT_NE(low.find("'cols'"), std::string::npos) << low;
  EXPECT_NE(low.find("[8, 65536]"), std::string::npos) << low;
  EXPECT_NE(low.find("got 4"), std::string::npos) << low;
  EXPECT_NO_THROW((void)text_problem({{"cols", "8"}}));
  EXPECT_NO_THROW((void)text_problem({{"cols", "65536"}}));
  EXPECT_THROW((void)text_problem({{"cols", "65537"}}), UsageError);
  EXPECT_THROW((void)text_problem({{"rows", "-1"}}), UsageError);
}

TEST(Problem, UnknownParameterListsTheKnownOnes) {
  const std::string msg = usage_error([] { (void)text_problem({{"colz", "8"}}); });
  EXPECT_NE(msg.find("'colz'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("rows, cols, causal, dtype"), std::string::npos) << msg;
}

TEST(Problem, BooleansAndChoices) {
  for (const char* t : {"true", "1", "TRUE"}) EXPECT_TRUE(text_problem({{"causal", t}}).boolean("causal"));
  for (const char* f : {"false", "0"}) EXPECT_FALSE(text_problem({{"causal", f}}).boolean("causal"));
  EXPECT_THROW((void)text_problem({{"causal", "yes please"}}), UsageError);
  EXPECT_EQ(text_problem({{"dtype", "f16"}}).choice("dtype"), "f16");
  const std::string msg = usage_error([] { (void)text_problem({{"dtype", "f32"}}); });
  EXPECT_NE(msg.find("bf16, f16"), std::string::npos) << msg;
}

TEST(Problem, FromJson) {
  const Problem p = make_problem(toy_family(), nlohmann::json{{"rows", 3}, {"causal", true}, {"dtype", "f16"}});
  EXPECT_EQ(p.integer("rows"), 3);
  EXPECT_TRUE(p.boolean("causal"));
  EXPECT_EQ(p.choice("dtype"), "f16");
  EXPECT_EQ(make_problem(toy_family(), nlohmann::json{{"rows", "9"}}).integer("rows"), 9);
  EXPECT_EQ(make_problem(toy_family(), nlohmann::json{{"causal", 1}}).boolean("causal"), true);
  EXPECT_EQ(make_problem(toy_family(), nlohmann::json{{"rows", 64.0}}).integer("rows"), 64);
  EXPECT_THROW((void)make_problem(toy_family(), nlohmann::json{{"rows", 1.5}}), UsageError);
  EXPECT_THROW((void)make_problem(toy_family(), nlohmann::json{{"rows", 0}}), UsageError);
  EXPECT_THROW((void)make_problem(toy_family(), nlohmann::json{{"nope", 1}}), UsageError);
  EXPECT_THROW((void)make_problem(toy_family(), nlohmann::json::array({1, 2})), UsageError);
  EXPECT_EQ(make_problem(toy_family(), nlohmann::json()).integer("rows"), 128);
}

TEST(Problem, KeyIsSortedAndStable) {
  const Problem a = text_problem({{"rows", "7"}, {"causal", "true"}});
  const Problem b = make_problem(toy_family(), nlohmann::json{{"causal", true}, {"rows", 7}});
  EXPECT_EQ(a.key(), "causal=1,cols=4096,dtype=bf16,rows=7");
  EXPECT_EQ(a.key(), b.key());
  EXPECT_NE(a.key(), text_problem({{"rows", "8"}}).key());
  const nlohmann::json j = a.to_json();
  EXPECT_EQ(j.at("params").at("rows"), 7);
  EXPECT_EQ(j.at("params").at("causal"), true);
  EXPECT_EQ(j.at("key"), a.key());
}

TEST(Problem, AccessorsNameTheMissingOrMistypedParameter) {
  const Problem p = make_problem(toy_family(), std::map<std::string, std::string>{});
  try {
    (void)p.integer("depth");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("'depth'"), std::string::npos) << e.message();
  }
  try {
    (void)p.integer("causal");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("'causal'"), std::string::npos) << e.message();
    EXPECT_NE(e.message().find("boolean"), std::string::npos) << e.message();
  }
  EXPECT_THROW((void)p.choice("rows"), Error);
  EXPECT_THROW((void)p.boolean("dtype"), Error);
}

// A parameter added after problems were keyed (omit_default): at its default it is left out, so
// the keys of problems that do not use it stay the same; another value is kept as any other.
const Family& grown_family() {
  static const Family f = [] {
    Family g = toy_family();
    g.name = "grown";
    ParamSpec kv{"kv-dtype", "cache format", ParamSpec::Kind::choice, "same", 0, 0, {"same", "fp8"}};
    kv.omit_default = true;
    g.params.push_back(kv);
    return g;
  }();
  return f;
}

TEST(Problem, OmittedDefaultKeepsTheKeyItHadBefore) {
  const Problem before = text_problem({{"rows", "7"}});
  const Problem unset = make_problem(grown_family(), {{"rows", "7"}});
  const Problem given = make_problem(grown_family(), {{"rows", "7"}, {"kv-dtype", "same"}});
  EXPECT_EQ(unset.key(), before.key());
  EXPECT_EQ(given.key(), before.key());
  EXPECT_FALSE(given.has("kv-dtype"));
  EXPECT_THROW((void)given.choice("kv-dtype"), Error);  // readers fall back to the default
  const Problem other = make_problem(grown_family(), nlohmann::json{{"rows", 7}, {"kv-dtype", "fp8"}});
  EXPECT_EQ(other.choice("kv-dtype"), "fp8");
  EXPECT_EQ(other.key(), "causal=0,cols=4096,dtype=bf16,kv-dtype=fp8,rows=7");
  EXPECT_EQ(other.to_json().at("params").at("kv-dtype"), "fp8");
  // Its values are still checked.
  const std::string msg = usage_error([] { (void)make_problem(grown_family(), {{"kv-dtype", "fp4"}}); });
  EXPECT_NE(msg.find("'kv-dtype'"), std::string::npos) << msg;
}

// ---- integer_list: per-element bounds, text "a,b,c", JSON arrays, key inline or hashed --------

const Family& list_family() {
  static const Family f{"traces",
                        "a family with a list parameter",
                        {
                            {"b", "requests", ParamSpec::Kind::integer, "4", 1, 1024, {}},
                            {"lens", "lengths", ParamSpec::Kind::integer_list, "", 0, 131072, {}},
                            {"ids", "ids", ParamSpec::Kind::integer_list, "7,8", 1, 99, {}},
                        },
                        {}};
  return f;
}

Problem list_problem(const std::map<std::string, std::string>& given) {
  return make_problem(list_family(), given);
}

TEST(ProblemList, ParsesTextAndKeepsTheValues) {
  const Problem p = list_problem({{"lens", "4641,45118,1730,1696"}});
  EXPECT_TRUE(p.has("lens"));
  EXPECT_EQ(p.integers("lens"), (IntegerList{4641, 45118, 1730, 1696}));
  EXPECT_EQ(list_problem({{"lens", " 5, +6 ,0"}}).integers("lens"), (IntegerList{5, 6, 0}));
  EXPECT_EQ(list_problem({{"lens", "131072"}}).integers("lens"), (IntegerList{131072}));
  // A non-empty default is parsed like a value; an empty one leaves the list unset.
  EXPECT_EQ(p.integers("ids"), (IntegerList{7, 8}));
  const Problem unset = list_problem({});
  EXPECT_FALSE(unset.has("lens"));
  EXPECT_TRUE(unset.integers("lens").empty());
  EXPECT_EQ(unset.values().count("lens"), 0u);
  EXPECT_THROW((void)p.integers("b"), Error);
  EXPECT_THROW((void)p.integer("lens"), Error);
}

TEST(ProblemList, RejectsBadElementsNamingTheElement) {
  struct Bad {
    const char* text;
    const char* message;
  };
  const Bad bad[] = {
      {"1,-5,3", "parameter 'lens' of traces: lens[1] = -5 is negative"},
      {"1,200000", "lens[1] = 200000 exceeds the maximum 131072"},
      {"1,2,x7", "lens[2] = 'x7' is not an integer"},
      {"1.5", "lens[0] = '1.5' is not an integer"},
      {"99999999999999999999", "lens[0] = '99999999999999999999' is not an integer (out of range)"},
      {"1,,2", "lens[1] is empty in '1,,2'"},
      {"1,2,", "lens[2] is empty in '1,2,'"},
      {"", "parameter 'lens' of traces: empty list"},
      {"  ", "empty list"},
  };
  for (const Bad& b : bad) {
    const std::string msg = usage_error([&] { (void)list_problem({{"lens", b.text}}); });
    EXPECT_NE(msg.find(b.message), std::string::npos) << "'" << b.text << "': " << msg;
  }
  const std::string below = usage_error([] { (void)list_problem({{"ids", "5,0"}}); });
  EXPECT_NE(below.find("ids[1] = 0 is below the minimum 1"), std::string::npos) << below;
}

TEST(ProblemList, FromJsonArraysAndText) {
  const nlohmann::json j = {{"lens", {4641, 45118, 1730, 1696}}};
  EXPECT_EQ(make_problem(list_family(), j).integers("lens"), (IntegerList{4641, 45118, 1730, 1696}));
  EXPECT_EQ(make_problem(list_family(), nlohmann::json{{"lens", "3,4"}}).integers("lens"),
            (IntegerList{3, 4}));
  EXPECT_EQ(make_problem(list_family(), nlohmann::json{{"lens", {64.0, 0}}}).integers("lens"),
            (IntegerList{64, 0}));
  auto json_error = [](nlohmann::json v) {
    return usage_error([&] { (void)make_problem(list_family(), nlohmann::json{{"lens", v}}); });
  };
  EXPECT_NE(json_error(nlohmann::json::array()).find("empty list"), std::string::npos);
  EXPECT_NE(json_error({1, -5}).find("lens[1] = -5 is negative"), std::string::npos);
  EXPECT_NE(json_error({1, 2, 131073}).find("lens[2] = 131073 exceeds the maximum 131072"),
            std::string::npos);
  EXPECT_NE(json_error({1, "x"}).find("lens[1] = \"x\" is not an integer"), std::string::npos);
  EXPECT_NE(json_error({1, 2.5}).find("lens[1] = 2.5 is not an integer"), std::string::npos);
  EXPECT_NE(json_error({1, {2, 3}}).find("lens[1] = [2,3] is not an integer"), std::string::npos);
  EXPECT_NE(json_error(true).find("parameter 'lens'"), std::string::npos);
  // A list is no value for a scalar parameter.
  EXPECT_THROW((void)make_problem(list_family(), nlohmann::json{{"b", {1, 2}}}), UsageError);
}

TEST(ProblemList, KeyInlineUpToSixteenValuesThenCountAndHash) {
  const Problem p = list_problem({{"lens", "4641,45118,1730,1696"}});
  EXPECT_EQ(p.key(), "b=4,ids=[7,8],lens=[4641,45118,1730,1696]");
  EXPECT_EQ(p.key(), make_problem(list_family(), nlohmann::json{{"lens", {4641, 45118, 1730, 1696}}}).key());
  // Without the list the key is what it was before lists existed.
  EXPECT_EQ(list_problem({}).key(), "b=4,ids=[7,8]");

  std::string sixteen, seventeen;
  for (int i = 1; i <= 17; ++i) (i <= 16 ? sixteen : seventeen) += (i > 1 ? "," : "") + std::to_string(i);
  seventeen = sixteen + seventeen;
  EXPECT_EQ(list_problem({{"lens", sixteen}}).key(), "b=4,ids=[7,8],lens=[" + sixteen + "]");
  // FNV-1a 64 of "1,2,...,17" (python: see list_hash in problem.hpp).
  EXPECT_EQ(list_problem({{"lens", seventeen}}).key(), "b=4,ids=[7,8],lens=[n=17,fnv1a=85baa91879134e74]");
  // Stable and order-sensitive.
  EXPECT_EQ(list_hash({}), 0xcbf29ce484222325ull);
  EXPECT_EQ(list_hash({1}), 0xaf63ac4c86019afcull);  // FNV-1a 64 of "1"
  EXPECT_NE(list_hash({1, 2}), list_hash({2, 1}));
  EXPECT_NE(list_hash({12}), list_hash({1, 2}));
}

TEST(ProblemList, JsonTextAndDisplay) {
  const Problem p = list_problem({{"lens", "4641,45118,1730,1696"}});
  const nlohmann::json j = p.to_json();
  EXPECT_EQ(j.at("params").at("lens"), nlohmann::json({4641, 45118, 1730, 1696}));
  EXPECT_EQ(j.at("key"), p.key());
  // The JSON goes back to the same problem.
  EXPECT_EQ(make_problem(list_family(), j.at("params")).key(), p.key());
  // param_text goes back through the text parser.
  for (const auto& [name, value] : p.values())
    EXPECT_EQ(list_problem({{name, param_text(value)}}).values().at(name), value) << name;
  EXPECT_EQ(param_text(ParamValue{IntegerList{1, 0, 3}}), "1,0,3");
  EXPECT_EQ(display_text(ParamValue{IntegerList{1, 0, 3}}), "[1,0,3]");
  EXPECT_EQ(display_text(ParamValue{IntegerList{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}}), "[10 values, mean 5.5]");
  EXPECT_EQ(display_text(ParamValue{IntegerList(1000, 4096)}), "[1000 values, mean 4096]");
  EXPECT_EQ(display_text(ParamValue{true}), "1");
  EXPECT_EQ(p.display(), "b=4,ids=[7,8],lens=[4641,45118,1730,1696]");
}

std::string write_temp(const std::string& name, const std::string& text) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("cutelab-problem-test-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / name).string();
  std::ofstream(path) << text;
  return path;
}

TEST(ProblemList, ReadsListFiles) {
  const std::string good = write_temp("good.txt", "# a trace\n4641, 45118\n1730\t1696 # two more\n\n-3,\n");
  EXPECT_EQ(read_integer_list_file(good), (IntegerList{4641, 45118, 1730, 1696, -3}));
  auto file_error = [](const std::string& path) {
    return usage_error([&] { (void)read_integer_list_file(path); });
  };
  const std::string bad = write_temp("bad.txt", "1,2\n3 four 5\n");
  EXPECT_NE(file_error(bad).find(bad + ":2: 'four' is not an integer"), std::string::npos) << file_error(bad);
  const std::string empty = write_temp("empty.txt", "# nothing here\n\n");
  EXPECT_NE(file_error(empty).find("no integers"), std::string::npos) << file_error(empty);
  EXPECT_NE(file_error(good + ".missing").find("cannot open"), std::string::npos);
  std::filesystem::remove_all(std::filesystem::path(good).parent_path());
}

TEST(Error, WhatCarriesFileAndLine) {
  try {
    throw Error("bad thing");
  } catch (const Error& e) {
    EXPECT_EQ(e.message(), "bad thing");
    EXPECT_NE(std::string(e.what()).find("problem_test.cpp:"), std::string::npos) << e.what();
    EXPECT_NE(e.where().find("tests/runtime/problem_test.cpp"), std::string::npos) << e.where();
  }
  const CudaError sticky(cudaErrorIllegalAddress, "kernel");
  EXPECT_TRUE(sticky.sticky());
  EXPECT_NE(std::string(sticky.what()).find("cudaErrorIllegalAddress"), std::string::npos);
  EXPECT_FALSE(CudaError(cudaErrorInvalidValue, "x").sticky());
  EXPECT_TRUE(CudaError(cudaErrorMisalignedAddress, "x").sticky());
  EXPECT_TRUE(CudaError(cudaErrorAssert, "x").sticky());
  EXPECT_FALSE(CudaError(cudaErrorNoKernelImageForDevice, "x").sticky());
  EXPECT_THROW(check_cuda(cudaErrorInvalidValue, "cudaFoo()"), CudaError);
  EXPECT_NO_THROW(check_cuda(cudaSuccess, "cudaFoo()"));
}

}  // namespace
}  // namespace cutelab
