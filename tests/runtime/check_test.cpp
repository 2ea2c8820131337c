#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include <nlohmann/json.hpp>

#include "cutelab/runtime/check.hpp"

namespace cutelab {
namespace {

CheckResult check_f32(const std::vector<float>& got, const std::vector<float>& ref, Tolerance tol) {
  return check_output("out", DType::f32, got.data(), ref, tol);
}

TEST(Check, ExactMatchPasses) {
  const std::vector<float> ref = {1, -2, 3.5f, 0, 1e-3f};
  const CheckResult r = check_f32(ref, ref, {0, 0, 0});
  EXPECT_TRUE(r.passed) << r.reason;
  EXPECT_EQ(r.count, 5u);
  EXPECT_EQ(r.rel_l2, 0.0);
  EXPECT_EQ(r.max_abs, 0.0);
  EXPECT_EQ(r.mismatches, 0u);
  EXPECT_TRUE(r.reason.empty());
  EXPECT_EQ(r.first_bad, SIZE_MAX);
}

TEST(Check, KnownPerturbationGivesHandComputedRelL2) {
  // ref = (3, 4): ||ref|| = 5. got = (3, 4.5): ||diff|| = 0.5. rel L2 = 0.1 exactly.
  const std::vector<float> ref = {3, 4};
  const std::vector<float> got = {3, 4.5f};
  const CheckResult r = check_f32(got, ref, {1.0, 0, 0.2});
  EXPECT_DOUBLE_EQ(r.rel_l2, 0.1);
  EXPECT_DOUBLE_EQ(r.max_abs, 0.5);
  EXPECT_DOUBLE_EQ(r.max_rel, 0.5 / 4.0);
  EXPECT_TRUE(r.passed) << r.reason;
  // Same data, tighter L2 bound: fails on L2 alone, no element mismatch.
  const CheckResult tight = check_f32(got, ref, {1.0, 0, 0.05});
  EXPECT_FALSE(tight.passed);
  EXPECT_EQ(tight.mismatches, 0u);
  EXPECT_NE(tight.reason.find("relative L2 error"), std::string::npos) << tight.reason;
}

TEST(Check, MismatchCountAtTheAtolRtolBoundary) {
  // atol 0.5 + rtol 0.25 * |ref|; ref 2 -> bound 1.0 exactly (all values exact in binary).
  const Tolerance tol{0.5, 0.25, 0};
  const std::vector<float> ref = {2, 2, 2, -2};
  const std::vector<float> got = {3.0f, 3.0f + 0x1p-20f, 1.0f, -3.5f};  // at, just over, at, over
  const CheckResult r = check_f32(got, ref, tol);
  EXPECT_EQ(r.mismatches, 2u);
  EXPECT_EQ(r.first_bad, 1u);
  EXPECT_FALSE(r.passed);
  EXPECT_NE(r.reason.find("index 1"), std::string::npos) << r.reason;
  EXPECT_NE(r.reason.find("2 of 4"), std::string::npos) << r.reason;
}

TEST(Check, NanWhereReferenceFiniteFails) {
  const std::vector<float> ref = {1, 2, 3};
  const std::vector<float> got = {1, std::numeric_limits<float>::quiet_NaN(), 3};
  const CheckResult r = check_f32(got, ref, {1e9, 1e9, 0});  // no tolerance can excuse it
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.nan_inf, 1u);
  EXPECT_EQ(r.first_bad, 1u);
  EXPECT_NE(r.reason.find("NaN/Inf"), std::string::npos) << r.reason;
  const std::vector<float> inf = {1, 2, std::numeric_limits<float>::infinity()};
  EXPECT_EQ(check_f32(inf, ref, {1e9, 1e9, 0}).nan_inf, 1u);
}

TEST(Check, NonFiniteReferenceMustMatchInKind) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> ref = {inf, -inf, nan, 1};
  EXPECT_TRUE(check_f32({inf, -inf, nan, 1}, ref, {1e-3, 0, 1e-3}).passed);
  const CheckResult finite = check_f32({1e30f, -inf, nan, 1}, ref, {1e-3, 0, 0});
  EXPECT_FALSE(finite.passed);
  EXPECT_EQ(finite.mismatches, 1u);
  EXPECT_EQ(finite.first_bad, 0u);
  EXPECT_FALSE(check_f32({-inf, -inf, nan, 1}, ref, {1e-3, 0, 0}).passed);  // wrong sign
  EXPECT_FALSE(check_f32({inf, -inf, 0, 1}, ref, {1e9, 0, 0}).passed);      // NaN expected
  // The finite elements alone make the L2 error: exact here.
  EXPECT_EQ(check_f32({inf, -inf, nan, 1}, ref, {0, 0, 0}).rel_l2, 0.0);
}

TEST(Check, UnwrittenElementsAreCounted) {
  std::vector<std::uint16_t> got(6, 0x3F80);  // bf16 1.0
  got[2] = static_cast<std::uint16_t>(poison_bits(DType::bf16));
  got[5] = static_cast<std::uint16_t>(poison_bits(DType::bf16));
  const std::vector<float> ref(6, 1.0f);
  const CheckResult r = check_output("y", DType::bf16, got.data(), ref, {1e-2, 1e-2, 1e-2});
  EXPECT_EQ(r.unwritten, 2u);
  EXPECT_EQ(r.nan_inf, 0u);
  EXPECT_EQ(r.first_bad, 2u);
  EXPECT_FALSE(r.passed);
  EXPECT_NE(r.reason.find("never written"), std::string::npos) << r.reason;
  EXPECT_EQ(r.rel_l2, 0.0);  // the written ones are exact
}

TEST(Check, Bf16OutputAgainstFloatReference) {
  // bf16 keeps 8 significant bits: 1/3 comes back with relative error < 2^-9.
  const std::vector<float> ref = {1.0f / 3, -2.0f / 3, 10.0f / 3};
  std::vector<std::uint16_t> got;
  for (float v : ref) got.push_back(float_to_bf16_bits(v));
  const CheckResult r = check_output("y", DType::bf16, got.data(), ref, {0, 0x1p-9, 0x1p-9});
  EXPECT_TRUE(r.passed) << r.reason;
  EXPECT_GT(r.rel_l2, 0.0);
  EXPECT_LT(r.max_rel, 0x1p-9);
  const nlohmann::json j = r.to_json();
  EXPECT_EQ(j.at("passed"), true);
  EXPECT_EQ(j.at("first_bad"), nullptr);
}

}  // namespace
}  // namespace cutelab
