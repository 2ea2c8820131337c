#pragma once
// Suite files: named problem lists for `cutelab suite` (format in bench/suites/README.md).

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cutelab/runtime/report.hpp"

namespace cutelab {

struct SuiteCase {
  std::string label;                      // optional, for people
  nlohmann::json problem;                 // parameter name -> number | bool | string
  std::vector<std::string> kernels;       // when not empty: run this case only for these kernels
  std::map<std::string, RowAnchors> anchors;  // device name -> published times (one flush, one rotating)
};

struct Suite {
  std::string name;
  std::string description;
  std::string origin;                // the file it came from
  std::vector<std::string> kernels;  // registry names or families
  std::vector<SuiteCase> cases;
};

// Validates the structure; throws UsageError naming the file and the field,
// e.g. "suite x.json: cases[2].anchors.H100.us: expected a positive number, found \"fast\"".
[[nodiscard]] Suite parse_suite(const nlohmann::json& j, const std::string& origin);
// Reads and parses a file; unreadable files and invalid JSON throw UsageError too.
[[nodiscard]] Suite load_suite(const std::string& path);

}  // namespace cutelab
