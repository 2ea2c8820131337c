// --prof=ncu and --prof=sanitize orchestration against stand-in `ncu` and `compute-sanitizer`
// scripts put first on PATH: the command lines they receive, the fallbacks (NVTX filter,
// unknown metric), and what is printed and recorded. No GPU and no real tool needed.

#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "profile.hpp"

namespace cutelab {
namespace {

namespace fs = std::filesystem;

const char* kCsv =
    R"csv("ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","gpu__time_duration.sum","launch__registers_per_thread","sm__warps_active.avg.pct_of_peak_sustained_active"
"","","","","","","","","","","","nsecond","register/thread","%"
"0","1","cutelab","h","void rms_kernel<4>(Params)","1","7","(128, 1, 1)","(4096, 1, 1)","0","9.0","190,300","40","75.5"
)csv";

// A fake tool directory on PATH for the lifetime of the fixture.
class FakeTools : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("cutelab-fake-tools-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
    log_ = (dir_ / "calls.log").string();
    std::ofstream(dir_ / "sample.csv") << kCsv;
    old_path_ = std::getenv("PATH") ? std::getenv("PATH") : "";
    ::setenv("PATH", (dir_.string() + ":" + old_path_).c_str(), 1);
    ::setenv("FAKE_DIR", dir_.c_str(), 1);
    ::unsetenv("CUTELAB_NCU_NVTX_INCLUDE");
  }
  void TearDown() override {
    ::setenv("PATH", old_path_.c_str(), 1);
    ::unsetenv("FAKE_DIR");
    ::unsetenv("FAKE_NCU_MODE");
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  void write_tool(const std::string& name, const std::string& body) {
    const fs::path p = dir_ / name;
    std::ofstream(p) << "#!/bin/sh\necho \"$@\" >> \"$FAKE_DIR/calls.log\"\n" << body;
    fs::permissions(p, fs::perms::owner_all);
  }
  [[nodiscard]] std::string calls() const {
    std::ifstream in(log_);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }

  fs::path dir_;
  std::string log_;
  std::string old_path_;
};

// Profiles: writes <export>.ncu-rep unless FAKE_NCU_MODE says otherwise; imports: prints the CSV.
const char* kFakeNcu = R"sh(
case " $* " in
  *" --import "*) cat "$FAKE_DIR/sample.csv"; exit 0 ;;
esac
case "$FAKE_NCU_MODE:$*" in
  unknown_metric:*sm__pipe_tensor_op*)
    echo "==ERROR== Failed to find metric sm__pipe_tensor_op_hmma_type_hmma_hgmma_qgmma_cycles_active.avg.pct_of_peak_sustained_active"
    exit 1 ;;
  regex_misses:*regex:*) echo "==WARNING== No kernels were profiled."; exit 0 ;;
  denied:*) echo "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission"; exit 1 ;;
esac
prev=""
for a in "$@"; do [ "$prev" = "--export" ] && out="$a"; prev="$a"; done
: > "$out.ncu-rep"
echo "==PROF== Disconnected from process 1"
)sh";

RunResult fake_result() {
  RunResult r;
  r.kernel = "cute/rmsnorm/rowwise/v1";
  r.problem = Problem("rmsnorm", {{"rows", std::int64_t{4096}}, {"cols", std::int64_t{8192}}});
  r.config = ConfigDesc{"rows4_vec8", {}};
  r.resources = {FunctionResources{}};
  return r;
}

RunArgs fake_args(const fs::path& dir) {
  RunArgs a;
  a.kernel = "cute/rmsnorm/rowwise/v1";
  a.prof = "ncu";
  a.m.seed = 7;
  a.m.json = (dir / "out.json").string();
  return a;
}

