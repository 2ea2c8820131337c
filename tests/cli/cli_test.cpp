// The CLI's parsing and exit statuses, driven through run_cli() with argv arrays. The kernels
// here are the fake "testfam" plans of fake_plan.cpp and the "listfam" plan defined below (a
// list parameter); none of them can run on any GPU.

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli.hpp"
#include "commands.hpp"
#include "cutelab/runtime/device.hpp"
#include "cutelab/runtime/plan.hpp"
#include "cutelab/runtime/registry.hpp"

namespace cutelab {
namespace {

struct CliRun {
  int status = -1;
  std::string out;
  std::string err;
};

CliRun cli(std::vector<std::string> args) {
  args.insert(args.begin(), "cutelab");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::ostringstream out, err;
  CliRun r;
  r.status = run_cli(static_cast<int>(args.size()), argv.data(), out, err);
  r.out = out.str();
  r.err = err.str();
  return r;
}

bool have_gpu() { return cuda_device_count() > 0; }

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("cutelab-cli-test-" + std::to_string(::getpid()) + "-" + name))
      .string();
}

#define EXPECT_CONTAINS(text, part) \
  EXPECT_NE((text).find(part), std::string::npos) << "missing '" << (part) << "' in:\n" << (text)

TEST(Cli, HelpExitsZeroAndDocumentsExitStatuses) {
  const CliRun r = cli({"--help"});
  EXPECT_EQ(r.status, kExitOk);
  EXPECT_CONTAINS(r.out, "Exit status");
  EXPECT_CONTAINS(r.out, "3 skipped");
  EXPECT_CONTAINS(r.out, "run");
  EXPECT_CONTAINS(r.out, "suite");
}

TEST(Cli, NoArgumentsIsAUsageError) {
  const CliRun r = cli({});
  EXPECT_EQ(r.status, kExitUsage);
}

TEST(Cli, UnknownSubcommandIsAUsageError) {
  const CliRun r = cli({"frobnicate"});
  EXPECT_EQ(r.status, kExitUsage);
  EXPECT_CONTAINS(r.err, "frobnicate");
}

TEST(Cli, ListWorksWithoutAGpuAndMarksTheFamilyDefault) {
  const CliRun r = cli({"list"});
  ASSERT_EQ(r.status, kExitOk) << r.err;
  EXPECT_CONTAINS(r.out, "cute/testfam/fast/v1");
  EXPECT_CONTAINS(r.out, "cute/testfam/fast/v2");
  EXPECT_CONTAINS(r.out, "baseline/testfam/naive/v1");
  EXPECT_CONTAINS(r.out, "sm_");
  EXPECT_CONTAINS(r.out, "--n --mode --flag --h");
  // The default is the newest version of the default design, and only that one.
  std::istringstream lines(r.out);
  std::string line;
  int marked = 0;
  while (std::getline(lines, line)) {
    if (line.find("testfam") == std::string::npos || line.find(" * ") == std::string::npos) continue;
    ++marked;
    EXPECT_CONTAINS(line, "cute/testfam/fast/v2");
  }
  EXPECT_EQ(marked, 1) << r.out;
}

TEST(Cli, ListNamesIsOneNamePerLine) {
  const CliRun r = cli({"list", "--names"});
  ASSERT_EQ(r.status, kExitOk) << r.err;
  EXPECT_EQ(r.out,
            "baseline/testfam/naive/v1\ncute/listfam/lens/v1\ncute/testfam/fast/v1\ncute/testfam/fast/v2\n");
}

TEST(Cli, VersionNamesTheProgram) {
  const CliRun r = cli({"--version"});
  EXPECT_EQ(r.status, kExitOk);
  EXPECT_CONTAINS(r.out, "cutelab (git ");
}

TEST(Cli, ListWritesJson) {
  const std::string path = temp_path("list.json");
  const CliRun r = cli({"list", "--json", path});
  ASSERT_EQ(r.status, kExitOk) << r.err;
  std::ifstream in(path);
  const nlohmann::json j = nlohmann::json::parse(in);
  ASSERT_TRUE(j["kernels"].is_array());
  bool found_default = false;
  for (const auto& k : j["kernels"])
    if (k["name"] == "cute/testfam/fast/v2") found_default = k["family_default"].get<bool>();
  EXPECT_TRUE(found_default);
  EXPECT_TRUE(j.contains("git_commit"));
  EXPECT_TRUE(j.contains("date_utc"));
  std::filesystem::remove(path);
}

