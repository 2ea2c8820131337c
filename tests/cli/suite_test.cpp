// Suite files: a valid one parses fully; each kind of malformed one is rejected with a message
// naming the file, the case index and the field.

#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "cutelab/core/error.hpp"
#include "suite.hpp"

namespace cutelab {
namespace {

nlohmann::json valid_suite() {
  return nlohmann::json::parse(R"({
    "name": "mla-small",
    "description": "two cases",
    "kernels": ["mla_decode", "baseline/mla_decode/naive"],
    "cases": [
      {"problem": {"b": 128, "s": 1, "t": 4096, "h": 16},
       "anchors": {"NVIDIA H100 80GB HBM3": {"us": 207.4, "source": "FlashMLA 9241ae3, ANCHORS.md"}}},
      {"label": "causal", "problem": {"b": 8, "s": 2, "causal": true, "dtype": "bf16"}, "kernels": ["mla_decode"]}
    ]})");
}

std::string error_of(const nlohmann::json& j) {
  try {
    (void)parse_suite(j, "s.json");
  } catch (const UsageError& e) {
    return e.message();
  }
  return "(no error)";
}

// A device may carry one anchor of each method, as a list.
TEST(Suite, AnchorsOfBothMethods) {
  nlohmann::json j = valid_suite();
  const nlohmann::json flush = j["cases"][0]["anchors"]["NVIDIA H100 80GB HBM3"];
  nlohmann::json rotating = {{"us", 180.0}, {"source", "FlashMLA, rotating"}, {"timing", "rotating"}};
  j["cases"][0]["anchors"]["NVIDIA H100 80GB HBM3"] = {flush, rotating};
  const RowAnchors both = parse_suite(j, "s.json").cases[0].anchors.at("NVIDIA H100 80GB HBM3");
  ASSERT_EQ(both.size(), 2u);
  EXPECT_FALSE(both[0].rotating);
  EXPECT_TRUE(both[1].rotating);
  EXPECT_DOUBLE_EQ(both[1].us, 180.0);

  j["cases"][0]["anchors"]["NVIDIA H100 80GB HBM3"] = {rotating, rotating};
  EXPECT_NE(error_of(j).find("cases[0].anchors.NVIDIA H100 80GB HBM3[1].timing: a second rotating anchor"),
            std::string::npos)
      << error_of(j);
  j["cases"][0]["anchors"]["NVIDIA H100 80GB HBM3"] = {flush, 3};
  EXPECT_NE(error_of(j).find("cases[0].anchors.NVIDIA H100 80GB HBM3[1]: expected {"), std::string::npos)
      << error_of(j);
}

// The suites the lab commits load as they are; the MLA suite carries ANCHORS.md's rotating figures.
TEST(Suite, EveryCommittedSuiteLoads) {
  int files = 0;
  for (const auto& e :
       std::filesystem::directory_iterator(std::string(CUTELAB_SOURCE_DIR) + "/bench/suites")) {
    if (e.path().extension() != ".json") continue;
    ++files;
    EXPECT_NO_THROW((void)load_suite(e.path().string())) << e.path();
  }
  EXPECT_GE(files, 5);
  const Suite mla = load_suite(std::string(CUTELAB_SOURCE_DIR) + "/bench/suites/mla_decode.json");
  int rotating = 0;
  for (const SuiteCase& c : mla.cases)
    if (auto it = c.anchors.find("NVIDIA H200"); it != c.anchors.end())
      for (const Anchor& a : it->second) rotating += a.rotating;
  EXPECT_EQ(rotating, 7);
}

TEST(Suite, ParsesAValidFile) {
  const Suite s = parse_suite(valid_suite(), "s.json");
  EXPECT_EQ(s.name, "mla-small");
  EXPECT_EQ(s.description, "two cases");
  EXPECT_EQ(s.kernels, (std::vector<std::string>{"mla_decode", "baseline/mla_decode/naive"}));
  ASSERT_EQ(s.cases.size(), 2u);
  EXPECT_EQ(s.cases[0].problem["t"], 4096);
  ASSERT_EQ(s.cases[0].anchors.count("NVIDIA H100 80GB HBM3"), 1u);
  ASSERT_EQ(s.cases[0].anchors.at("NVIDIA H100 80GB HBM3").size(), 1u);
  const Anchor& a = s.cases[0].anchors.at("NVIDIA H100 80GB HBM3")[0];
  EXPECT_DOUBLE_EQ(a.us, 207.4);
  EXPECT_EQ(a.source, "FlashMLA 9241ae3, ANCHORS.md");
  EXPECT_FALSE(a.rotating);  // flush unless it says otherwise
  EXPECT_EQ(s.cases[1].label, "causal");
  EXPECT_TRUE(s.cases[1].anchors.empty());
  EXPECT_TRUE(s.cases[0].kernels.empty());
  EXPECT_EQ(s.cases[1].kernels, (std::vector<std::string>{"mla_decode"}));
}

struct Malformed {
  const char* what;
  std::function<void(nlohmann::json&)> edit;
  const char* expected;  // a part of the message
};

TEST(Suite, MalformedFilesNameTheField) {
  const std::vector<Malformed> cases = {
      {"not an object", [](nlohmann::json& j) { j = nlohmann::json::array(); },
       "(top level): expected an object"},
      {"no name", [](nlohmann::json& j) { j.erase("name"); }, "s.json: name: missing"},
      {"unknown top field", [](nlohmann::json& j) { j["kernel"] = "x"; }, "kernel: unknown field"},
      {"kernels not a list", [](nlohmann::json& j) { j["kernels"] = "mla_decode"; },
       "kernels: expected a non-empty list"},
      {"empty kernels", [](nlohmann::json& j) { j["kernels"] = nlohmann::json::array(); },
       "kernels: expected a non-empty list"},
      {"kernel not a string", [](nlohmann::json& j) { j["kernels"][1] = 3; },
       "kernels[1]: expected a kernel name"},
      {"no cases", [](nlohmann::json& j) { j.erase("cases"); }, "cases: missing"},
      {"case not an object", [](nlohmann::json& j) { j["cases"][1] = 7; }, "cases[1]: expected an object"},
      {"problem missing", [](nlohmann::json& j) { j["cases"][1].erase("problem"); },
       "cases[1].problem: missing"},
      {"problem not an object", [](nlohmann::json& j) { j["cases"][0]["problem"] = "b=1"; },
       "cases[0].problem: expected an object"},
      {"problem value an object",
       [](nlohmann::json& j) {
         j["cases"][1]["problem"]["b"] = {{"x", 1}};
       },
       "cases[1].problem.b: expected an integer"},
      {"problem list of strings",
       [](nlohmann::json& j) {
         j["cases"][1]["problem"]["lens"] = {1, "x"};
       },
       "cases[1].problem.lens[1]: expected an integer, found string \"x\""},
      {"problem list empty",
       [](nlohmann::json& j) { j["cases"][1]["problem"]["lens"] = nlohmann::json::array(); },
       "cases[1].problem.lens: expected a non-empty list of integers"},
      {"problem list file not a string", [](nlohmann::json& j) { j["cases"][0]["problem"]["lens_file"] = 3; },
       "cases[0].problem.lens_file: expected the name of a list file"},
      {"problem value a float", [](nlohmann::json& j) { j["cases"][0]["problem"]["t"] = 4096.5; },
       "cases[0].problem.t"},
      {"case kernels not a list", [](nlohmann::json& j) { j["cases"][1]["kernels"] = "x"; },
       "cases[1].kernels: expected a non-empty list"},
      {"case kernel not a string", [](nlohmann::json& j) { j["cases"][1]["kernels"] = {1}; },
       "cases[1].kernels[0]: expected a kernel name"},
      {"typo in case field", [](nlohmann::json& j) { j["cases"][1]["anchor"] = 1; },
       "cases[1].anchor: unknown field"},
      {"anchors not an object", [](nlohmann::json& j) { j["cases"][0]["anchors"] = 207.4; },
       "cases[0].anchors: expected an object"},
      {"anchor us negative",
       [](nlohmann::json& j) { j["cases"][0]["anchors"]["NVIDIA H100 80GB HBM3"]["us"] = -1; },
       "cases[0].anchors.NVIDIA H100 80GB HBM3.us: expected a positive number"},
      {"anchor us text",
       [](nlohmann::json& j) { j["cases"][0]["anchors"]["NVIDIA H100 80GB HBM3"]["us"] = "fast"; },
       "found string \"fast\""},
      {"anchor timing unknown",
       [](nlohmann::json& j) { j["cases"][0]["anchors"]["NVIDIA H100 80GB HBM3"]["timing"] = "graph"; },
       "cases[0].anchors.NVIDIA H100 80GB HBM3.timing: expected \"flush\" or \"rotating\", found string "
       "\"graph\""},
      {"anchor without source",
       [](nlohmann::json& j) { j["cases"][0]["anchors"]["NVIDIA H100 80GB HBM3"].erase("source"); },
       "cases[0].anchors.NVIDIA H100 80GB HBM3.source: missing"},
  };
  for (const Malformed& m : cases) {
    nlohmann::json j = valid_suite();
    m.edit(j);
    const std::string message = error_of(j);
    EXPECT_NE(message.find(m.expected), std::string::npos) << m.what << ": got '" << message << "'";
    EXPECT_NE(message.find("s.json"), std::string::npos) << m.what << ": got '" << message << "'";
  }
}

TEST(Suite, LoadReportsInvalidJson) {
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("cutelab-suite-test-" + std::to_string(::getpid()) + ".json"))
                               .string();
  std::ofstream(path) << "{\"name\": \"x\", \"kernels\": [\"a\"],";
  try {
    (void)load_suite(path);
    ADD_FAILURE() << "no error";
  } catch (const UsageError& e) {
    EXPECT_NE(e.message().find("not valid JSON"), std::string::npos) << e.message();
    EXPECT_NE(e.message().find(path), std::string::npos) << e.message();
  }
  std::filesystem::remove(path);
}

