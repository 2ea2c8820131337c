// Host tests of the GEMM family (no GPU): problem parsing and bounds, the cost model, the tile
// order of the persistent kernels, and every design's config validation on made-up devices.

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <utility>

#include "baseline/gemm/cublas/cublas_v1/config.hpp"
#include "cute/gemm/tensorop_sm80/tensorop_sm80_v1/config.hpp"
#include "cute/gemm/wgmma_tma_sm90/wgmma_tma_sm90_v1/config.hpp"
#include "cute/gemm/wgmma_tma_sm90/wgmma_tma_sm90_v2/config.hpp"
#include "cute/gemm/wgmma_tma_sm90/wgmma_tma_sm90_v3/config.hpp"
#include "cutelab/core/error.hpp"
#include "cutlass/gemm/collective_sm90/collective_sm90_v1/config.hpp"
#include "gemm/common/problem.hpp"
#include "gemm/common/tile_order.hpp"

namespace cutelab::gemm {
namespace {

DeviceInfo fake_device(int major, int minor, std::size_t smem_optin) {
  DeviceInfo d;
  d.present = true;
  d.name = "fake";
  d.cc_major = major;
  d.cc_minor = minor;
  d.sm_count = 100;
  d.smem_per_block_optin = smem_optin;
  d.smem_per_sm = smem_optin + 1024;
  return d;
}
const DeviceInfo kHopper = fake_device(9, 0, 232448);
const DeviceInfo kAmpere = fake_device(8, 0, 166912);
const DeviceInfo kSmallSmem = fake_device(12, 0, 101376);  // consumer Blackwell: ~99 KiB per block
const DeviceInfo kVolta = fake_device(7, 0, 98304);

GemmProblem problem(int m, int n, int k, Epilogue e = Epilogue::none) {
  GemmProblem p;
  p.m = m;
  p.n = n;
  p.k = k;
  p.epilogue = e;
  return p;
}

bool contains(const std::optional<std::string>& why, const std::string& part) {
  return why && why->find(part) != std::string::npos;
}

TEST(GemmProblemTest, ParsesFlagsAndRoundTrips) {
  const Problem prob = make_problem(GemmProblem::family(),
                                    std::map<std::string, std::string>{{"m", "129"}, {"n", "257"}, {"k", "64"},
                                                                       {"epilogue", "bias_gelu"}});
  const GemmProblem g = GemmProblem::from(prob);
  EXPECT_EQ(g.m, 129);
  EXPECT_EQ(g.n, 257);
  EXPECT_EQ(g.k, 64);
  EXPECT_EQ(g.epilogue, Epilogue::bias_gelu);
  EXPECT_EQ(g.layout, OperandLayout::tn);
  EXPECT_EQ(GemmProblem::from(g.to_problem()).k, 64);
  EXPECT_EQ(g.to_problem().key(), prob.key());
}

TEST(GemmProblemTest, RejectsSizesOutsideTheFamilyRange) {
  const Family& f = GemmProblem::family();
  EXPECT_THROW((void)make_problem(f, std::map<std::string, std::string>{{"m", "0"}}), UsageError);
  EXPECT_THROW((void)make_problem(f, std::map<std::string, std::string>{{"k", "65537"}}), UsageError);
  EXPECT_THROW((void)make_problem(f, std::map<std::string, std::string>{{"epilogue", "relu"}}), UsageError);
  EXPECT_THROW((void)GemmProblem::from(Problem("rmsnorm", {})), UsageError);
}

TEST(GemmProblemTest, CostCountsEveryOperandOnce) {
  const Cost c = gemm_cost(problem(64, 7168, 2048));
  EXPECT_DOUBLE_EQ(c.flops, 2.0 * 64 * 7168 * 2048);
  EXPECT_DOUBLE_EQ(c.bytes, 2.0 * (64.0 * 2048 + 7168.0 * 2048 + 64.0 * 7168));
  const Cost b = gemm_cost(problem(64, 7168, 2048, Epilogue::bias_gelu));
  EXPECT_DOUBLE_EQ(b.bytes - c.bytes, 2.0 * 7168);  // the bias vector, read once
  EXPECT_DOUBLE_EQ(b.flops, c.flops);
}

TEST(GemmProblemTest, ToleranceIsTheBf16OneOfMeasureMd) {
  const Tolerance t = gemm_tolerance(problem(8, 8, 8));
  EXPECT_GT(t.max_rel_l2, 0.0);
  EXPECT_LT(t.max_rel_l2, 1e-2);  // "well under 1e-2"
  EXPECT_LE(t.rtol, 1e-2);
}

TEST(TileOrderTest, EveryTileExactlyOnceForEveryRasterAndBand) {
  for (const auto& [tm, tn] : std::vector<std::pair<int, int>>{{1, 1}, {1, 7}, {7, 1}, {64, 32}, {9, 13}, {5, 3}}) {
    for (Raster r : {Raster::along_n, Raster::along_m}) {
      for (int band : {1, 2, 4, 8, 16}) {
        const TileOrder order{tm, tn, band, r};
        std::set<std::pair<int, int>> seen;
        for (int t = 0; t < order.num_tiles(); ++t) {
          const TileCoord c = order.at(t);
          ASSERT_GE(c.m, 0);
          ASSERT_LT(c.m, tm);
          ASSERT_GE(c.n, 0);
          ASSERT_LT(c.n, tn);
          seen.insert({c.m, c.n});
        }
        EXPECT_EQ(int(seen.size()), tm * tn) << tm << "x" << tn << " band " << band;
      }
    }
  }
}

TEST(TileOrderTest, ConsecutiveTilesStayInsideOneBand) {
  const TileOrder order{64, 32, 8, Raster::along_n};
  for (int t = 0; t < 8 * 32; ++t) EXPECT_LT(order.at(t).m, 8);  // the first band: tile rows 0..7
  EXPECT_EQ(order.at(0).n, 0);
  EXPECT_EQ(order.at(8).n, 1);  // one step along N after the band's 8 rows
}

TEST(GemmConfigTest, Sm80KernelNeedsAmpereKMultipleOf8AndItsSharedMemory) {
  using tensorop_sm80_v1::Config;
  const Config c = Config::of<tensorop_sm80_v1::Tile128x128>();
  EXPECT_FALSE(c.validate(problem(129, 257, 64), kAmpere));
  EXPECT_FALSE(c.validate(problem(129, 257, 64), kHopper));
  EXPECT_TRUE(contains(c.validate(problem(128, 128, 100), kAmpere), "multiple of 8"));
  EXPECT_TRUE(contains(c.validate(problem(128, 128, 64), kVolta), "sm_80"));
  EXPECT_TRUE(contains(c.validate(problem(128, 128, 64), kSmallSmem), "shared memory"));
}

TEST(GemmConfigTest, HopperKernelsNeedSm90aAndTmaAlignment) {
  const GemmProblem ok = problem(1000, 1000, 1000);
  const GemmProblem odd_k = problem(1000, 1000, 1001);
  const auto v1 = wgmma_tma_sm90_v1::Config::of<wgmma_tma_sm90_v1::Tile128x256>();
  const auto v2 = wgmma_tma_sm90_v2::Config::of<wgmma_tma_sm90_v2::Tile128x256>(Raster::along_n, 8);
  const auto v3 = wgmma_tma_sm90_v3::Config::of<wgmma_tma_sm90_v3::Tile128x256C2x1>(Raster::along_n, 4);
  for (const auto& why : {v1.validate(ok, kHopper), v2.validate(ok, kHopper), v3.validate(ok, kHopper)})
    EXPECT_FALSE(why) << *why;
  for (const auto& why : {v1.validate(ok, kAmpere), v2.validate(ok, kAmpere), v3.validate(ok, kAmpere)})
    EXPECT_TRUE(contains(why, "sm_90a"));
  for (const auto& why : {v1.validate(odd_k, kHopper), v2.validate(odd_k, kHopper), v3.validate(odd_k, kHopper)})
    EXPECT_TRUE(contains(why, "multiple of 8"));
  // A Hopper part with less shared memory per block than the 4-stage ring needs.
  const DeviceInfo small = fake_device(9, 0, 160 * 1024);
  for (const auto& why : {v1.validate(ok, small), v2.validate(ok, small), v3.validate(ok, small)})
    EXPECT_TRUE(contains(why, "shared memory"));
}

TEST(GemmConfigTest, EveryConfigNameIsUniqueWithinItsDesign) {
  std::set<std::string> names;
  for (const auto& n : wgmma_tma_sm90_v2::Tiles::names()) EXPECT_TRUE(names.insert(n).second) << n;
  names.clear();
  for (const auto& n : wgmma_tma_sm90_v3::Tiles::names()) EXPECT_TRUE(names.insert(n).second) << n;
}

TEST(GemmConfigTest, CutlassVariantsMatchTheirEpilogueAndTmaStoreAlignment) {
  using namespace collective_sm90_v1;
  const Config plain = Config::of<CoopM128N256C2>(1);
  const Config fused = Config::of<CoopM128N256C2BiasGelu>(1);
  EXPECT_FALSE(plain.validate(problem(4096, 4096, 4096), kHopper));
  EXPECT_FALSE(fused.validate(problem(4096, 4096, 4096, Epilogue::bias_gelu), kHopper));
  EXPECT_TRUE(contains(plain.validate(problem(4096, 4096, 4096, Epilogue::bias_gelu), kHopper), "epilogue"));
  EXPECT_TRUE(contains(fused.validate(problem(4096, 4096, 4096), kHopper), "epilogue"));
  EXPECT_TRUE(contains(plain.validate(problem(129, 257, 64), kHopper), "n (257)"));
  EXPECT_TRUE(contains(plain.validate(problem(128, 256, 1001), kHopper), "multiple of 8"));
  EXPECT_TRUE(contains(plain.validate(problem(128, 256, 64), kAmpere), "sm_90a"));
}

TEST(GemmConfigTest, CublasNeedsATensorCoreBf16Gpu) {
  const cublas_v1::Config c;
  EXPECT_FALSE(c.validate(problem(7, 9, 13), kAmpere));  // cuBLAS takes any size
  EXPECT_TRUE(contains(c.validate(problem(7, 9, 13), kVolta), "sm_80"));
}

}  // namespace
}  // namespace cutelab::gemm