TEST(Cli, RunUnknownKernelNamesIt) {
  const CliRun r = cli({"run", "no_such_kernel", "--n=64"});
  EXPECT_EQ(r.status, kExitUsage);
  EXPECT_CONTAINS(r.err, "no_such_kernel");
}

TEST(Cli, RunWithoutKernelIsAUsageError) {
  const CliRun r = cli({"run"});
  EXPECT_EQ(r.status, kExitUsage);
  EXPECT_CONTAINS(r.err, "kernel");
}

TEST(Cli, RunUnknownFlagIsAUsageError) {
  const CliRun r = cli({"run", "testfam", "--bogus=3"});
  EXPECT_EQ(r.status, kExitUsage);
  EXPECT_CONTAINS(r.err, "bogus");
}

TEST(Cli, RunFlagOfAnotherFamilyIsAUsageError) {
  const CliRun r = cli({"run", "testfam", "--rows=16"});
  EXPECT_EQ(r.status, kExitUsage);
  EXPECT_CONTAINS(r.err, "rows");
}

TEST(Cli, RunMissingValueIsAUsageError) {
  const CliRun r = cli({"run", "testfam", "--n"});
  EXPECT_EQ(r.status, kExitUsage);
  EXPECT_CONTAINS(r.err, "--n");
}

TEST(Cli, RunMissingValueBeforeAnotherFlagIsAUsageError) {
  const CliRun r = cli({"run", "testfam", "--n", "--mode=fast"});
  EXPECT_EQ(r.status, kExitUsage);
}

TEST(Cli, RunNonIntegerNamesTheParameter) {
  const CliRun r = cli({"run", "testfam", "--n=abc"});
  EXPECT_EQ(r.status, kExitUsage);
  EXPECT_CONTAINS(r.err, "'n'");
  EXPECT_CONTAINS(r.err, "abc");
}

TEST(Cli, RunOutOfRangeNamesTheParameter) {
  for (const char* value : {"--n=0", "--n=-8", "--n=99999999999", "--n=99999999999999999999999"}) {
    const CliRun r = cli({"run", "testfam", value});
    EXPECT_EQ(r.status, kExitUsage) << value;
    EXPECT_CONTAINS(r.err, "'n'");
  }
}

TEST(Cli, RunImpossibleSizeSaysWhy) {
  const CliRun r = cli({"run", "testfam", "--n=12"});
  EXPECT_EQ(r.status, kExitUsage);
  EXPECT_CONTAINS(r.err, "n (12) must be a multiple of 8");
}

TEST(Cli, RunBadChoiceNamesTheParameter) {
  const CliRun r = cli({"run", "testfam", "--mode=slow"});
  EXPECT_EQ(r.status, kExitUsage);
  EXPECT_CONTAINS(r.err, "'mode'");
  EXPECT_CONTAINS(r.err, "exact");
}

TEST(Cli, RunBadBooleanNamesTheParameter) {
  const CliRun r = cli({"run", "testfam", "--flag=maybe"});
  EXPECT_EQ(r.status, kExitUsage);
  EXPECT_CONTAINS(r.err, "'flag'");
}

TEST(Cli, RunBadProfModeIsAUsageError) {
  const CliRun r = cli({"run", "testfam", "--prof=perf"});
  EXPECT_EQ(r.status, kExitUsage);
  EXPECT_CONTAINS(r.err, "prof");
}

TEST(Cli, RunTuneAndConfigExcludeEachOther) {
  const CliRun r = cli({"run", "testfam", "--tune", "--config", "vec8"});
  EXPECT_EQ(r.status, kExitUsage);
}

TEST(Cli, RunNegativeMaxTimeIsAUsageError) {
  const CliRun r = cli({"run", "testfam", "--max-time=-1"});
  EXPECT_EQ(r.status, kExitUsage);
}

TEST(Cli, TimingModeMustBeKnown) {
  for (const char* cmd : {"run", "suite"}) {
    const CliRun r = cli({cmd, cmd == std::string("run") ? "testfam" : "x.json", "--timing=cold"});
    EXPECT_EQ(r.status, kExitUsage) << cmd;
    EXPECT_CONTAINS(r.err, "--timing");
  }
  const CliRun help = cli({"run", "testfam", "--help"});
  EXPECT_CONTAINS(help.out, "--timing");
  EXPECT_CONTAINS(help.out, "default: flush");
  const CliRun suite_help = cli({"suite", "--help"});
  EXPECT_CONTAINS(suite_help.out, "default: both");
}

