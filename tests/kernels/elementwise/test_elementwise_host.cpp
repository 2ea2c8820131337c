// Host tests of the elementwise family: problem parameters and bounds, the cost model, the
// fp64 formula, and config validation against a made-up device.

#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <string>

#include "baseline/elementwise/scalar/scalar_v1/config.hpp"
#include "cute/elementwise/gelu_affine/gelu_affine_v1/config.hpp"
#include "cutelab/core/error.hpp"
#include "elementwise/common/problem.hpp"

namespace cutelab::elementwise {
namespace {

Problem make(const std::map<std::string, std::string>& given) {
  return make_problem(ElementwiseProblem::family(), given);
}

DeviceInfo fake_device(int max_threads_per_block) {
  DeviceInfo dev;
  dev.present = true;
  dev.name = "fake";
  dev.cc_major = 9;
  dev.sm_count = 4;
  dev.max_threads_per_block = max_threads_per_block;
  dev.max_threads_per_sm = 2048;
  return dev;
}

TEST(ElementwiseProblemTest, DefaultsAre256MiBOfBf16) {
  const ElementwiseProblem p = ElementwiseProblem::from(make({}));
  EXPECT_EQ(p.n, std::int64_t{1} << 27);
  EXPECT_EQ(p.dtype, DType::bf16);
  EXPECT_EQ(static_cast<double>(p.n) * dtype_size(p.dtype), 256.0 * 1024 * 1024);
}

TEST(ElementwiseProblemTest, FamilyDeclaresEveryParameterWithHelp) {
  const Family& f = ElementwiseProblem::family();
  EXPECT_EQ(f.name, "elementwise");
  ASSERT_NE(f.find("n"), nullptr);
  ASSERT_NE(f.find("dtype"), nullptr);
  for (const ParamSpec& s : f.params) EXPECT_FALSE(s.help.empty()) << s.name;
  EXPECT_EQ(f.find("n")->min, 1);
  EXPECT_EQ(f.find("n")->max, kMaxElements);
}

TEST(ElementwiseProblemTest, SanitizeProblemParsesAndHasATail) {
  const ElementwiseProblem p = ElementwiseProblem::from(make(ElementwiseProblem::family().sanitize_problem));
  EXPECT_EQ(p.n, 100003);
  EXPECT_NE(p.n % 8, 0);
}

TEST(ElementwiseProblemTest, BoundsAreEnforcedNamingTheParameter) {
  EXPECT_EQ(ElementwiseProblem::from(make({{"n", "1"}})).n, 1);
  EXPECT_EQ(ElementwiseProblem::from(make({{"n", "17179869184"}})).n, kMaxElements);
  for (const char* bad : {"0", "-5", "17179869185", "12x", ""}) {
    try {
      (void)make({{"n", bad}});
      ADD_FAILURE() << "n=" << bad << " was accepted";
    } catch (const UsageError& e) {
      EXPECT_NE(e.message().find("'n'"), std::string::npos) << e.message();
    }
  }
  EXPECT_THROW((void)make({{"dtype", "f16"}}), UsageError);
  EXPECT_THROW((void)make({{"m", "4"}}), UsageError);
}

TEST(ElementwiseProblemTest, FromRejectsOutOfRangeValuesBuiltDirectly) {
  // A Problem built without make_problem (a test, another tool) still meets the family's bounds.
  const Problem too_big("elementwise",
                        {{"n", ParamValue{kMaxElements + 1}}, {"dtype", ParamValue{std::string("bf16")}}});
  try {
    (void)ElementwiseProblem::from(too_big);
    ADD_FAILURE() << "n = 2^34 + 1 was accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(e.message().find("n must be"), std::string::npos) << e.message();
  }
  const Problem wrong_family(
      "rmsnorm", {{"n", ParamValue{std::int64_t{8}}}, {"dtype", ParamValue{std::string("bf16")}}});
  EXPECT_THROW((void)ElementwiseProblem::from(wrong_family), UsageError);
}

TEST(ElementwiseCostTest, ReadsAndWritesEachElementOnce) {
  ElementwiseProblem p;
  p.n = 1000;
  const Cost c = elementwise_cost(p);
  EXPECT_DOUBLE_EQ(c.bytes, 2.0 * 1000 + 2.0 * 1000);
  EXPECT_DOUBLE_EQ(c.flops, 11.0 * 1000);
  p.n = kMaxElements;
  EXPECT_DOUBLE_EQ(elementwise_cost(p).bytes, 4.0 * static_cast<double>(kMaxElements));
}

TEST(ElementwiseFormulaTest, GeluTanhValuesAndLimits) {
  // 0.5 * 1 * (1 + tanh(sqrt(2/pi) * 1.044715)) = 0.841191990...
  EXPECT_NEAR(gelu_affine_host(1.0), 0.8411919906082768 * kAlpha + kBeta, 1e-12);
  EXPECT_DOUBLE_EQ(gelu_affine_host(0.0), static_cast<double>(kBeta));
  EXPECT_NEAR(gelu_affine_host(20.0), 20.0 * kAlpha + kBeta, 1e-9);
  EXPECT_NEAR(gelu_affine_host(-20.0), static_cast<double>(kBeta), 1e-9);
  // gelu(-x) = gelu(x) - x for the tanh form.
  for (double x : {0.3, 1.7, 3.1}) {
    const double gx = (gelu_affine_host(x) - kBeta) / kAlpha;
    const double gmx = (gelu_affine_host(-x) - kBeta) / kAlpha;
    EXPECT_NEAR(gmx, gx - x, 1e-12) << x;
  }
}

TEST(ElementwiseToleranceTest, Bf16ToleranceIsAboveRoundingAndWellUnderOnePercentL2) {
  const Tolerance t = elementwise_tolerance(DType::bf16);
  EXPECT_GT(t.rtol, std::ldexp(1.0, -8));  // one bf16 rounding must pass
  EXPECT_LE(t.rtol, 1e-2);
  EXPECT_LT(t.max_rel_l2, 1e-2);
  EXPECT_THROW((void)elementwise_tolerance(DType::f32), UsageError);
}

TEST(GeluAffineV1ConfigTest, NamesAreUniqueAndEveryConfigIsCompiled) {
  std::set<std::string> names;
  for (const gelu_affine_v1::Config& c : gelu_affine_v1::all_configs()) {
    EXPECT_TRUE(c.compiled()) << c.name();
    EXPECT_TRUE(names.insert(c.name()).second) << "duplicate " << c.name();
    EXPECT_EQ(c.to_json().at("tile_elems").get<int>(), c.threads * c.vecs * 8);
  }
  EXPECT_EQ(names.size(), 18u);
  EXPECT_EQ(gelu_affine_v1::all_configs().front().name(), "t256_v4_persistent");  // the untuned default
  EXPECT_TRUE(names.count("t256_v4_persistent"));
  EXPECT_TRUE(names.count("t128_v1_tiles"));
}

TEST(GeluAffineV1ConfigTest, ValidateRefusesBlocksLargerThanTheDeviceAllows) {
  ElementwiseProblem p;
  p.n = 1000003;
  const DeviceInfo small = fake_device(256);
  int refused = 0;
  for (const gelu_affine_v1::Config& c : gelu_affine_v1::all_configs()) {
    const auto why = c.validate(p, small);
    if (c.threads > 256) {
      ASSERT_TRUE(why.has_value()) << c.name();
      EXPECT_NE(why->find("max_threads_per_block (256)"), std::string::npos) << *why;
      ++refused;
    } else {
      EXPECT_FALSE(why.has_value()) << c.name() << ": " << *why;
    }
  }
  EXPECT_EQ(refused, 6);  // t512 x {v1, v2, v4} x {persistent, tiles}
  const gelu_affine_v1::Config not_compiled{384, 2, gelu_affine_v1::GridMode::tiles};
  ASSERT_TRUE(not_compiled.validate(p, fake_device(1024)).has_value());
  EXPECT_NE(not_compiled.validate(p, fake_device(1024))->find("not compiled"), std::string::npos);
}

TEST(ScalarV1ConfigTest, ValidateRefusesLargeBlocksOnASmallDevice) {
  ElementwiseProblem p;
  p.n = 7;
  for (const scalar_v1::Config& c : scalar_v1::all_configs()) {
    EXPECT_FALSE(c.validate(p, fake_device(1024)).has_value()) << c.name();
    EXPECT_EQ(c.validate(p, fake_device(128)).has_value(), c.threads > 128) << c.name();
  }
}

}  // namespace
}  // namespace cutelab::elementwise
