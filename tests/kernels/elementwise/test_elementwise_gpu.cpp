// GPU tests of the elementwise family: every config of every design against the reference,
// on sizes with tails (n not a multiple of 8 or of any tile), on unaligned pointers, and the
// GPU reference against the fp64 CPU formula. Skipped, with the reason, when there is no GPU.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>

#include "cutelab/runtime/device.hpp"
#include "cutelab/runtime/registry.hpp"
#include "cutelab/runtime/tuner.hpp"
#include "elementwise/common/problem.hpp"
#include "elementwise/common/workspace.hpp"
#include "elementwise/reference/reference.hpp"
#include "kernels/common/plan_check.hpp"

namespace cutelab::elementwise {
namespace {

constexpr const char* kDesigns[] = {"cute/elementwise/gelu_affine/v1", "baseline/elementwise/scalar/v1"};

class ElementwiseGpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (cuda_device_count(&why) == 0) GTEST_SKIP() << "no CUDA device: " << why;
    dev_ = query_device(0, DeviceDb::load_default());
  }

  static Problem problem(std::int64_t n) {
    return make_problem(ElementwiseProblem::family(), {{"n", std::to_string(n)}, {"dtype", "bf16"}});
  }

  // Every valid config of every design on one workspace; the reference is computed once.
  void check_all_designs(std::int64_t n, std::uint64_t seed, int misalign_elems) {
    SCOPED_TRACE("n=" + std::to_string(n) + " seed=" + std::to_string(seed) +
                 " misalign=" + std::to_string(misalign_elems));
    const Problem prob = problem(n);
    ElementwiseWorkspace ws(ElementwiseProblem::from(prob), seed, misalign_elems);
    const std::vector<std::vector<float>> ref = {gelu_affine_reference(ws.x())};
    for (const char* name : kDesigns) {
      const KernelPlan& plan = Registry::instance().find(name);
      EXPECT_GT(testing::check_every_config(plan, prob, ws, dev_, ref), 0) << name << ": no config ran";
    }
  }

  DeviceInfo dev_;
};

TEST_F(ElementwiseGpuTest, EveryConfigMatchesTheReferenceOnSizesWithTails) {
  // 1, 7: shorter than one vector; 8, 9: one vector and one past it; 1000003: odd, many tiles;
  // 2^20 + 5: a tail after a whole number of every tile size; 2^20: no tail at all.
  const std::int64_t sizes[] = {1, 7, 8, 9, 1000003, (1 << 20) + 5, 1 << 20};
  std::uint64_t seed = 101;
  for (std::int64_t n : sizes) check_all_designs(n, seed++, 0);
}

TEST_F(ElementwiseGpuTest, UnalignedPointersTakeTheScalarPathAndStayCorrect) {
  std::uint64_t seed = 201;
  for (int misalign : {1, 3, 4})
    for (std::int64_t n : {std::int64_t{9}, std::int64_t{4097}, std::int64_t{1000003}})
      check_all_designs(n, seed++, misalign);
}

TEST_F(ElementwiseGpuTest, GpuReferenceMatchesTheFp64Formula) {
  const ElementwiseProblem p = ElementwiseProblem::from(problem(1000003));
  ElementwiseWorkspace ws(p, 301);
  const std::vector<float> gpu = gelu_affine_reference(ws.x());
  const std::vector<std::uint16_t> x = copy_to_host<std::uint16_t>(ws.x());
  ASSERT_EQ(gpu.size(), x.size());
  std::size_t bad = 0;
  double lo = 0, hi = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double xi = bf16_bits_to_float(x[i]);
    lo = std::min(lo, xi);
    hi = std::max(hi, xi);
    const double want = gelu_affine_host(xi);
    // Both are the same fp64 formula rounded once to fp32 (device tanh within 1 ulp of fp64).
    if (std::abs(gpu[i] - want) > 1e-6 * std::abs(want) + 1e-12) ++bad;
  }
  EXPECT_EQ(bad, 0u);
  EXPECT_LT(lo, -6.0) << "inputs should reach GELU's flat negative side";
  EXPECT_GT(hi, 6.0) << "inputs should reach GELU's linear positive side";
}

TEST_F(ElementwiseGpuTest, RunKernelChecksTheDefaultDesignEndToEnd) {
  const KernelPlan& plan = Registry::instance().find("elementwise");
  EXPECT_EQ(plan.id().full(), "cute/elementwise/gelu_affine/v1");
  RunOptions opt;
  opt.check = true;
  opt.measure = false;
  opt.seed = 401;
  opt.config = "t256_v4_persistent";
  const RunResult r = run_kernel(plan, problem(123457), dev_, opt, std::nullopt);
  ASSERT_EQ(r.status, RunResult::Status::ok) << r.message;
  ASSERT_EQ(r.checks.size(), 1u);
  EXPECT_TRUE(r.checks[0].passed) << testing::describe(r.checks[0]);
  EXPECT_EQ(r.checks[0].unwritten, 0u);
}

}  // namespace
}  // namespace cutelab::elementwise
