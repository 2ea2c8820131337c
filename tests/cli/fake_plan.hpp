#pragma once
// A tiny kernel family that lives only in the CLI test binary, so the CLI can be tested
// without any real kernel (and without a GPU): family "testfam", two designs.

#include <memory>
#include <string>
#include <vector>

#include "cutelab/runtime/plan.hpp"

namespace cutelab::testing {

struct FakeProblem {
  std::int64_t n = 0;
  std::string mode;
  bool flag = false;

  static const Family& family();
  static FakeProblem from(const Problem& p);
};

struct FakeConfig {
  int vec = 1;
  [[nodiscard]] std::string name() const { return "vec" + std::to_string(vec); }
  [[nodiscard]] nlohmann::json to_json() const { return {{"vec", vec}}; }
  [[nodiscard]] std::optional<std::string> validate(const FakeProblem& p, const DeviceInfo&) const;
};

struct FakeWorkspace : Workspace {
  [[nodiscard]] std::vector<OutputSpec> outputs() const override { return {}; }
};

}  // namespace cutelab::testing
