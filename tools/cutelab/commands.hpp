#pragma once
// The subcommands behind run_cli(): each takes its parsed arguments and returns an exit status.

#include <cstdint>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "cli.hpp"
#include "cutelab/runtime/ceilings.hpp"
#include "cutelab/runtime/device.hpp"
#include "cutelab/runtime/tuner.hpp"

namespace cutelab {

struct Io {
  std::ostream& out;
  std::ostream& err;
};

struct ListArgs {
  std::string json;
  bool names = false;  // one registry name per line, for scripts
  std::vector<std::string> command_line;
};

struct DeviceArgs {
  bool ceilings = false;
  std::string json;
  std::vector<std::string> command_line;
};

// Options shared by `run` and `suite`.
struct MeasureArgs {
  bool check = true;
  bool tune = false;
  std::uint64_t seed = 1;
  std::optional<double> max_time;
  std::optional<int> min_samples;
  bool measure = true;
  std::string timing = "flush";  // flush | rotating | both (`suite` defaults to both)
  bool floor = false;            // the read floor beside the flush figure
  std::string json;
};

struct RunArgs {
  std::string kernel;
  std::map<std::string, std::string> params;  // problem flags the user gave, as text
  std::optional<std::string> config;
  std::string prof = "disabled";  // disabled | annotation | ncu | sanitize
  MeasureArgs m;
  std::vector<std::string> command_line;
};

struct SuiteArgs {
  std::string file;
  std::vector<std::string> kernels;  // overrides the suite's list when not empty
  MeasureArgs m;
  std::vector<std::string> command_line;
};

[[nodiscard]] int cmd_list(const ListArgs& a, Io io);
[[nodiscard]] int cmd_device(const DeviceArgs& a, Io io);
[[nodiscard]] int cmd_run(const RunArgs& a, Io io);
[[nodiscard]] int cmd_suite(const SuiteArgs& a, Io io);

// Shared by the commands ------------------------------------------------------------------

// The device to run on, or an exit status (3 with "no CUDA GPU found: ..." on `io.err`).
struct DeviceOrExit {
  std::optional<DeviceInfo> dev;
  int exit_status = 0;
};
[[nodiscard]] DeviceOrExit open_device(Io io);

// Cached ceilings, measured (and cached) when absent; nothing (with a warning) on failure.
[[nodiscard]] std::optional<Ceilings> ceilings_for(const DeviceInfo& dev, Io io);

[[nodiscard]] RunOptions run_options(const MeasureArgs& m);
[[nodiscard]] int exit_status_of(const RunResult& r) noexcept;

// Adds the provenance every JSON report carries: command line, git commit, UTC time.
void add_provenance(nlohmann::json& j, const std::vector<std::string>& command_line);
void write_report_json(const std::string& path, const nlohmann::json& j, Io io);

}  // namespace cutelab
