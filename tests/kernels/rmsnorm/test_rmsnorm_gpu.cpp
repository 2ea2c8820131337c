// GPU tests of the rmsnorm family: every config of every design against the reference, on
// shapes with odd rows and columns (predicated vectors, the scalar path), on unaligned
// pointers, and the GPU reference against the fp64 CPU loop. Skipped, with the reason, when
// there is no GPU.

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <utility>

#include "cutelab/runtime/device.hpp"
#include "cutelab/runtime/registry.hpp"
#include "cutelab/runtime/tuner.hpp"
#include "kernels/common/plan_check.hpp"
#include "rmsnorm/common/problem.hpp"
#include "rmsnorm/common/workspace.hpp"
#include "rmsnorm/reference/reference.hpp"

namespace cutelab::rmsnorm {
namespace {

constexpr const char* kDesigns[] = {"cute/rmsnorm/rowwise/v1", "baseline/rmsnorm/naive/v1"};

class RmsNormGpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (cuda_device_count(&why) == 0) GTEST_SKIP() << "no CUDA device: " << why;
    dev_ = query_device(0, DeviceDb::load_default());
  }

  static Problem problem(std::int64_t rows, int cols) {
    return make_problem(RmsNormProblem::family(),
                        {{"rows", std::to_string(rows)}, {"cols", std::to_string(cols)}, {"dtype", "bf16"}});
  }

  void check_all_designs(std::int64_t rows, int cols, std::uint64_t seed, int misalign_elems) {
    SCOPED_TRACE(std::to_string(rows) + "x" + std::to_string(cols) + " seed=" + std::to_string(seed) +
                 " misalign=" + std::to_string(misalign_elems));
    const Problem prob = problem(rows, cols);
    RmsNormWorkspace ws(RmsNormProblem::from(prob), seed, misalign_elems);
    const std::vector<std::vector<float>> ref = {rmsnorm_reference(ws.x(), ws.w())};
    for (const char* name : kDesigns) {
      const KernelPlan& plan = Registry::instance().find(name);
      EXPECT_GT(testing::check_every_config(plan, prob, ws, dev_, ref), 0) << name << ": no config ran";
    }
  }

  DeviceInfo dev_;
};

TEST_F(RmsNormGpuTest, EveryConfigMatchesTheReferenceOnOddShapes) {
  const std::pair<std::int64_t, int> shapes[] = {
      {1, 8},       // one vector
      {3, 1000},    // vectors past the row end masked
      {37, 4096},   // rows not a multiple of the 4-row blocks
      {5, 8200},    // just over 8192: needs the larger row tiles
      {64, 65536},  // the widest row: only t1024_v8 holds it
      {7, 1},       // a single column: scalar path
      {2, 3},       // cols not a multiple of 8: scalar path
      {130, 520},   // many warp-per-row blocks, the last one half empty
      {9, 8191},    // odd and wide: scalar path with many iterations
      {1, 65528},   // the last vector of the widest tile masked
  };
  std::uint64_t seed = 501;
  for (const auto& [rows, cols] : shapes) check_all_designs(rows, cols, seed++, 0);
}

TEST_F(RmsNormGpuTest, UnalignedPointersTakeTheScalarPathAndStayCorrect) {
  std::uint64_t seed = 601;
  for (int misalign : {1, 4})
    for (const auto& [rows, cols] :
         {std::pair<std::int64_t, int>{9, 4096}, std::pair<std::int64_t, int>{5, 1000}})
      check_all_designs(rows, cols, seed++, misalign);
}

TEST_F(RmsNormGpuTest, GpuReferenceMatchesTheFp64CpuLoop) {
  std::uint64_t seed = 701;
  for (const auto& [rows, cols] :
       {std::pair<std::int64_t, int>{37, 1000}, std::pair<std::int64_t, int>{5, 8200},
        std::pair<std::int64_t, int>{2, 65536}}) {
    SCOPED_TRACE(std::to_string(rows) + "x" + std::to_string(cols));
    RmsNormWorkspace ws(RmsNormProblem::from(problem(rows, cols)), seed++);
    const std::vector<float> gpu = rmsnorm_reference(ws.x(), ws.w());
    const std::vector<float> cpu = rmsnorm_reference_cpu(copy_to_host<std::uint16_t>(ws.x()),
                                                         copy_to_host<std::uint16_t>(ws.w()), rows, cols);
    // Both accumulate in fp64 (in different orders) and round once to fp32.
    const CheckResult r = check_output("y_ref", DType::f32, gpu.data(), cpu, Tolerance{1e-7, 1e-6, 1e-6});
    EXPECT_TRUE(r.passed) << testing::describe(r);
  }
}

TEST_F(RmsNormGpuTest, RunKernelChecksTheDefaultDesignEndToEnd) {
  const KernelPlan& plan = Registry::instance().find("rmsnorm");
  EXPECT_EQ(plan.id().full(), "cute/rmsnorm/rowwise/v1");
  RunOptions opt;
  opt.check = true;
  opt.measure = false;
  opt.seed = 801;
  opt.config = "t256_v4";
  const RunResult r = run_kernel(plan, problem(1000, 8192), dev_, opt, std::nullopt);
  ASSERT_EQ(r.status, RunResult::Status::ok) << r.message;
  ASSERT_EQ(r.checks.size(), 1u);
  EXPECT_TRUE(r.checks[0].passed) << testing::describe(r.checks[0]);
  EXPECT_EQ(r.checks[0].unwritten, 0u);
}

}  // namespace
}  // namespace cutelab::rmsnorm
