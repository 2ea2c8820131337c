// Host tests of the rmsnorm family: problem parameters and bounds, the cost model, and config
// validation (rows that do not fit a config's registers, blocks too large for a device).

#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <string>

#include "baseline/rmsnorm/naive/naive_v1/config.hpp"
#include "cute/rmsnorm/rowwise/rowwise_v1/config.hpp"
#include "cutelab/core/error.hpp"
#include "rmsnorm/common/problem.hpp"

namespace cutelab::rmsnorm {
namespace {

Problem make(const std::map<std::string, std::string>& given) {
  return make_problem(RmsNormProblem::family(), given);
}

DeviceInfo fake_device(int max_threads_per_block) {
  DeviceInfo dev;
  dev.present = true;
  dev.name = "fake";
  dev.cc_major = 9;
  dev.sm_count = 4;
  dev.max_threads_per_block = max_threads_per_block;
  return dev;
}

RmsNormProblem shape(std::int64_t rows, int cols) {
  RmsNormProblem p;
  p.rows = rows;
  p.cols = cols;
  return p;
}

TEST(RmsNormProblemTest, DefaultsAreTheIssueShape) {
  const RmsNormProblem p = RmsNormProblem::from(make({}));
  EXPECT_EQ(p.rows, 16384);
  EXPECT_EQ(p.cols, 8192);
  EXPECT_EQ(p.dtype, DType::bf16);
}

TEST(RmsNormProblemTest, SanitizeProblemParsesAndMasksPartOfEveryRowTile) {
  const RmsNormProblem p = RmsNormProblem::from(make(RmsNormProblem::family().sanitize_problem));
  EXPECT_EQ(p.rows, 37);
  EXPECT_EQ(p.cols, 1000);
  EXPECT_NE(p.rows % 4, 0);  // the last warp-per-row block is partly empty
  for (const rowwise_v1::Config& c : rowwise_v1::all_configs()) EXPECT_NE(c.max_cols(), p.cols) << c.name();
}

TEST(RmsNormProblemTest, BoundsAreEnforcedNamingTheParameter) {
  EXPECT_EQ(RmsNormProblem::from(make({{"cols", "65536"}})).cols, 65536);
  EXPECT_EQ(RmsNormProblem::from(make({{"cols", "1"}, {"rows", "1"}})).rows, 1);
  for (const auto& [name, bad] : std::vector<std::pair<std::string, std::string>>{{"cols", "0"},
                                                                                  {"cols", "65537"},
                                                                                  {"rows", "0"},
                                                                                  {"rows", "-3"},
                                                                                  {"rows", "2147483648"},
                                                                                  {"cols", "8k"}}) {
    try {
      (void)make({{name, bad}});
      ADD_FAILURE() << name << "=" << bad << " was accepted";
    } catch (const UsageError& e) {
      EXPECT_NE(e.message().find("'" + name + "'"), std::string::npos) << e.message();
    }
  }
  EXPECT_THROW((void)make({{"dtype", "f32"}}), UsageError);
}

TEST(RmsNormProblemTest, FromRejectsMoreThan2To34Elements) {
  // 2^19 rows of 2^16 columns is 2^35 elements: each parameter is in range, the product is not.
  try {
    (void)RmsNormProblem::from(make({{"rows", "524288"}, {"cols", "65536"}}));
    ADD_FAILURE() << "2^35 elements were accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(e.message().find("rows * cols"), std::string::npos) << e.message();
  }
  EXPECT_NO_THROW((void)RmsNormProblem::from(make({{"rows", "262144"}, {"cols", "65536"}})));  // exactly 2^34
  const Problem direct("rmsnorm", {{"rows", ParamValue{std::int64_t{4}}},
                                   {"cols", ParamValue{std::int64_t{70000}}},
                                   {"dtype", ParamValue{std::string("bf16")}}});
  try {
    (void)RmsNormProblem::from(direct);
    ADD_FAILURE() << "cols = 70000 was accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(e.message().find("cols must be"), std::string::npos) << e.message();
  }
}

TEST(RmsNormCostTest, ReadsXAndWOnceAndWritesYOnce) {
  const Cost c = rmsnorm_cost(shape(16384, 8192));
  EXPECT_DOUBLE_EQ(c.bytes, 2.0 * 16384 * 8192 * 2 + 2.0 * 8192);
  EXPECT_DOUBLE_EQ(c.flops, 4.0 * 16384 * 8192);
  const Cost one = rmsnorm_cost(shape(1, 1));
  EXPECT_DOUBLE_EQ(one.bytes, 6.0);
}

TEST(RmsNormToleranceTest, Bf16ToleranceIsAboveRoundingAndWellUnderOnePercentL2) {
  const Tolerance t = rmsnorm_tolerance(DType::bf16);
  EXPECT_GT(t.rtol, std::ldexp(1.0, -8));
  EXPECT_LE(t.rtol, 1e-2);
  EXPECT_LT(t.max_rel_l2, 1e-2);
}

TEST(RowwiseV1ConfigTest, NamesAreUniqueAndEveryConfigIsCompiled) {
  std::set<std::string> names;
  for (const rowwise_v1::Config& c : rowwise_v1::all_configs()) {
    EXPECT_TRUE(c.compiled()) << c.name();
    EXPECT_TRUE(names.insert(c.name()).second) << "duplicate " << c.name();
    EXPECT_LE(c.block_threads(), 1024) << c.name();
  }
  EXPECT_EQ(names.size(), rowwise_v1::kCompiled.size());
  EXPECT_TRUE(names.count("t256_v4"));
  EXPECT_TRUE(names.count("t32_v2_r4"));
}

TEST(RowwiseV1ConfigTest, ARowMustFitTheConfigsRegisters) {
  const DeviceInfo dev = fake_device(1024);
  const rowwise_v1::Config t256_v2{256, 2, 1};  // holds 4096 columns
  EXPECT_FALSE(t256_v2.validate(shape(10, 4096), dev).has_value());
  EXPECT_FALSE(t256_v2.validate(shape(10, 4095), dev).has_value());
  const auto why = t256_v2.validate(shape(10, 4104), dev);
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("cols=4104"), std::string::npos) << *why;
  EXPECT_NE(why->find("holds 4096"), std::string::npos) << *why;
}

TEST(RowwiseV1ConfigTest, EverySupportedColsHasAValidConfig) {
  const DeviceInfo dev = fake_device(1024);
  for (int cols : {1, 7, 8, 1000, 4096, 8192, 8200, 32768, 65535, 65536}) {
    int valid = 0;
    for (const rowwise_v1::Config& c : rowwise_v1::all_configs()) valid += !c.validate(shape(3, cols), dev);
    EXPECT_GT(valid, 0) << "cols=" << cols;
  }
  int valid_65536 = 0;
  for (const rowwise_v1::Config& c : rowwise_v1::all_configs())
    valid_65536 += !c.validate(shape(3, 65536), dev);
  EXPECT_EQ(valid_65536, 1);  // only t1024_v8
}

TEST(RowwiseV1ConfigTest, TheFirstValidRankedConfigIsTheNarrowestTileThatHoldsTheRow) {
  const DeviceInfo dev = fake_device(1024);
  auto first_valid = [&](std::int64_t rows, int cols) {
    for (const rowwise_v1::Config& c : rowwise_v1::ranked_configs(shape(rows, cols)))
      if (!c.validate(shape(rows, cols), dev)) return c.name();
    return std::string("none");
  };
  EXPECT_EQ(first_valid(16384, 8192), "t256_v4");
  EXPECT_EQ(first_valid(37, 1000), "t32_v4_r4");  // narrow rows: a warp per row
  EXPECT_EQ(first_valid(3, 8), "t32_v1_r4");
  EXPECT_EQ(first_valid(5, 8200), "t512_v4");  // the next tile up from 8192 is 16384 wide
  EXPECT_EQ(first_valid(2, 65536), "t1024_v8");
  EXPECT_EQ(rowwise_v1::ranked_configs(shape(1, 1)).size(), rowwise_v1::kCompiled.size());
}

TEST(RowwiseV1ConfigTest, ValidateRefusesBlocksLargerThanTheDeviceAllows) {
  const DeviceInfo small = fake_device(512);
  for (const rowwise_v1::Config& c : rowwise_v1::all_configs()) {
    const auto why = c.validate(shape(4, 8), small);
    if (c.block_threads() > 512) {
      ASSERT_TRUE(why.has_value()) << c.name();
      EXPECT_NE(why->find("max_threads_per_block (512)"), std::string::npos) << *why;
    } else {
      EXPECT_FALSE(why.has_value()) << c.name() << ": " << *why;
    }
  }
  const rowwise_v1::Config not_compiled{96, 1, 1};
  EXPECT_TRUE(not_compiled.validate(shape(4, 8), fake_device(1024)).has_value());
}

TEST(NaiveV1ConfigTest, ValidateRefusesLargeBlocksOnASmallDevice) {
  for (const naive_v1::Config& c : naive_v1::all_configs()) {
    EXPECT_FALSE(c.validate(shape(3, 100), fake_device(1024)).has_value()) << c.name();
    EXPECT_EQ(c.validate(shape(3, 100), fake_device(256)).has_value(), c.threads > 256) << c.name();
  }
}

}  // namespace
}  // namespace cutelab::rmsnorm
