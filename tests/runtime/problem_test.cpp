#include <gtest/gtest.h>

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