TEST(Cli, TimingModeMapsToTheRunOptions) {
  MeasureArgs m;
  EXPECT_EQ(run_options(m).timing_mode, TimingMode::flush);
  m.timing = "rotating";
  EXPECT_EQ(run_options(m).timing_mode, TimingMode::rotating);
  m.timing = "both";
  EXPECT_EQ(run_options(m).timing_mode, TimingMode::both);
  m.timing = "hot";
  EXPECT_THROW((void)run_options(m), UsageError);
}

TEST(Cli, RunHelpListsTheFamilyFlags) {
  const CliRun r = cli({"run", "testfam", "--help"});
  EXPECT_EQ(r.status, kExitOk) << r.err;
  EXPECT_CONTAINS(r.out, "Problem (testfam)");
  EXPECT_CONTAINS(r.out, "--n");
  EXPECT_CONTAINS(r.out, "--mode");
  EXPECT_CONTAINS(r.out, "--no-flag");
  EXPECT_CONTAINS(r.out, "fast|exact");
}

TEST(Cli, RunHelpWithoutKernelStillWorks) {
  const CliRun r = cli({"run", "--help"});
  EXPECT_EQ(r.status, kExitOk) << r.err;
  EXPECT_CONTAINS(r.out, "--prof");
}

// Valid flags, any spelling: the run gets past parsing and stops at the device: no GPU here
// (exit 3, "no CUDA GPU found"), or a GPU that is not the fake kernel's sm_99a (exit 3, skipped).
void expect_stops_at_device(const CliRun& r) {
  EXPECT_EQ(r.status, kExitSkipped) << r.err;
  if (have_gpu()) {
    EXPECT_CONTAINS(r.err, "skipped:");
  } else {
    EXPECT_CONTAINS(r.err, "no CUDA GPU found");
  }
}

TEST(Cli, RunValidFlagsStopsAtTheDevice) {
  expect_stops_at_device(cli({"run", "testfam", "--n=64", "--mode=exact"}));
}

TEST(Cli, RunAcceptsSeparatedValuesAndKernelAfterFlags) {
  expect_stops_at_device(
      cli({"run", "--n", "64", "--seed", "7", "cute/testfam/fast/v1", "--flag", "--check"}));
}

TEST(Cli, RunAcceptsAParameterNamedLikeTheShortHelpFlag) {
  expect_stops_at_device(cli({"run", "testfam", "--h=16"}));
  expect_stops_at_device(cli({"run", "testfam", "--h", "16"}));
  const CliRun help = cli({"run", "testfam", "-h"});
  EXPECT_EQ(help.status, kExitOk);
  EXPECT_CONTAINS(help.out, "--h INT");
}

TEST(Cli, RunAcceptsEveryTimingMode) {
  for (const char* mode : {"flush", "rotating", "both"}) {
    expect_stops_at_device(cli({"run", "testfam", std::string("--timing=") + mode}));
    // Separated value, kernel last: the value is not taken for the kernel's name.
    expect_stops_at_device(cli({"run", "--timing", mode, "cute/testfam/fast/v1"}));
  }
}

// The read floor stands beside the flush figure: asked for without one, or with nothing measured, it
// is a usage error before any device is opened.
TEST(Cli, ReadFloorNeedsTheFlushFigure) {
  MeasureArgs m;
  EXPECT_FALSE(run_options(m).read_floor);
  m.floor = true;
  EXPECT_TRUE(run_options(m).read_floor);
  m.timing = "both";
  EXPECT_TRUE(run_options(m).read_floor);
  m.timing = "rotating";
  EXPECT_THROW((void)run_options(m), UsageError);
  m.timing = "flush";
  m.measure = false;
  EXPECT_THROW((void)run_options(m), UsageError);

  const CliRun rotating = cli({"run", "testfam", "--floor", "--timing=rotating"});
  EXPECT_EQ(rotating.status, kExitUsage) << rotating.err;
  EXPECT_CONTAINS(rotating.err, "--floor");
  const CliRun unmeasured = cli({"run", "testfam", "--floor", "--no-measure"});
  EXPECT_EQ(unmeasured.status, kExitUsage) << unmeasured.err;
  const std::string path = temp_path("suite-floor.json");
  std::ofstream(path) << R"({"name": "x", "kernels": ["testfam"], "cases": [{"problem": {"n": 64}}]})";
  const CliRun suite = cli({"suite", path, "--floor", "--timing", "rotating"});
  EXPECT_EQ(suite.status, kExitUsage) << suite.err;
  EXPECT_CONTAINS(suite.err, "--floor");
  std::filesystem::remove(path);
  expect_stops_at_device(cli({"run", "testfam", "--floor"}));
  EXPECT_CONTAINS(cli({"run", "testfam", "--help"}).out, "--floor");
}

