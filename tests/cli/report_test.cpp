// Report rendering: aligned tables, number formats, and what a run or suite report shows.

#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "cutelab/runtime/report.hpp"

namespace cutelab {
namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

std::size_t code_points(const std::string& s) {
  std::size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

TEST(Table, AlignsColumnsByCodePoint) {
  Table t;
  t.add_column("name", Table::Align::left);
  t.add_column("median µs");
  t.add_row({"a", "1.00"});
  t.add_row({"longer name", "123.45"});
  const std::vector<std::string> lines = lines_of(t.render());
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[0], "name         median µs");
  EXPECT_EQ(lines[1], "-----------  ---------");
  EXPECT_EQ(lines[2], "a                 1.00");
  EXPECT_EQ(lines[3], "longer name     123.45");
  EXPECT_EQ(code_points(lines[0]), code_points(lines[3]));
}

TEST(Table, ShortRowsArePaddedLongRowsRejected) {
  Table t;
  t.add_column("a");
  t.add_column("b");
  t.add_row({"1"});
  EXPECT_THROW(t.add_row({"1", "2", "3"}), Error);
  EXPECT_EQ(lines_of(t.render()).size(), 3u);
}

TEST(Format, Numbers) {
  EXPECT_EQ(format_fixed(3.14159, 2), "3.14");
  EXPECT_EQ(format_fixed(2.0, 0), "2");
  EXPECT_EQ(format_bytes(512), "512 B");
  EXPECT_EQ(format_bytes(1.5 * 1024 * 1024 * 1024), "1.50 GiB");
  EXPECT_EQ(format_bytes(50 * 1024 * 1024), "50.00 MiB");
  EXPECT_EQ(format_percent(0.873), "87.3%");
  EXPECT_EQ(format_percent(1.0), "100.0%");
}

RunResult sample_run(double median_us, bool passed) {
  RunResult r;
  r.kernel = "cute/rmsnorm/rowwise/v1";
  r.problem = Problem("rmsnorm", {{"rows", std::int64_t{16384}}, {"cols", std::int64_t{8192}}});
  r.status = passed ? RunResult::Status::ok : RunResult::Status::check_failed;
  r.config = ConfigDesc{"rows4_vec8", {{"rows", 4}, {"vec", 8}}};
  r.config_source = "tuned";
  CheckResult c;
  c.output = "y";
  c.count = 16384 * 8192;
  c.rel_l2 = passed ? 2.1e-3 : 0.3;
  c.passed = passed;
  c.reason = passed ? "" : "rel L2 0.3 above 5e-3";
  c.tol = {1e-2, 1e-2, 5e-3};
  r.checks = {c};
  TimingStats t;
  t.median_us = median_us;
  t.p10_us = median_us * 0.99;
  t.p90_us = median_us * 1.02;
  t.n = 200;
  t.stop_reason = "converged";
  r.timing = t;
  r.cost = {0.0, 2.0 * 16384 * 8192 * 2};  // 512 MiB: read + write bf16
  Ceilings ceil;
  ceil.copy_gbs = 3000;
  ceil.read_gbs = 3300;
  ceil.gemm_bf16_tflops = 700;
  r.ceilings = ceil;
  FunctionResources f;
  f.name = "rmsnorm_kernel";
  f.registers = 40;
  f.block_threads = 256;
  f.binary_version = 90;
  r.resources = {f};
  return r;
}

TEST(RenderRun, ShowsCheckNumbersAndCeilings) {
  const std::string text = render_run(sample_run(200.0, true));
  EXPECT_NE(text.find("cute/rmsnorm/rowwise/v1"), std::string::npos) << text;
  EXPECT_NE(text.find("cols=8192,rows=16384"), std::string::npos) << text;
  EXPECT_NE(text.find("rows4_vec8 (tuned)"), std::string::npos) << text;
  EXPECT_NE(text.find("PASS"), std::string::npos) << text;
  EXPECT_NE(text.find("2.10e-03"), std::string::npos) << text;
  // 536870912 B in 200 µs = 2684 GB/s = 89.5% of the 3000 GB/s copy ceiling.
  EXPECT_NE(text.find("2684 GB/s"), std::string::npos) << text;
  EXPECT_NE(text.find("89.5% of copy"), std::string::npos) << text;
  EXPECT_NE(text.find("rmsnorm_kernel"), std::string::npos) << text;
  EXPECT_NE(text.find("result: OK"), std::string::npos) << text;
}

TEST(RenderRun, FailedCheckSaysWhy) {
  const std::string text = render_run(sample_run(200.0, false));
  EXPECT_NE(text.find("FAIL"), std::string::npos) << text;
  EXPECT_NE(text.find("rel L2 0.3 above 5e-3"), std::string::npos) << text;
  EXPECT_NE(text.find("CHECK FAILED"), std::string::npos) << text;
}

TEST(RenderRun, SkippedSaysOnlyWhy) {
  RunResult r;
  r.kernel = "cute/mla_decode/paged_sm90/v1";
  r.status = RunResult::Status::skipped;
  r.message = "needs sm_90a, found sm_80";
  const std::string text = render_run(r);
  EXPECT_NE(text.find("skipped: needs sm_90a, found sm_80"), std::string::npos) << text;
  EXPECT_EQ(text.find("time"), std::string::npos) << text;
}

TEST(RenderSuite, ShowsVaryingParametersAnchorsAndNotes) {
  std::vector<RunResult> runs = {sample_run(200.0, true), sample_run(100.0, true)};
  runs[1].problem = Problem("rmsnorm", {{"rows", std::int64_t{4096}}, {"cols", std::int64_t{8192}}});
  RunResult skipped;
  skipped.kernel = "cute/x/y/v1";
  skipped.problem = runs[0].problem;
  skipped.status = RunResult::Status::skipped;
  skipped.message = "needs sm_90a, found sm_80";
  runs.push_back(skipped);
  const std::vector<std::optional<Anchor>> anchors = {Anchor{400.0, "test"}, std::nullopt, std::nullopt};
  const std::string text = render_suite(runs, anchors);
  EXPECT_NE(text.find("all problems: cols=8192"), std::string::npos) << text;
  EXPECT_NE(text.find("rows=4096"), std::string::npos) << text;
  EXPECT_NE(text.find("anchor µs"), std::string::npos) << text;
  EXPECT_NE(text.find("2.00x"), std::string::npos) << text;  // 400 / 200
  EXPECT_NE(text.find("pass 2.10e-03"), std::string::npos) << text;
  EXPECT_NE(text.find("#3 skipped: needs sm_90a, found sm_80"), std::string::npos) << text;
  EXPECT_NE(text.find("89.5%"), std::string::npos) << text;
  // Without anchors there are no anchor columns.
  EXPECT_EQ(render_suite(runs).find("anchor"), std::string::npos);
}

}  // namespace
}  // namespace cutelab