// ---- list parameters: "lens": [...] inline, "lens_file": a file beside the suite ---------------

class SuiteListFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("cutelab-suite-test-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_ / "traces");
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string write(const std::string& name, const std::string& text) const {
    const std::string path = (dir_ / name).string();
    std::ofstream(path) << text;
    return path;
  }
  std::string suite_with(const nlohmann::json& problem) const {
    return write(
        "suite.json",
        nlohmann::json{{"name", "traces"}, {"kernels", {"mla_decode"}}, {"cases", {{{"problem", problem}}}}}
            .dump());
  }
  std::string load_error(const std::string& path) const {
    try {
      (void)load_suite(path);
    } catch (const UsageError& e) {
      return e.message();
    }
    return "(no error)";
  }
  std::filesystem::path dir_;
};

TEST_F(SuiteListFiles, LensArrayIsKept) {
  const Suite s =
      load_suite(suite_with({{"b", 4}, {"s", 4}, {"h", 16}, {"lens", {4641, 45118, 1730, 1696}}}));
  ASSERT_EQ(s.cases.size(), 1u);
  EXPECT_EQ(s.cases[0].problem["lens"], nlohmann::json({4641, 45118, 1730, 1696}));
  EXPECT_EQ(s.cases[0].problem["b"], 4);
}