TEST(Cli, RunAcceptsBooleanSpellings) {
  expect_stops_at_device(cli({"run", "testfam", "--no-flag", "--no-check"}));
  expect_stops_at_device(cli({"run", "testfam", "--flag=false"}));
}

TEST(Cli, RunSanitizeUsesTheSmallProblemButUserFlagsWin) {
  // The sanitize problem (n=64) is valid; an explicit impossible n must still be rejected.
  expect_stops_at_device(cli({"run", "testfam", "--prof=sanitize"}));
  const CliRun r = cli({"run", "testfam", "--prof=sanitize", "--n=12"});
  EXPECT_EQ(r.status, kExitUsage);
}

TEST(Cli, RunSkippedWritesJsonWhenAsked) {
  if (!have_gpu()) GTEST_SKIP() << "needs a GPU to get past the device query (none here)";
  const std::string path = temp_path("run.json");
  const CliRun r = cli({"run", "testfam", "--json", path});
  EXPECT_EQ(r.status, kExitSkipped);
  std::ifstream in(path);
  const nlohmann::json j = nlohmann::json::parse(in);
  EXPECT_TRUE(j.contains("command"));
  std::filesystem::remove(path);
}

TEST(Cli, DeviceWithoutGpuIsSkipped) {
  if (have_gpu()) GTEST_SKIP() << "this machine has a GPU";
  const CliRun r = cli({"device"});
  EXPECT_EQ(r.status, kExitSkipped);
  EXPECT_CONTAINS(r.err, "no CUDA GPU found: ");
}

TEST(Cli, SuiteMissingFileIsAUsageError) {
  const CliRun r = cli({"suite", temp_path("does-not-exist.json")});
  EXPECT_EQ(r.status, kExitUsage);
  EXPECT_CONTAINS(r.err, "cannot open");
}

TEST(Cli, SuiteMalformedNamesTheField) {
  const std::string path = temp_path("bad-suite.json");
  std::ofstream(path)
      << R"({"name": "x", "kernels": ["testfam"], "cases": [{"problem": {"n": 64}}, {"problem": 5}]})";
  const CliRun r = cli({"suite", path});
  EXPECT_EQ(r.status, kExitUsage);
  EXPECT_CONTAINS(r.err, "cases[1].problem");
  std::filesystem::remove(path);
}

TEST(Cli, SuiteUnknownKernelIsAUsageError) {
  const std::string path = temp_path("suite-unknown.json");
  std::ofstream(path) << R"({"name": "x", "kernels": ["nope_kernel"], "cases": [{"problem": {"n": 64}}]})";
  const CliRun r = cli({"suite", path});
  EXPECT_EQ(r.status, kExitUsage);
  EXPECT_CONTAINS(r.err, "nope_kernel");
  std::filesystem::remove(path);
}

TEST(Cli, SuiteCaseWithUnknownKernelIsAUsageError) {
  const std::string path = temp_path("suite-case-kernel.json");
  std::ofstream(path) << R"({"name": "x", "kernels": ["testfam"],
                             "cases": [{"problem": {"n": 64}, "kernels": ["nope_kernel"]}]})";
  const CliRun r = cli({"suite", path});
  EXPECT_EQ(r.status, kExitUsage);
  EXPECT_CONTAINS(r.err, "cases[0].kernels");
  std::filesystem::remove(path);
}

TEST(Cli, SuiteValidFileStopsAtTheDevice) {
  const std::string path = temp_path("suite-ok.json");
  std::ofstream(path) << R"({"name": "x", "kernels": ["testfam"], "cases": [{"problem": {"n": 64}},
                             {"problem": {"n": 128}, "kernels": ["baseline/testfam/naive/v1"]}]})";
  const CliRun r = cli({"suite", path, "--kernels", "cute/testfam/fast/v1,baseline/testfam/naive"});
  if (have_gpu()) {
    // Every row skipped at the arch gate: reported, not a failure.
    EXPECT_EQ(r.status, kExitOk) << r.err;
    EXPECT_CONTAINS(r.out, "skipped");
    EXPECT_CONTAINS(r.out, "#3 skipped");  // case 0 x 2 kernels, case 1 x the baseline only
    EXPECT_EQ(r.out.find("#4 "), std::string::npos) << r.out;
  } else {
    EXPECT_EQ(r.status, kExitSkipped);
    EXPECT_CONTAINS(r.err, "no CUDA GPU found");
  }
  std::filesystem::remove(path);
}

