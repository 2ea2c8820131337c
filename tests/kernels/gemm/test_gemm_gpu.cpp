// GPU tests of the GEMM family: every config of every design against the reference, on sizes
// that are and are not multiples of the tiles, both epilogues, odd n (unpaired stores), k not a
// multiple of 8 (Hopper and cp.async designs must refuse it with a reason, cuBLAS computes it),
// and the GPU reference against an fp64 CPU GEMM. Skipped, with the reason, without a GPU.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "cutelab/core/dtype.hpp"
#include "cutelab/runtime/device.hpp"
#include "cutelab/runtime/registry.hpp"
#include "gemm/common/problem.hpp"
#include "gemm/common/workspace.hpp"
#include "kernels/common/plan_check.hpp"

namespace cutelab::gemm {
namespace {

constexpr const char* kDesigns[] = {
    "cute/gemm/tensorop_sm80/v1",  "cute/gemm/wgmma_tma_sm90/v1",   "cute/gemm/wgmma_tma_sm90/v2",
    "cute/gemm/wgmma_tma_sm90/v3", "cutlass/gemm/collective_sm90/v1", "baseline/gemm/cublas/v1"};

// Every registered plan of the family (kDesigns is checked separately, so none goes missing).
std::vector<const KernelPlan*> gemm_plans() {
  std::vector<const KernelPlan*> out;
  for (const KernelPlan* p : Registry::instance().all())
    if (p->family().name == "gemm") out.push_back(p);
  return out;
}

TEST(GemmRegistryTest, EveryDesignIsRegistered) {
  for (const char* name : kDesigns) EXPECT_NO_THROW((void)Registry::instance().find(name)) << name;
}

class GemmGpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (cuda_device_count(&why) == 0) GTEST_SKIP() << "no CUDA device: " << why;
    dev_ = query_device(0, DeviceDb::load_default());
  }

  // Every valid config of every design that can run here, on one workspace and one reference.
  // Returns how many (design, config) pairs ran.
  int check_all(int m, int n, int k, Epilogue e, std::uint64_t seed) {
    SCOPED_TRACE("m=" + std::to_string(m) + " n=" + std::to_string(n) + " k=" + std::to_string(k) +
                 " epilogue=" + epilogue_name(e));
    GemmProblem g;
    g.m = m;
    g.n = n;
    g.k = k;
    g.epilogue = e;
    const Problem prob = g.to_problem();
    GemmWorkspace ws(g, seed);
    const std::vector<std::vector<float>> ref = gemm_reference(g, ws);
    int ran = 0;
    for (const KernelPlan* plan : gemm_plans()) {
      if (arch_mismatch(plan->arch(), dev_)) continue;
      ran += testing::check_every_config(*plan, prob, ws, dev_, ref);
    }
    return ran;
  }

  DeviceInfo dev_;
};

TEST_F(GemmGpuTest, SizesThatAreNotMultiplesOfAnyTile) {
  EXPECT_GT(check_all(129, 257, 64, Epilogue::none, 11), 0);
  EXPECT_GT(check_all(129, 257, 64, Epilogue::bias_gelu, 12), 0);
  EXPECT_GT(check_all(1000, 1000, 1000, Epilogue::none, 13), 0);
  EXPECT_GT(check_all(257, 129, 136, Epilogue::bias_gelu, 14), 0);  // k: two 64-slices + 8
}

TEST_F(GemmGpuTest, TinyAndOddShapes) {
  EXPECT_GT(check_all(1, 8, 8, Epilogue::none, 21), 0);            // one row, one 16-byte k vector
  EXPECT_GT(check_all(300, 7, 40, Epilogue::bias_gelu, 22), 0);     // odd n: unpaired column stores
  EXPECT_GT(check_all(64, 1000, 512, Epilogue::none, 23), 0);       // m = 64: the 64-row tile
  EXPECT_GT(check_all(33, 4095, 2056, Epilogue::bias_gelu, 24), 0);  // odd n, long k with a tail
}

TEST_F(GemmGpuTest, LargeSquareAndLlmShapes) {
  EXPECT_GT(check_all(4096, 4096, 4096, Epilogue::none, 31), 0);
  EXPECT_GT(check_all(4096, 4096, 4096, Epilogue::bias_gelu, 32), 0);
  EXPECT_GT(check_all(256, 7168, 2048, Epilogue::none, 33), 0);
  EXPECT_GT(check_all(1024, 2048, 7168, Epilogue::none, 34), 0);
}

TEST_F(GemmGpuTest, KNotAMultipleOf8IsRefusedWithAReasonOrComputed) {
  GemmProblem g;
  g.m = 100;
  g.n = 60;
  g.k = 1001;
  const Problem prob = g.to_problem();
  for (const KernelPlan* p : gemm_plans()) {
    const KernelPlan& plan = *p;
    const std::string name = plan.id().full();
    if (arch_mismatch(plan.arch(), dev_)) continue;
    for (const ConfigDesc& c : plan.configs(prob, dev_)) {
      const auto why = plan.validate(prob, c, dev_);
      if (name.rfind("baseline/", 0) == 0) {
        EXPECT_FALSE(why) << name << " " << c.name << ": " << *why;
      } else {
        ASSERT_TRUE(why) << name << " " << c.name << " accepted k=1001";
        EXPECT_NE(why->find("multiple of 8"), std::string::npos) << *why;
      }
    }
  }
  // cuBLAS computes it, and it must be right.
  GemmWorkspace ws(g, 41);
  const auto ref = gemm_reference(g, ws);
  EXPECT_EQ(testing::check_every_config(Registry::instance().find("baseline/gemm/cublas/v1"), prob, ws, dev_, ref), 1);
}

TEST_F(GemmGpuTest, ReferenceMatchesAnFp64CpuGemm) {
  GemmProblem g;
  g.m = 67;
  g.n = 45;
  g.k = 40;
  g.epilogue = Epilogue::bias_gelu;
  GemmWorkspace ws(g, 51);
  const std::vector<float> gpu = gemm_reference(g, ws)[0];
  const std::vector<float> a = copy_to_host_float(ws.a.view());
  const std::vector<float> b = copy_to_host_float(ws.b.view());
  const std::vector<float> bias = copy_to_host_float(ws.bias.view());
  double max_err = 0;
  for (int i = 0; i < g.m; ++i) {
    for (int j = 0; j < g.n; ++j) {
      double s = 0;
      for (int kk = 0; kk < g.k; ++kk) s += double(a[i * g.k + kk]) * double(b[j * g.k + kk]);
      const double x = s + bias[j];
      const double want = 0.5 * x * (1.0 + std::tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
      max_err = std::max(max_err, std::abs(want - double(gpu[i * g.n + j])));
    }
  }
  EXPECT_LT(max_err, 1e-5);  // fp32 sums of 40 O(1/sqrt(40)) terms, fp32 tanh
}

}  // namespace
}  // namespace cutelab::gemm
