// Parsers for Nsight Compute's raw CSV page and compute-sanitizer's output, on samples written
// by hand in the tools' documented formats (header row, units row, one row per launch for
// `ncu --csv --page raw`; "ERROR SUMMARY" / "RACECHECK SUMMARY" lines for the sanitizer).

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "cutelab/core/error.hpp"
#include "profile.hpp"

namespace cutelab {
namespace {

// What ncu prints with --csv --page raw (without --print-units base): the application's own
// output and ==PROF== lines around the table, values with thousands separators, scaled units.
// The tensor-pipe metric is deliberately absent (an older ncu or another GPU).
const char* kNcuSample = R"csv(==PROF== Connected to process 4242 (/opt/cutelab/bin/cutelab)
kernel   cute/mla_decode/paged_sm90/v1
==PROF== Profiling "mla_main" - 0: 0%....50%....100% - 9 passes
==PROF== Disconnected from process 4242
"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","dram__bytes.sum.per_second","dram__bytes_read.sum","dram__throughput.avg.pct_of_peak_sustained_elapsed","gpu__time_duration.sum","launch__block_size","launch__grid_size","launch__registers_per_thread","launch__shared_mem_per_block_dynamic","launch__shared_mem_per_block_static","lts__t_requests_srcunit_tex_op_read.sum","sm__cycles_elapsed.avg.per_second","sm__warps_active.avg.pct_of_peak_sustained_active"
"","","","","","","","","","","","Tbyte/second","Gbyte","%","usecond","","","register/thread","Kbyte/block","byte/block","request","cycle/nsecond","%"
"0","4242","cutelab","gpu-host","void cutelab::mla::main_kernel<cutelab::mla::Config<64, 2>>(cutelab::mla::Params)","1","7","(256, 1, 1)","(132, 1, 1)","0","9.0","2.94","2.56","87.60","825.12","256","132","240","230.82","0","54,000,000","1.75","12.50"
"1","4242","cutelab","gpu-host","void cutelab::mla::combine_kernel<512>(cutelab::mla::CombineParams)","1","7","(128, 1, 1)","(2,048, 1, 1)","0","9.0","1.10","0.00128","33.00","6.80","128","2,048","64","0","1,024","12,500","1.70","45.25"
"2","4242","cutelab","gpu-host","void cutelab::mla::main_kernel<cutelab::mla::Config<64, 2>>(cutelab::mla::Params)","1","7","(256, 1, 1)","(132, 1, 1)","0","9.0","2.96","2.56","88.00","827.12","256","132","240","230.82","0","54,000,000","1.77","12.50"
)csv";

TEST(NcuCsv, ParsesFunctionsAveragingTheirLaunchesInBaseUnits) {
  const NcuReport r = parse_ncu_raw_csv(kNcuSample);
  EXPECT_EQ(r.rows, 3);
  ASSERT_EQ(r.functions.size(), 2u);
  const NcuFunction& main = r.functions[0];
  EXPECT_EQ(main.launches, 2);
  EXPECT_EQ(main.grid, "(132, 1, 1)");
  EXPECT_EQ(main.block, "(256, 1, 1)");
  EXPECT_NEAR(*main.get("gpu__time_duration.sum"), 826.12e-6, 1e-12);
  EXPECT_NEAR(*main.get("dram__bytes.sum.per_second"), 2.95e12, 1e3);
  EXPECT_NEAR(*main.get("dram__throughput.avg.pct_of_peak_sustained_elapsed"), 87.8, 1e-9);
  EXPECT_NEAR(*main.get("sm__cycles_elapsed.avg.per_second"), 1.76e9, 1.0);
  EXPECT_NEAR(*main.get("launch__shared_mem_per_block_dynamic"), 230820.0, 1e-6);
  EXPECT_DOUBLE_EQ(*main.get("launch__registers_per_thread"), 240.0);
  EXPECT_NEAR(*main.get("dram__bytes_read.sum"), 2.56e9, 1.0);
  EXPECT_DOUBLE_EQ(*main.get("lts__t_requests_srcunit_tex_op_read.sum"), 54e6);

  const NcuFunction& combine = r.functions[1];
  EXPECT_EQ(combine.launches, 1);
  EXPECT_DOUBLE_EQ(*combine.get("launch__grid_size"), 2048.0);  // "2,048"
  EXPECT_DOUBLE_EQ(*combine.get("launch__shared_mem_per_block_static"), 1024.0);
  EXPECT_NEAR(*combine.get("gpu__time_duration.sum"), 6.8e-6, 1e-15);

  ASSERT_EQ(r.missing.size(), 1u);
  EXPECT_EQ(r.missing[0],
            "sm__pipe_tensor_op_hmma_type_hmma_hgmma_qgmma_cycles_active.avg.pct_of_peak_sustained_active");
  EXPECT_FALSE(main.get(
      "sm__pipe_tensor_op_hmma_type_hmma_hgmma_qgmma_cycles_active.avg.pct_of_peak_sustained_active"));
}

TEST(NcuCsv, RendersOneRowPerFunction) {
  const std::string table = render_ncu(parse_ncu_raw_csv(kNcuSample));
  EXPECT_NE(table.find("cutelab::mla::main_kernel<...>"), std::string::npos) << table;
  EXPECT_NE(table.find("cutelab::mla::combine_kernel<...>"), std::string::npos) << table;
  EXPECT_NE(table.find("826.12"), std::string::npos) << table;  // µs
  EXPECT_NE(table.find("2950"), std::string::npos) << table;    // GB/s
  EXPECT_NE(table.find("1760"), std::string::npos) << table;    // SM MHz
  EXPECT_NE(table.find("230820 B"), std::string::npos) << table;
  EXPECT_NE(table.find("(132, 1, 1) x (256, 1, 1)"), std::string::npos) << table;
  EXPECT_NE(table.find("L2 req/line"), std::string::npos) << table;
  EXPECT_NE(table.find("2.70"), std::string::npos) << table;  // 54e6 requests / (2.56e9 B / 128)
  EXPECT_NE(table.find("1.25"), std::string::npos) << table;  // 12,500 / (1.28e6 B / 128)
  EXPECT_NE(table.find("not reported"), std::string::npos) << table;
}

TEST(NcuCsv, BaseUnitsNeedNoScaling) {
  const std::string csv =
      "\"ID\",\"Kernel Name\",\"gpu__time_duration.sum\",\"sm__cycles_elapsed.avg.per_second\"\n"
      "\"\",\"\",\"nsecond\",\"cycle/second\"\n"
      "\"0\",\"k(int)\",\"1,500\",\"1,755,000,000\"\n";
  const NcuReport r = parse_ncu_raw_csv(csv);
  ASSERT_EQ(r.functions.size(), 1u);
  EXPECT_NEAR(*r.functions[0].get("gpu__time_duration.sum"), 1.5e-6, 1e-15);
  EXPECT_NEAR(*r.functions[0].get("sm__cycles_elapsed.avg.per_second"), 1.755e9, 1e-3);
}

TEST(NcuCsv, NoHeaderIsAnError) {
  EXPECT_THROW((void)parse_ncu_raw_csv("==ERROR== ERR_NVGPUCTRPERM - no permission\n"), Error);
}

TEST(NcuCsv, NumbersAndUnits) {
  EXPECT_EQ(parse_ncu_number("1,234.5"), 1234.5);
  EXPECT_EQ(parse_ncu_number("n/a"), std::nullopt);
  EXPECT_EQ(parse_ncu_number(""), std::nullopt);
  EXPECT_DOUBLE_EQ(ncu_unit_scale("usecond"), 1e-6);
  EXPECT_DOUBLE_EQ(ncu_unit_scale("msecond"), 1e-3);
  EXPECT_DOUBLE_EQ(ncu_unit_scale("Gbyte/second"), 1e9);
  EXPECT_DOUBLE_EQ(ncu_unit_scale("byte/usecond"), 1e6);
  EXPECT_DOUBLE_EQ(ncu_unit_scale("cycle/nsecond"), 1e9);
  EXPECT_DOUBLE_EQ(ncu_unit_scale("Mhz"), 1e6);
  EXPECT_DOUBLE_EQ(ncu_unit_scale("KiB"), 1.0);  // not a unit ncu prints: left alone
  EXPECT_DOUBLE_EQ(ncu_unit_scale("Kibyte"), 1024.0);
  EXPECT_DOUBLE_EQ(ncu_unit_scale("%"), 1.0);
  EXPECT_DOUBLE_EQ(ncu_unit_scale("register/thread"), 1.0);
}

TEST(NcuCsv, SplitsQuotedCells) {
  const auto cells = split_csv_line(R"x("a","b, c","say ""hi""",,"")x");
  ASSERT_EQ(cells.size(), 5u);
  EXPECT_EQ(cells[1], "b, c");
  EXPECT_EQ(cells[2], "say \"hi\"");
  EXPECT_EQ(cells[3], "");
}

TEST(NcuCsv, ShortNames) {
  EXPECT_EQ(short_function_name("void ns::k<Cfg<(int)3>>(Params)"), "ns::k<...>");
  EXPECT_EQ(short_function_name("rmsnorm_kernel"), "rmsnorm_kernel");
}

TEST(Sanitizer, CleanMemcheck) {
  const SanitizerVerdict v = parse_sanitizer_output(
      "memcheck", 0, "========= COMPUTE-SANITIZER\nkernel   x\n========= ERROR SUMMARY: 0 errors\n");
  EXPECT_TRUE(v.ran);
  EXPECT_TRUE(v.clean);
  EXPECT_EQ(v.errors, 0);
  EXPECT_EQ(v.str(), "memcheck: clean");
}

TEST(Sanitizer, MemcheckErrorsKeepTheirFirstLines) {
  const std::string out =
      "========= COMPUTE-SANITIZER\n"
      "========= Invalid __global__ read of size 4 bytes\n"
      "=========     at cutelab::k(float*)+0x1a0 in kernel.cuh:120\n"
      "=========     by thread (3,0,0) in block (0,0,0)\n"
      "=========     Address 0x7f0000001000 is out of bounds\n"
      "=========\n"
      "========= Invalid __global__ read of size 4 bytes\n"
      "=========     at cutelab::k(float*)+0x1a0 in kernel.cuh:120\n"
      "========= ERROR SUMMARY: 2 errors\n";
  const SanitizerVerdict v = parse_sanitizer_output("memcheck", 99, out);
  EXPECT_TRUE(v.ran);
  EXPECT_FALSE(v.clean);
  EXPECT_EQ(v.errors, 2);
  ASSERT_EQ(v.first_errors.size(), 2u);
  EXPECT_EQ(v.first_errors[0], "Invalid __global__ read of size 4 bytes");
  EXPECT_EQ(v.str(), "memcheck: 2 errors");
}

TEST(Sanitizer, RacecheckSummary) {
  const SanitizerVerdict v =
      parse_sanitizer_output("racecheck", 99,
                             "========= Error: Race reported between Write access at k+0x10 in a.cuh:5\n"
                             "=========     and Read access at k+0x20 in a.cuh:9 [128 hazards]\n"
                             "========= RACECHECK SUMMARY: 1 hazard displayed (1 error, 2 warnings)\n");
  EXPECT_TRUE(v.ran);
  EXPECT_EQ(v.errors, 1);
  EXPECT_EQ(v.warnings, 2);
  ASSERT_FALSE(v.first_errors.empty());
  EXPECT_NE(v.first_errors[0].find("Race reported"), std::string::npos);
  EXPECT_EQ(v.str(), "racecheck: 1 error, 2 warnings");
}

TEST(Sanitizer, CleanToolButFailedRunIsNotClean) {
  const SanitizerVerdict v =
      parse_sanitizer_output("synccheck", 4, "result: CHECK FAILED\n========= ERROR SUMMARY: 0 errors\n");
  EXPECT_TRUE(v.ran);
  EXPECT_FALSE(v.clean);
  EXPECT_EQ(v.errors, 0);
  EXPECT_NE(v.note.find("status 4"), std::string::npos);
}

TEST(Sanitizer, NoSummaryMeansItDidNotRun) {
  const SanitizerVerdict v = parse_sanitizer_output("memcheck", 1, "error: something\n");
  EXPECT_FALSE(v.ran);
  EXPECT_FALSE(v.clean);
  EXPECT_NE(v.str().find("did not run"), std::string::npos);
}

TEST(ProblemFlags, ReproduceEveryValue) {
  const Problem p("f", {{"b", std::int64_t{128}}, {"causal", true}, {"dtype", std::string("bf16")}});
  const std::vector<std::string> flags = problem_flags(p);
  EXPECT_EQ(flags, (std::vector<std::string>{"--b=128", "--causal=true", "--dtype=bf16"}));
}

}  // namespace
}  // namespace cutelab