// ---- list parameters: --X and --X-file (the fake family "listfam" has one, "lens") ---------------

struct ListProblem {
  std::int64_t b = 0;
  IntegerList lens;

  static const Family& family() {
    static const Family f = [] {
      Family fam;
      fam.name = "listfam";
      fam.description = "a family with a list parameter, for the CLI tests";
      ParamSpec b;
      b.name = "b";
      b.help = "requests";
      b.default_value = "4";
      b.min = 1;
      b.max = 64;
      ParamSpec lens;
      lens.name = "lens";
      lens.help = "length of each request";
      lens.kind = ParamSpec::Kind::integer_list;
      lens.min = 0;
      lens.max = 131072;
      fam.params = {b, lens};
      return fam;
    }();
    return f;
  }
  static ListProblem from(const Problem& p) {
    ListProblem out{p.integer("b"), p.integers("lens")};
    CUTELAB_REQUIRE(out.lens.empty() || out.lens.size() == static_cast<std::size_t>(out.b), "lens has ",
                    out.lens.size(), " values but b = ", out.b);
    return out;
  }
};

struct ListConfig {
  [[nodiscard]] std::string name() const { return "only"; }
  [[nodiscard]] nlohmann::json to_json() const { return nlohmann::json::object(); }
  [[nodiscard]] std::optional<std::string> validate(const ListProblem&, const DeviceInfo&) const {
    return {};
  }
};

struct ListWorkspace : Workspace {
  [[nodiscard]] std::vector<OutputSpec> outputs() const override { return {}; }
};

// Like the testfam plans: an architecture no GPU has, so a run stops at the device.
class ListPlan final : public TypedPlan<ListProblem, ListConfig, ListWorkspace> {
 public:
  [[nodiscard]] KernelId id() const override { return {"cute", "listfam", "lens", "v1"}; }
  [[nodiscard]] ArchRequirement arch() const override { return {99, 0, true}; }
  [[nodiscard]] std::string summary() const override { return "fake kernel with a list parameter"; }

 protected:
  std::unique_ptr<ListWorkspace> make_inputs(const ListProblem&, std::uint64_t) const override {
    throw Error("the fake plan cannot make inputs");
  }
  std::vector<std::vector<float>> make_reference(const ListProblem&, ListWorkspace&) const override {
    return {};
  }
  std::vector<ListConfig> make_configs(const ListProblem&, const DeviceInfo&) const override { return {{}}; }
  Cost make_cost(const ListProblem& p) const override { return {0.0, static_cast<double>(p.b)}; }
  Kernel make_kernel(const ListProblem&, const ListConfig&, ListWorkspace&,
                     const DeviceInfo&) const override {
    throw Error("the fake plan cannot make kernels");
  }
};

CUTELAB_REGISTER_PLAN(ListPlan);

// A fresh folder for list files, removed at the end of each test.
class CliListFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::path(
        temp_path("lists-" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name())));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string write(const std::string& name, const std::string& text) const {
    const std::string path = (dir_ / name).string();
    std::ofstream(path) << text;
    return path;
  }
  std::filesystem::path dir_;
};

TEST(CliList, LensFlagIsAcceptedInAnySpelling) {
  expect_stops_at_device(cli({"run", "listfam", "--b=4", "--lens", "4641,45118,1730,1696"}));
  expect_stops_at_device(cli({"run", "listfam", "--b=4", "--lens=0,1,2,3"}));
  expect_stops_at_device(cli({"run", "listfam", "--lens=7,7,7,7", "--no-check"}));
  expect_stops_at_device(cli({"run", "listfam"}));  // unset: no lengths given
}