TEST_F(SuiteListFiles, LensFileIsReadRelativeToTheSuite) {
  write("traces/step17.txt", "# b = 4\n4641, 45118\n1730\n1696\n");
  const Suite s = load_suite(suite_with({{"b", 4}, {"lens_file", "traces/step17.txt"}}));
  ASSERT_EQ(s.cases.size(), 1u);
  EXPECT_EQ(s.cases[0].problem["lens"], nlohmann::json({4641, 45118, 1730, 1696}));
  EXPECT_FALSE(s.cases[0].problem.contains("lens_file"));
  // An absolute path is taken as it is.
  const std::string absolute = write("abs.txt", "1 2");
  EXPECT_EQ(load_suite(suite_with({{"lens_file", absolute}})).cases[0].problem["lens"],
            nlohmann::json({1, 2}));
}

TEST_F(SuiteListFiles, BadLensFilesNameTheCaseTheFileAndTheLine) {
  write("traces/bad.txt", "1 2\n3 four\n");
  const std::string bad = load_error(suite_with({{"lens_file", "traces/bad.txt"}}));
  EXPECT_NE(bad.find("cases[0].problem.lens_file: "), std::string::npos) << bad;
  EXPECT_NE(bad.find("bad.txt:2: 'four' is not an integer"), std::string::npos) << bad;
  const std::string missing = load_error(suite_with({{"lens_file", "traces/none.txt"}}));
  EXPECT_NE(missing.find("none.txt: cannot open the file"), std::string::npos) << missing;
  write("traces/empty.txt", "# no lengths\n");
  const std::string empty = load_error(suite_with({{"lens_file", "traces/empty.txt"}}));
  EXPECT_NE(empty.find("no integers"), std::string::npos) << empty;
  write("traces/ok.txt", "1 2");
  const std::string both = load_error(suite_with({{"lens", {1, 2}}, {"lens_file", "traces/ok.txt"}}));
  EXPECT_NE(both.find("cases[0].problem.lens_file: excludes cases[0].problem.lens"), std::string::npos)
      << both;
}

}  // namespace
}  // namespace cutelab
