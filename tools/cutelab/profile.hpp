#pragma once
// --prof=ncu and --prof=sanitize: the child command lines, and parsers for what Nsight Compute
// and compute-sanitizer print. The parsers are pure functions so the host tests cover them.

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "commands.hpp"

namespace cutelab {

// ---- Nsight Compute ------------------------------------------------------------------------

// The metrics --prof=ncu collects (names as ncu spells them).
[[nodiscard]] const std::vector<std::string>& ncu_metrics();

// One profiled function: its launches' metrics averaged, in base units (seconds, bytes,
// bytes/s, Hz, percent, plain counts).
struct NcuFunction {
  std::string name;  // as ncu printed it
  int launches = 0;
  std::string grid;  // "(132, 1, 1)" when ncu printed it
  std::string block;
  std::map<std::string, double> metrics;

  [[nodiscard]] std::optional<double> get(const std::string& metric) const;
};

struct NcuReport {
  std::vector<NcuFunction> functions;  // in order of first launch
  std::vector<std::string> missing;    // requested metrics absent from the CSV
  int rows = 0;                        // profiled launches

  [[nodiscard]] nlohmann::json to_json() const;
};

// "1,234.5" -> 1234.5; nothing for "n/a", "" and other non-numbers.
[[nodiscard]] std::optional<double> parse_ncu_number(const std::string& text);
// Factor from `unit` to its base unit: "usecond" -> 1e-6, "Gbyte/second" -> 1e9, "cycle/nsecond" -> 1e9.
[[nodiscard]] double ncu_unit_scale(const std::string& unit);
// Splits one CSV line (RFC 4180 quoting).
[[nodiscard]] std::vector<std::string> split_csv_line(const std::string& line);
// Parses `ncu --csv --page raw` output: a header row of column names ("ID", ..., "Kernel Name",
// ..., metric names), a row of units, then one row per profiled launch. Lines before the header
// (the tool's own messages, the application's output) are skipped. Throws Error when there is
// no header.
[[nodiscard]] NcuReport parse_ncu_raw_csv(const std::string& text);
[[nodiscard]] std::string render_ncu(const NcuReport& report);
// Shortens "void ns::kernel<Cfg, 3>(Params)" to "ns::kernel<...>".
[[nodiscard]] std::string short_function_name(const std::string& name);

// ---- compute-sanitizer ----------------------------------------------------------------------

struct SanitizerVerdict {
  std::string tool;  // memcheck | racecheck | synccheck
  bool ran = false;  // the tool started and printed its summary
  bool clean = false;
  long errors = 0;
  long warnings = 0;  // racecheck only
  int exit_code = -1;
  std::vector<std::string> first_errors;  // the first few error lines
  std::string note;                       // when it did not run cleanly: why

  [[nodiscard]] std::string str() const;  // "memcheck: clean" / "racecheck: 2 errors"
  [[nodiscard]] nlohmann::json to_json() const;
};

// `exit_code` is the sanitizer's (99 when it found errors, as --error-exitcode 99 asks).
[[nodiscard]] SanitizerVerdict parse_sanitizer_output(const std::string& tool, int exit_code,
                                                      const std::string& output);

// ---- orchestration (cmd_run calls these after its own checks) -------------------------------

// Problem flags that reproduce `problem` exactly, "--name=value" each.
[[nodiscard]] std::vector<std::string> problem_flags(const Problem& problem);

// Re-runs this executable under Nsight Compute on the chosen config and prints the table.
[[nodiscard]] int profile_with_ncu(const RunArgs& a, const RunResult& r, nlohmann::json* report, Io io);
// Runs this executable under memcheck, racecheck and synccheck on `problem`.
[[nodiscard]] int profile_with_sanitizer(const RunArgs& a, const Problem& problem, nlohmann::json* report,
                                         Io io);

}  // namespace cutelab