TEST(CliList, BadLensAreUsageErrorsNamingTheValue) {
  struct Bad {
    std::vector<std::string> args;
    const char* message;
  };
  const std::vector<Bad> bad = {
      {{"--lens=1,2,-5,4"}, "lens[2] = -5 is negative"},
      {{"--lens=1,200000,3,4"}, "lens[1] = 200000 exceeds the maximum 131072"},
      {{"--lens=1,2,3"}, "lens has 3 values but b = 4"},
      {{"--lens=1,x,3,4"}, "lens[1] = 'x' is not an integer"},
      {{"--lens", " "}, "parameter 'lens' of listfam: empty list"},
      {{"--lens="}, "--lens"},  // CLI11: a value is required
  };
  for (const Bad& b : bad) {
    std::vector<std::string> args = {"run", "listfam"};
    args.insert(args.end(), b.args.begin(), b.args.end());
    const CliRun r = cli(args);
    EXPECT_EQ(r.status, kExitUsage) << b.args[0];
    EXPECT_CONTAINS(r.err, b.message);
  }
}

TEST(CliList, HelpListsTheFileFlag) {
  const CliRun r = cli({"run", "listfam", "--help"});
  EXPECT_EQ(r.status, kExitOk) << r.err;
  EXPECT_CONTAINS(r.out, "--lens A,B,...");
  EXPECT_CONTAINS(r.out, "each 0..131072");
  EXPECT_CONTAINS(r.out, "--lens-file FILE");
  EXPECT_CONTAINS(r.out, "'#' starts a comment");
}

TEST_F(CliListFiles, LensFileWithCommentsAndAnySeparators) {
  const std::string path = write("lens.txt", "# decode step 17\n4641, 45118\n1730 1696  # last two\n");
  expect_stops_at_device(cli({"run", "listfam", "--lens-file", path}));
  expect_stops_at_device(cli({"run", "listfam", "--b=2", "--lens-file=" + write("two.txt", "0\n131072\n")}));
}

TEST_F(CliListFiles, BadLensFilesNameTheFileAndLine) {
  struct Bad {
    std::string file;
    std::string text;
    std::string message;
  };
  const std::vector<Bad> bad = {
      {"word.txt", "1, 2\n3 four\n", "word.txt:2: 'four' is not an integer"},
      {"float.txt", "1 2 3 4.5\n", "float.txt:1: '4.5' is not an integer"},
      {"empty.txt", "# nothing\n\n", "no integers"},
      {"short.txt", "1 2 3\n", "lens has 3 values but b = 4"},
      {"negative.txt", "1\n2\n-3\n4\n", "lens[2] = -3 is negative"},
      {"long.txt", "1 2 3 131073\n", "lens[3] = 131073 exceeds the maximum 131072"},
  };
  for (const Bad& b : bad) {
    const CliRun r = cli({"run", "listfam", "--lens-file", write(b.file, b.text)});
    EXPECT_EQ(r.status, kExitUsage) << b.file;
    EXPECT_CONTAINS(r.err, b.message);
  }
  const CliRun missing = cli({"run", "listfam", "--lens-file", (dir_ / "nope.txt").string()});
  EXPECT_EQ(missing.status, kExitUsage);
  EXPECT_CONTAINS(missing.err, "--lens-file: ");
  EXPECT_CONTAINS(missing.err, "nope.txt: cannot open the file");
}

TEST_F(CliListFiles, LensAndLensFileExcludeEachOther) {
  const CliRun r = cli({"run", "listfam", "--lens=1,2,3,4", "--lens-file", write("lens.txt", "1 2 3 4\n")});
  EXPECT_EQ(r.status, kExitUsage);
  EXPECT_CONTAINS(r.err, "--lens");
  EXPECT_CONTAINS(r.err, "excludes");
}

TEST_F(CliListFiles, SuiteTakesLensAndLensFile) {
  write("lens.txt", "1 2 3 4\n");
  const std::string suite = write("suite.json", R"({"name": "x", "kernels": ["listfam"], "cases": [
      {"problem": {"b": 4, "lens": [4641, 45118, 1730, 1696]}},
      {"problem": {"b": 4, "lens_file": "lens.txt"}}]})");
  const CliRun r = cli({"suite", suite});
  if (have_gpu()) {
    EXPECT_EQ(r.status, kExitOk) << r.err;
  } else {
    EXPECT_EQ(r.status, kExitSkipped) << r.err;
    EXPECT_CONTAINS(r.err, "no CUDA GPU found");
  }
  const CliRun bad = cli({"suite", write("bad.json", R"({"name": "x", "kernels": ["listfam"],
      "cases": [{"problem": {"b": 4, "lens_file": "missing.txt"}}]})")});
  EXPECT_EQ(bad.status, kExitUsage);
  EXPECT_CONTAINS(bad.err, "cases[0].problem.lens_file");
  EXPECT_CONTAINS(bad.err, "missing.txt: cannot open the file");
}

}  // namespace
}  // namespace cutelab