TEST_F(FakeTools, NcuProfilesTheChosenConfigAndPrintsTheTable) {
  write_tool("ncu", kFakeNcu);
  std::ostringstream out, err;
  nlohmann::json report;
  const int status = profile_with_ncu(fake_args(dir_), fake_result(), &report, Io{out, err});
  ASSERT_EQ(status, kExitOk) << err.str();
  const std::string c = calls();
  EXPECT_NE(c.find("--clock-control none"), std::string::npos) << c;
  EXPECT_NE(c.find("--nvtx --nvtx-include regex:cutelab@cutelab.measure.*/"), std::string::npos) << c;
  EXPECT_NE(c.find("--launch-count 3"), std::string::npos) << c;
  EXPECT_NE(c.find("gpu__time_duration.sum"), std::string::npos) << c;
  EXPECT_NE(c.find("run cute/rmsnorm/rowwise/v1 --cols=8192 --rows=4096 --seed=7"), std::string::npos) << c;
  EXPECT_NE(c.find("--prof=annotation --no-check --max-time=0 --min-samples=1 --config=rows4_vec8"),
            std::string::npos)
      << c;
  EXPECT_NE(c.find("--import " + (dir_ / "out.ncu-rep").string()), std::string::npos) << c;
  EXPECT_NE(out.str().find("rms_kernel<...>"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("190.30"), std::string::npos) << out.str();
  EXPECT_EQ(report["ncu"]["functions"][0]["launches"], 1);
  EXPECT_EQ(report["ncu"]["report_file"], (dir_ / "out.ncu-rep").string());
}

TEST_F(FakeTools, NcuFallsBackToTheLiteralRangeName) {
  write_tool("ncu", kFakeNcu);
  ::setenv("FAKE_NCU_MODE", "regex_misses", 1);
  std::ostringstream out, err;
  const int status = profile_with_ncu(fake_args(dir_), fake_result(), nullptr, Io{out, err});
  ASSERT_EQ(status, kExitOk) << err.str();
  EXPECT_NE(calls().find(R"(--nvtx-include cutelab@cutelab\/measure\/cute\/rmsnorm\/rowwise\/v1/)"),
            std::string::npos)
      << calls();
  EXPECT_NE(err.str().find("no kernel matched"), std::string::npos) << err.str();
}

TEST_F(FakeTools, NcuDropsAMetricItDoesNotKnow) {
  write_tool("ncu", kFakeNcu);
  ::setenv("FAKE_NCU_MODE", "unknown_metric", 1);
  std::ostringstream out, err;
  const int status = profile_with_ncu(fake_args(dir_), fake_result(), nullptr, Io{out, err});
  ASSERT_EQ(status, kExitOk) << err.str();
  EXPECT_NE(err.str().find("dropping metrics"), std::string::npos) << err.str();
}

TEST_F(FakeTools, NcuWithoutCounterPermissionSaysSo) {
  write_tool("ncu", kFakeNcu);
  ::setenv("FAKE_NCU_MODE", "denied", 1);
  std::ostringstream out, err;
  EXPECT_EQ(profile_with_ncu(fake_args(dir_), fake_result(), nullptr, Io{out, err}), kExitRuntimeError);
  EXPECT_NE(err.str().find("no permission"), std::string::npos) << err.str();
}

TEST_F(FakeTools, NcuMissingIsAClearError) {
  for (const char* where : {"/usr/local/cuda/bin/ncu", "/opt/nvidia/nsight-compute"})
    if (fs::exists(where)) GTEST_SKIP() << "a real ncu is installed (" << where << ")";
  ::setenv("PATH", dir_.c_str(), 1);  // no ncu there
  std::ostringstream out, err;
  EXPECT_EQ(profile_with_ncu(fake_args(dir_), fake_result(), nullptr, Io{out, err}), kExitRuntimeError);
  EXPECT_NE(err.str().find("ncu) not found"), std::string::npos) << err.str();
}

const char* kFakeSanitizer = R"sh(
case "$2" in
  racecheck)
    echo "========= Error: Race reported between Write access at k+0x10 in a.cuh:5"
    echo "=========     and Read access at k+0x20 in a.cuh:9 [128 hazards]"
    echo "========= RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)"
    exit 99 ;;
  *) echo "result: OK"; echo "========= ERROR SUMMARY: 0 errors"; exit 0 ;;
esac
)sh";

TEST_F(FakeTools, SanitizerRunsEachToolAndReportsVerdicts) {
  write_tool("compute-sanitizer", kFakeSanitizer);
  RunArgs a = fake_args(dir_);
  a.prof = "sanitize";
  a.config = "rows4_vec8";
  const Problem p("rmsnorm", {{"rows", std::int64_t{37}}, {"cols", std::int64_t{1000}}});
  std::ostringstream out, err;
  nlohmann::json report;
  const int status = profile_with_sanitizer(a, p, &report, Io{out, err});
  EXPECT_EQ(status, kExitCheckFailed) << out.str() << err.str();
  const std::string o = out.str();
  EXPECT_NE(o.find("memcheck: clean"), std::string::npos) << o;
  EXPECT_NE(o.find("racecheck: 1 error"), std::string::npos) << o;
  EXPECT_NE(o.find("Race reported between"), std::string::npos) << o;
  EXPECT_NE(o.find("synccheck: clean"), std::string::npos) << o;
  const std::string c = calls();
  EXPECT_NE(c.find("--tool memcheck --error-exitcode 99"), std::string::npos) << c;
  EXPECT_NE(c.find("--tool racecheck --error-exitcode 99 --racecheck-report all"), std::string::npos) << c;
  EXPECT_NE(c.find("run cute/rmsnorm/rowwise/v1 --cols=1000 --rows=37 --seed=7 --check --no-measure"),
            std::string::npos)
      << c;
  EXPECT_NE(c.find("--config=rows4_vec8"), std::string::npos) << c;
  ASSERT_EQ(report["sanitize"].size(), 3u);
  EXPECT_EQ(report["sanitize"][1]["errors"], 1);
}

}  // namespace
}  // namespace cutelab
