// Report rendering: aligned tables, number formats, and what a run or suite report shows.

#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cutelab/runtime/clocks.hpp"
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

// A tolerance without a relative L2 bound (0: not applied) says so rather than "rel L2 < 0".
TEST(RenderRun, RelativeL2NotAppliedIsNamed) {
  RunResult r = sample_run(200.0, true);
  r.checks[0].tol.max_rel_l2 = 0;
  const std::string text = render_run(r);
  EXPECT_NE(text.find("rel L2 not applied"), std::string::npos) << text;
  EXPECT_EQ(text.find("rel L2 < 0"), std::string::npos) << text;
}

TEST(RenderRun, TuningTableNamesTheRotatingBasis) {
  RunResult r = sample_run(200.0, true);
  ConfigOutcome o;
  o.config = *r.config;
  o.status = ConfigOutcome::Status::ok;
  o.timing = r.timing;
  r.tuning = {o};
  EXPECT_NE(render_run(r).find("tuning (1 configs, * = chosen)\n"), std::string::npos) << render_run(r);
  r.tuning[0].basis = TuneBasis::rotating;
  r.tuning[0].rotating_sets = 4;
  r.tune_basis = TuneBasis::rotating;
  const std::string text = render_run(r);
  EXPECT_NE(text.find("tuning (1 configs, * = chosen, ranked by the rotating figure)"), std::string::npos)
      << text;
  const nlohmann::json j = r.to_json();
  EXPECT_EQ(j.at("tune_basis"), "rotating");
  EXPECT_EQ(j.at("tuning").at(0).at("rotating_sets"), 4);
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

// Each row against the fastest baseline of its own case: baselines of other cases, rows without
// a time and the slower baseline do not count.
TEST(RenderSuite, ComparesEachRowWithTheFastestBaselineOfItsCase) {
  std::vector<RunResult> runs = {sample_run(100.0, true), sample_run(150.0, true), sample_run(300.0, true),
                                 sample_run(50.0, true), sample_run(80.0, true)};
  runs[1].kernel = "baseline/rmsnorm/fast/v1";   // case 0: the best baseline, 150
  runs[2].kernel = "baseline/rmsnorm/naive/v1";  // case 0: slower
  runs[3].kernel = "baseline/rmsnorm/fast/v1";   // case 1's only baseline, 50
  runs[4].timing.reset();                        // case 1: no time, no ratio
  const std::vector<std::size_t> case_of = {0, 0, 0, 1, 1};
  const std::vector<std::optional<double>> v = vs_best_baseline(runs, case_of);
  ASSERT_EQ(v.size(), 5u);
  EXPECT_DOUBLE_EQ(*v[0], 1.5);
  EXPECT_DOUBLE_EQ(*v[1], 1.0);
  EXPECT_DOUBLE_EQ(*v[2], 0.5);
  EXPECT_DOUBLE_EQ(*v[3], 1.0);
  EXPECT_FALSE(v[4].has_value());
  const std::string text = render_suite(runs, std::vector<std::optional<Anchor>>(5), case_of);
  EXPECT_NE(text.find("vs best baseline"), std::string::npos) << text;
  EXPECT_NE(text.find("1.50x"), std::string::npos) << text;
  EXPECT_NE(text.find("0.50x"), std::string::npos) << text;
  // Without baselines in a case there is no such column.
  const std::vector<RunResult> lab_only = {sample_run(100.0, true)};
  EXPECT_EQ(render_suite(lab_only, {std::nullopt}, {0}).find("vs best baseline"), std::string::npos);
}

// A parameter only some rows set (an optional list such as MLA's lens) is not common to all.
TEST(RenderSuite, AParameterSomeRowsLeaveUnsetVaries) {
  std::vector<RunResult> runs = {sample_run(200.0, true), sample_run(100.0, true)};
  runs[1].problem = Problem(
      "rmsnorm",
      {{"rows", std::int64_t{16384}}, {"cols", std::int64_t{8192}}, {"lens", IntegerList{4641, 45118}}});
  const std::string text = render_suite(runs);
  EXPECT_NE(text.find("all problems: cols=8192,rows=16384"), std::string::npos) << text;
  EXPECT_EQ(text.find("all problems: cols=8192,lens"), std::string::npos) << text;
  EXPECT_NE(text.find("lens=[4641,45118]"), std::string::npos) << text;
}

TimingStats stats_at(double median_us, int n = 100) {
  TimingStats t;
  t.median_us = median_us;
  t.p10_us = median_us * 0.99;
  t.p90_us = median_us * 1.02;
  t.n = n;
  t.stop_reason = "converged";
  return t;
}

// A kernel with a setup, timed three ways: setup reused (primary), setup in each call, rotating.
RunResult run_with_every_figure() {
  RunResult r = sample_run(200.0, true);
  r.has_setup = true;
  r.checks_reusing_setup = r.checks;
  r.timing_mode = TimingMode::both;
  r.timing_with_setup = stats_at(250.0);
  RotatingTiming rot;
  rot.sets = 8;
  rot.set_bytes = 64.0 * 1024 * 1024;
  rot.l2_bytes = 50.0 * 1024 * 1024;
  rot.reuses_setup = true;
  rot.stats = stats_at(180.0, 150);
  r.rotating = rot;
  return r;
}

TEST(RenderRun, LabelsEveryFigureAndKeepsRatesOnThePrimary) {
  const std::string text = render_run(run_with_every_figure());
  EXPECT_NE(text.find("setup reused"), std::string::npos) << text;
  EXPECT_NE(text.find("setup in each call"), std::string::npos) << text;
  EXPECT_NE(text.find("rotating K=8"), std::string::npos) << text;
  EXPECT_NE(text.find("250.0"), std::string::npos) << text;
  EXPECT_NE(text.find("180.0"), std::string::npos) << text;
  EXPECT_NE(text.find("8 input sets of 64.00 MiB (512.00 MiB in all, L2 50.00 MiB)"), std::string::npos)
      << text;
  // Rates on the 200 µs primary figure, not on 250 or 180 µs.
  EXPECT_NE(text.find("2684 GB/s"), std::string::npos) << text;
  EXPECT_NE(text.find("on the setup reused time"), std::string::npos) << text;
  EXPECT_NE(text.find("89.5% of copy"), std::string::npos) << text;
  // Both ways were checked: the check table names them.
  EXPECT_NE(text.find("way"), std::string::npos) << text;
}

TEST(RenderRun, PlainRunKeepsOneTimeLine) {
  const std::string text = render_run(sample_run(200.0, true));
  EXPECT_NE(text.find("time     200.0 µs median"), std::string::npos) << text;
  EXPECT_EQ(text.find("rotating"), std::string::npos) << text;
  EXPECT_EQ(text.find("setup"), std::string::npos) << text;
}

TEST(RenderRun, FailedWayIsNamedAndSkippedRotatingSaysWhy) {
  RunResult r = run_with_every_figure();
  r.status = RunResult::Status::check_failed;
  r.checks_reusing_setup[0].passed = false;
  r.checks_reusing_setup[0].reason = "42 elements never written";
  r.message = "setup reused (setup + launch_reusing_setup): 42 elements never written";
  r.rotating = RotatingTiming{};
  r.rotating->skipped = "a second input set does not fit in device memory";
  const std::string text = render_run(r);
  EXPECT_NE(text.find("setup reused, y: 42 elements never written"), std::string::npos) << text;
  EXPECT_NE(text.find("rotating: not measured: a second input set does not fit"), std::string::npos) << text;
  EXPECT_NE(text.find("CHECK FAILED: setup reused"), std::string::npos) << text;
}

TEST(RenderRun, RotatingOnlyPutsTheRatesOnIt) {
  RunResult r = sample_run(200.0, true);
  r.timing.reset();
  RotatingTiming rot;
  rot.sets = 2;
  rot.set_bytes = 512.0 * 1024 * 1024;
  rot.l2_bytes = 50.0 * 1024 * 1024;
  rot.stats = stats_at(100.0);
  r.rotating = rot;
  const std::string text = render_run(r);
  EXPECT_NE(text.find("rotating K=2"), std::string::npos) << text;
  EXPECT_NE(text.find("5369 GB/s"), std::string::npos) << text;  // 536870912 B in 100 µs
  EXPECT_NE(text.find("on the rotating K=2 time"), std::string::npos) << text;
}

TEST(RunJson, CarriesEveryFigure) {
  const nlohmann::json j = run_with_every_figure().to_json();
  EXPECT_EQ(j.at("timing_mode"), "both");
  EXPECT_EQ(j.at("has_setup"), true);
  EXPECT_EQ(j.at("checks_reusing_setup").size(), 1u);
  EXPECT_DOUBLE_EQ(j.at("timing").at("median_us").get<double>(), 200.0);
  EXPECT_DOUBLE_EQ(j.at("timing_with_setup").at("median_us").get<double>(), 250.0);
  EXPECT_EQ(j.at("rotating").at("sets"), 8);
  EXPECT_DOUBLE_EQ(j.at("rotating").at("set_bytes").get<double>(), 64.0 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(j.at("rotating").at("timing").at("median_us").get<double>(), 180.0);
  EXPECT_TRUE(j.at("rotating").at("reuses_setup").get<bool>());
  EXPECT_EQ(j.at("metrics").at("basis"), "timing");
  // A plain run has the fields, empty.
  const nlohmann::json plain = sample_run(200.0, true).to_json();
  EXPECT_TRUE(plain.at("timing_with_setup").is_null());
  EXPECT_TRUE(plain.at("rotating").is_null());
  EXPECT_EQ(plain.at("has_setup"), false);
}

// The cell under a right-aligned column `header` in the row that starts with `row_start`.
std::string cell_under(std::string text, std::string header, const std::string& row_start) {
  for (std::string* s : {&text, &header})  // columns align by code point: make "µ" one byte
    for (std::size_t at; (at = s->find("µ")) != std::string::npos;)
      s->replace(at, std::string("µ").size(), "u");
  const std::vector<std::string> lines = lines_of(text);
  std::size_t head = 0;
  while (head < lines.size() && lines[head].find(header) == std::string::npos) ++head;
  if (head == lines.size()) return "(no header " + header + ")";
  const std::size_t end = lines[head].find(header) + header.size();  // right-aligned: cells end here
  for (const std::string& l : lines) {
    if (l.rfind(row_start, 0) != 0 || l.size() < end) continue;
    const std::size_t begin = l.rfind("  ", end - 1);
    return l.substr(begin == std::string::npos ? 0 : begin + 2,
                    end - (begin == std::string::npos ? 0 : begin + 2));
  }
  return "(no row " + row_start + ")";
}

TEST(RenderSuite, AddsRotatingAndSetupColumnsOnlyWhenPresent) {
  std::vector<RunResult> runs = {run_with_every_figure(), sample_run(100.0, true)};
  runs[1].problem = Problem("rmsnorm", {{"rows", std::int64_t{4096}}, {"cols", std::int64_t{8192}}});
  const std::vector<std::optional<Anchor>> anchors = {Anchor{400.0, "test"}, std::nullopt};
  const std::string text = render_suite(runs, anchors);
  // Existing columns keep their order; the new ones sit after the flush spread.
  const std::string header = lines_of(text)[1];
  const std::vector<std::string> order = {"median µs", "p10-p90 µs", "rotating µs", "with setup µs",
                                          "GB/s",      "% GEMM",     "anchor µs",   "speedup"};
  std::size_t at = 0;
  for (const std::string& h : order) {
    const std::size_t pos = header.find(h, at);
    ASSERT_NE(pos, std::string::npos) << h << " out of order in: " << header;
    at = pos;
  }
  EXPECT_EQ(cell_under(text, "rotating µs", "1 "), "180.0 (K=8)") << text;
  EXPECT_EQ(cell_under(text, "with setup µs", "1 "), "250.0") << text;
  EXPECT_EQ(cell_under(text, "rotating µs", "2 "), "-") << text;
  EXPECT_EQ(cell_under(text, "with setup µs", "2 "), "-") << text;
  EXPECT_EQ(cell_under(text, "speedup", "1 "), "2.00x") << text;  // 400 / the 200 µs primary
  EXPECT_NE(text.find("rotating µs: K calls on K input sets"), std::string::npos) << text;

  // A skipped rotating figure is a "skip" cell with its reason under the table.
  runs[1].rotating = RotatingTiming{};
  runs[1].rotating->skipped = "two input sets do not fit";
  const std::string skipped = render_suite(runs, anchors);
  EXPECT_EQ(cell_under(skipped, "rotating µs", "2 "), "skip") << skipped;
  EXPECT_NE(skipped.find("#2 rotating not measured: two input sets do not fit"), std::string::npos)
      << skipped;

  // Each anchor is set only against our figure of its method: rotating anchors get columns of their
  // own, and a flush anchor in a rotating-only row gets "-" and a note.
  std::vector<RunResult> rotating_only = {run_with_every_figure(), run_with_every_figure()};
  for (RunResult& r : rotating_only) {
    r.timing.reset();
    r.timing_with_setup.reset();
    r.timing_mode = TimingMode::rotating;
  }
  rotating_only[1].problem = runs[1].problem;
  const std::vector<RowAnchors> both = {{Anchor{400.0, "flush"}, Anchor{360.0, "rotating", true}},
                                        {Anchor{270.0, "rotating", true}}};
  const std::string mixed = render_suite(rotating_only, both, {0, 1});
  EXPECT_EQ(cell_under(mixed, "anchor µs", "1 "), "400.0") << mixed;
  EXPECT_EQ(cell_under(mixed, "speedup", "1 "), "-") << mixed;
  EXPECT_EQ(cell_under(mixed, "rot. speedup", "1 "), "2.00x") << mixed;  // 360 / the 180 µs rotating figure
  EXPECT_EQ(cell_under(mixed, "rot. speedup", "2 "), "1.50x") << mixed;
  EXPECT_NE(mixed.find("speedup -: the row has no figure of the anchor's kind"), std::string::npos) << mixed;
  EXPECT_NE(mixed.find("against the rotating anchors: geometric mean 1.732x over 2 rows"), std::string::npos)
      << mixed;
  EXPECT_EQ(mixed.find("against the anchors:"), std::string::npos) << mixed;
  const std::string flush_only = render_suite(runs, anchors);
  EXPECT_EQ(flush_only.find("speedup -:"), std::string::npos) << flush_only;
  EXPECT_EQ(flush_only.find("rot. speedup"), std::string::npos) << flush_only;

  // Runs without these figures get no such columns.
  const std::string plain = render_suite({sample_run(200.0, true)});
  EXPECT_EQ(plain.find("rotating"), std::string::npos) << plain;
  EXPECT_EQ(plain.find("with setup"), std::string::npos) << plain;
}

// The read floor: a line in the run report, two columns in a suite when some row has it, the reason
// where it was skipped, and the ratio in the JSON metrics.
TEST(RenderRun, ReadFloorLineColumnsAndWhyNot) {
  RunResult r = sample_run(200.0, true);
  ReadFloor f;
  f.bytes = r.cost.bytes;
  f.method = "bulk copies (cp.async.bulk), 4 x 48 KiB a CTA, one CTA an SM";
  TimingStats fs;
  fs.median_us = 160.0;
  fs.n = 40;
  f.stats = fs;
  r.read_floor = f;
  ASSERT_TRUE(r.over_read_floor());
  EXPECT_DOUBLE_EQ(*r.over_read_floor(), 1.25);
  const std::string text = render_run(r);
  EXPECT_NE(text.find("read floor:        160.0 µs to read the case's 512.00 MiB once, timed the same way; "
                      "L2 flushed 1.250x it"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("(bulk copies (cp.async.bulk), 4 x 48 KiB a CTA, one CTA an SM)"), std::string::npos) << text;
  EXPECT_DOUBLE_EQ(r.to_json().at("metrics").at("over_read_floor").get<double>(), 1.25);
  EXPECT_EQ(r.to_json().at("read_floor").at("method"), f.method);
  EXPECT_EQ(render_run(sample_run(200.0, true)).find("read floor"), std::string::npos);

  RunResult skipped = sample_run(100.0, true);
  skipped.problem = Problem("rmsnorm", {{"rows", std::int64_t{4096}}, {"cols", std::int64_t{8192}}});
  skipped.read_floor =
      ReadFloor{skipped.cost.bytes, "bulk copies", std::nullopt, "a second copy of the case's 512 MiB does not fit"};
  EXPECT_FALSE(skipped.over_read_floor());
  EXPECT_NE(render_run(skipped).find("read floor:        not measured: a second copy"), std::string::npos);
  const std::string suite = render_suite({r, skipped, sample_run(50.0, true)});
  EXPECT_EQ(cell_under(suite, "floor µs", "1 "), "160.0") << suite;
  EXPECT_EQ(cell_under(suite, "x floor", "1 "), "1.250x") << suite;
  EXPECT_EQ(cell_under(suite, "floor µs", "2 "), "skip") << suite;
  EXPECT_EQ(cell_under(suite, "x floor", "3 "), "-") << suite;
  EXPECT_NE(suite.find("#2 read floor not measured: a second copy"), std::string::npos) << suite;
  EXPECT_NE(suite.find("x floor = median µs / floor µs"), std::string::npos) << suite;
  EXPECT_EQ(render_suite({sample_run(50.0, true)}).find("floor"), std::string::npos);
}

// The rotating figure's energy a call, or why there is none.
TEST(RenderRun, RotatingEnergyOrWhyNot) {
  RunResult r = run_with_every_figure();
  r.rotating->stats->joules_per_call = 0.45;
  r.rotating->stats->mean_watts = 690.4;
  EXPECT_NE(render_run(r).find("rotating K=8 energy: 0.450 J a call at 690 W mean"), std::string::npos)
      << render_run(r);
  EXPECT_EQ(r.to_json().at("rotating").at("timing").at("joules_per_call"), 0.45);
  r.rotating->stats->joules_per_call.reset();
  r.rotating->stats->energy_note = "no energy counter: test";
  EXPECT_NE(render_run(r).find("rotating K=8 energy: no energy counter: test"), std::string::npos)
      << render_run(r);

  std::vector<RunResult> runs = {run_with_every_figure(), run_with_every_figure()};
  runs[1].problem = Problem("rmsnorm", {{"rows", std::int64_t{4096}}, {"cols", std::int64_t{8192}}});
  runs[0].rotating->stats->joules_per_call = 0.0123;
  const std::string table = render_suite(runs);
  EXPECT_EQ(cell_under(table, "J/call", "1 "), "12.3 mJ") << table;
  EXPECT_EQ(cell_under(table, "J/call", "2 "), "-") << table;
  EXPECT_EQ(render_suite({sample_run(200.0, true)}).find("J/call"), std::string::npos);
}

TEST(RenderSuite, SummarisesEachKernelAgainstTheAnchorsAndTheBaselines) {
  // Two cases, a lab kernel and a baseline in each.
  std::vector<RunResult> runs = {sample_run(100.0, true), sample_run(200.0, true), sample_run(80.0, true),
                                 sample_run(100.0, true)};
  runs[0].kernel = runs[2].kernel = "cute/x/lab/v1";
  runs[1].kernel = runs[3].kernel = "baseline/x/other/v1";
  const std::vector<std::optional<Anchor>> anchors = {Anchor{110.0, "a"}, std::nullopt, Anchor{72.0, "a"},
                                                      std::nullopt};
  const std::string text = render_suite(runs, anchors, {0, 0, 1, 1});
  // sqrt(1.10 * 0.90) = 0.995; the lowest is row 3's 72 / 80.
  EXPECT_NE(text.find("cute/x/lab/v1 against the anchors: geometric mean 0.995x over 2 rows, 1 at >= 1.00x, "
                      "lowest 0.900x (#3)"),
            std::string::npos)
      << text;
  // sqrt(200 / 100 * 100 / 80) = 1.581; the baseline is not summarised against itself.
  EXPECT_NE(text.find("cute/x/lab/v1 against the best baseline: geometric mean 1.581x over 2 rows, 2 at >= "
                      "1.00x, lowest 1.250x (#3)"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("baseline/x/other/v1 against"), std::string::npos) << text;
}

TEST(RenderSuite, ShowsTheClockAndItsSlowdownsWhenRead) {
  std::vector<RunResult> runs = {sample_run(200.0, true), sample_run(100.0, true), sample_run(150.0, true)};
  runs[0].clocks = summarize_clocks({{1650, 3201, 1980, 600, 58, kSwPowerCap},
                                     {1980, 3201, 1980, 400, 50, std::uint64_t{0}},
                                     {1710, 3201, 1980, 620, 59, kSwPowerCap}});
  runs[1].clocks = summarize_clocks({{1980, 3201, 1980, 300, 45, std::uint64_t{0}}});
  const std::string text = render_suite(runs);
  const std::vector<std::string> lines = lines_of(text);
  ASSERT_GE(lines.size(), 5u) << text;
  EXPECT_NE(lines[0].find("SM MHz"), std::string::npos) << text;
  EXPECT_NE(lines[2].find("1650-1980 slow 2/3"), std::string::npos) << text;
  EXPECT_NE(lines[3].find("1980"), std::string::npos) << text;
  EXPECT_EQ(lines[3].find("slow"), std::string::npos) << text;
  EXPECT_EQ(lines[4].substr(lines[4].find_last_not_of(' ')), "-") << text;  // not read for that row
  EXPECT_NE(text.find("SM MHz: the SM clock nvidia-smi read"), std::string::npos) << text;
  // No clock read anywhere: no column.
  EXPECT_EQ(render_suite({sample_run(200.0, true)}).find("SM MHz"), std::string::npos);
}

}  // namespace
}  // namespace cutelab
