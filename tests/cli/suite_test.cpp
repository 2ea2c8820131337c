// Suite files: a valid one parses fully; each kind of malformed one is rejected with a message
// naming the file, the case index and the field.

#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

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

TEST(Suite, ParsesAValidFile) {
  const Suite s = parse_suite(valid_suite(), "s.json");
  EXPECT_EQ(s.name, "mla-small");
  EXPECT_EQ(s.description, "two cases");
  EXPECT_EQ(s.kernels, (std::vector<std::string>{"mla_decode", "baseline/mla_decode/naive"}));
  ASSERT_EQ(s.cases.size(), 2u);
  EXPECT_EQ(s.cases[0].problem["t"], 4096);
  ASSERT_EQ(s.cases[0].anchors.count("NVIDIA H100 80GB HBM3"), 1u);
  EXPECT_DOUBLE_EQ(s.cases[0].anchors.at("NVIDIA H100 80GB HBM3").us, 207.4);
  EXPECT_EQ(s.cases[0].anchors.at("NVIDIA H100 80GB HBM3").source, "FlashMLA 9241ae3, ANCHORS.md");
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
      {"problem value a list",
       [](nlohmann::json& j) {
         j["cases"][1]["problem"]["b"] = {1, 2};
       },
       "cases[1].problem.b: expected an integer"},
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

}  // namespace
}  // namespace cutelab
