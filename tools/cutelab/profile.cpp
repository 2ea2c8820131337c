#include "profile.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <regex>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cutelab/core/error.hpp"
#include "cutelab/runtime/cache.hpp"
#include "cutelab/runtime/report.hpp"
#include "process.hpp"

namespace cutelab {
namespace {

constexpr const char* kDuration = "gpu__time_duration.sum";
constexpr const char* kTensorPct =
    "sm__pipe_tensor_op_hmma_type_hmma_hgmma_qgmma_cycles_active.avg.pct_of_peak_sustained_active";
constexpr const char* kDramPct = "dram__throughput.avg.pct_of_peak_sustained_elapsed";
constexpr const char* kDramRate = "dram__bytes.sum.per_second";
constexpr const char* kOccupancy = "sm__warps_active.avg.pct_of_peak_sustained_active";
constexpr const char* kRegisters = "launch__registers_per_thread";
constexpr const char* kSmemDynamic = "launch__shared_mem_per_block_dynamic";
constexpr const char* kSmemStatic = "launch__shared_mem_per_block_static";
constexpr const char* kGrid = "launch__grid_size";
constexpr const char* kBlock = "launch__block_size";
constexpr const char* kSmClock = "sm__cycles_elapsed.avg.per_second";
// L2 read requests from the SMs (loads, TMA and bulk copies) against the 128-byte lines read from
// DRAM: ~1 for a stream whose copies cover whole lines, more where copies straddle lines or the
// L2 serves data again (docs/knowledge/anti-patterns/tma-box-rows-across-l2-lines.md).
constexpr const char* kL2ReadRequests = "lts__t_requests_srcunit_tex_op_read.sum";
constexpr const char* kDramReadBytes = "dram__bytes_read.sum";

// NVTX filters that select the launches of the runtime's measurement loop: it pushes a range
// named "cutelab/measure/<kernel>" in the "cutelab" domain (src/runtime/tuner.cpp). In ncu's
// filter syntax '/' separates nested ranges, so the name is matched by a regex without '/'
// first, then literally with '/' escaped.
std::vector<std::string> nvtx_filters(const std::string& kernel) {
  std::string escaped;
  for (char c : "cutelab/measure/" + kernel) {
    if (c == '/' || c == '[' || c == ']' || c == '+' || c == '*' || c == '@' || c == '\\') escaped += '\\';
    escaped += c;
  }
  return {"regex:cutelab@cutelab.measure.*/", "cutelab@" + escaped + "/"};
}

const std::vector<std::string> kSanitizerTools = {"memcheck", "racecheck", "synccheck"};

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Scale of one unit word ("Gbyte", "usecond", "Mhz", "cycle") to its base.
double word_scale(const std::string& word) {
  static const std::map<std::string, double> time = {{"nsecond", 1e-9}, {"usecond", 1e-6}, {"msecond", 1e-3},
                                                     {"second", 1.0},   {"ns", 1e-9},      {"us", 1e-6},
                                                     {"ms", 1e-3},      {"s", 1.0}};
  if (auto it = time.find(word); it != time.end()) return it->second;
  const std::string w = lower(word);
  for (const char* base : {"byte", "hz"}) {
    const std::string b = base;
    if (w.size() >= b.size() && w.compare(w.size() - b.size(), b.size(), b) == 0) {
      const std::string prefix = w.substr(0, w.size() - b.size());
      static const std::map<std::string, double> si = {{"", 1.0},  {"k", 1e3},  {"m", 1e6},
                                                       {"g", 1e9}, {"t", 1e12}, {"p", 1e15}};
      static const std::map<std::string, double> bin = {
          {"ki", 1024.0}, {"mi", 1048576.0}, {"gi", 1073741824.0}, {"ti", 1099511627776.0}};
      if (auto it = si.find(prefix); it != si.end()) return it->second;
      if (auto it = bin.find(prefix); it != bin.end()) return it->second;
    }
  }
  return 1.0;  // cycle, register, thread, block, warp, %, and unitless counts
}

std::string tail_lines(const std::string& text, std::size_t n) {
  std::size_t pos = text.size();
  for (std::size_t count = 0; pos > 0 && count <= n; --pos)
    if (text[pos - 1] == '\n' && ++count > n) break;
  return text.substr(pos);
}

std::string fmt_or_dash(std::optional<double> v, int digits, double scale = 1.0) {
  return v ? format_fixed(*v * scale, digits) : "-";
}

}  // namespace

const std::vector<std::string>& ncu_metrics() {
  static const std::vector<std::string> m = {
      kDuration,   kTensorPct, kDramPct, kDramRate, kOccupancy,      kRegisters,    kSmemDynamic,
      kSmemStatic, kGrid,      kBlock,   kSmClock,  kL2ReadRequests, kDramReadBytes};
  return m;
}

std::optional<double> NcuFunction::get(const std::string& metric) const {
  auto it = metrics.find(metric);
  if (it == metrics.end()) return std::nullopt;
  return it->second;
}

nlohmann::json NcuReport::to_json() const {
  nlohmann::json fs = nlohmann::json::array();
  for (const NcuFunction& f : functions)
    fs.push_back({{"name", f.name},
                  {"launches", f.launches},
                  {"grid", f.grid},
                  {"block", f.block},
                  {"metrics", f.metrics}});
  return {{"functions", fs}, {"missing_metrics", missing}, {"profiled_launches", rows}};
}

std::optional<double> parse_ncu_number(const std::string& text) {
  std::string digits;
  for (char c : text)
    if (c != ',' && c != ' ') digits += c;
  if (digits.empty()) return std::nullopt;
  char* end = nullptr;
  const double v = std::strtod(digits.c_str(), &end);
  if (end == digits.c_str() || *end != '\0' || !std::isfinite(v)) return std::nullopt;
  return v;
}

double ncu_unit_scale(const std::string& unit) {
  const std::size_t slash = unit.find('/');
  if (slash == std::string::npos) return word_scale(unit);
  return word_scale(unit.substr(0, slash)) / word_scale(unit.substr(slash + 1));
}

std::vector<std::string> split_csv_line(const std::string& line) {
  std::vector<std::string> cells;
  std::string cell;
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        cell += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        cell += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      cells.push_back(std::move(cell));
      cell.clear();
    } else if (c != '\r') {
      cell += c;
    }
  }
  cells.push_back(std::move(cell));
  return cells;
}

NcuReport parse_ncu_raw_csv(const std::string& text) {
  std::istringstream in(text);
  std::string line;
  std::vector<std::string> header;
  while (std::getline(in, line)) {
    if (line.rfind("\"ID\",", 0) == 0 || line.rfind("ID,", 0) == 0) {
      header = split_csv_line(line);
      break;
    }
  }
  if (header.empty())
    throw Error(
        "no Nsight Compute CSV found: expected a header row starting with \"ID\" (ncu --csv --page raw)");
  auto column = [&](const std::string& name) -> int {
    auto it = std::find(header.begin(), header.end(), name);
    return it == header.end() ? -1 : static_cast<int>(it - header.begin());
  };
  const int name_col = column("Kernel Name");
  if (name_col < 0) throw Error("Nsight Compute CSV header has no \"Kernel Name\" column");
  const int grid_col = column("Grid Size");
  const int block_col = column("Block Size");

  NcuReport report;
  std::map<std::string, int> metric_cols;
  for (const std::string& m : ncu_metrics()) {
    const int c = column(m);
    if (c < 0) {
      report.missing.push_back(m);
    } else {
      metric_cols[m] = c;
    }
  }
  std::vector<std::string> units(header.size());
  bool have_units = false;
  std::map<std::string, std::map<std::string, int>> counts;  // function -> metric -> samples
  while (std::getline(in, line)) {
    if (line.empty() || line[0] != '"') continue;  // tool messages interleaved after the header
    std::vector<std::string> cells = split_csv_line(line);
    if (cells.size() != header.size()) continue;
    if (!have_units && cells[0].empty()) {  // the units row: no launch ID
      units = cells;
      have_units = true;
      continue;
    }
    ++report.rows;
    const std::string& name = cells[name_col];
    auto it = std::find_if(report.functions.begin(), report.functions.end(),
                           [&](const NcuFunction& f) { return f.name == name; });
    if (it == report.functions.end()) {
      report.functions.push_back(
          {name, 0, grid_col >= 0 ? cells[grid_col] : "", block_col >= 0 ? cells[block_col] : "", {}});
      it = report.functions.end() - 1;
    }
    ++it->launches;
    for (const auto& [metric, col] : metric_cols) {
      const std::optional<double> v = parse_ncu_number(cells[col]);
      if (!v) continue;
      const double base = *v * ncu_unit_scale(units[col]);
      int& n = counts[name][metric];
      double& mean = it->metrics[metric];
      mean += (base - mean) / ++n;  // running mean over this function's launches
    }
  }
  return report;
}

std::string short_function_name(const std::string& name) {
  std::string s = name;
  if (s.rfind("void ", 0) == 0) s = s.substr(5);
  // Cut the parameter list: the last top-level '(' (template arguments may hold parentheses).
  int depth = 0;
  std::size_t cut = std::string::npos;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '<') ++depth;
    if (s[i] == '>') --depth;
    if (s[i] == '(' && depth == 0) {
      cut = i;
      break;
    }
  }
  if (cut != std::string::npos) s = s.substr(0, cut);
  const std::size_t lt = s.find('<');
  if (lt != std::string::npos) s = s.substr(0, lt) + "<...>";
  if (s.size() > 60) s = s.substr(0, 57) + "...";
  return s;
}

std::string render_ncu(const NcuReport& report) {
  Table t;
  t.add_column("function", Table::Align::left);
  for (const char* h : {"launches", "duration µs", "SM MHz", "tensor %", "DRAM %", "DRAM GB/s", "L2 req/line",
                        "occupancy %", "regs/thread", "smem/block", "grid x block"})
    t.add_column(h);
  for (const NcuFunction& f : report.functions) {
    std::string smem = "-";
    const auto dyn = f.get(kSmemDynamic);
    const auto sta = f.get(kSmemStatic);
    if (dyn || sta)
      smem = std::to_string(static_cast<long long>(std::llround(dyn.value_or(0) + sta.value_or(0)))) + " B";
    std::string shape = "-";
    if (!f.grid.empty() && !f.block.empty()) {
      shape = f.grid + " x " + f.block;
    } else if (f.get(kGrid) && f.get(kBlock)) {
      shape =
          std::to_string(std::llround(*f.get(kGrid))) + " x " + std::to_string(std::llround(*f.get(kBlock)));
    }
    std::optional<double> requests_per_line;
    if (const auto req = f.get(kL2ReadRequests), bytes = f.get(kDramReadBytes); req && bytes && *bytes > 0)
      requests_per_line = *req / (*bytes / 128.0);
    t.add_row({short_function_name(f.name), std::to_string(f.launches), fmt_or_dash(f.get(kDuration), 2, 1e6),
               fmt_or_dash(f.get(kSmClock), 0, 1e-6), fmt_or_dash(f.get(kTensorPct), 1),
               fmt_or_dash(f.get(kDramPct), 1), fmt_or_dash(f.get(kDramRate), 0, 1e-9),
               fmt_or_dash(requests_per_line, 2), fmt_or_dash(f.get(kOccupancy), 1),
               fmt_or_dash(f.get(kRegisters), 0), smem, shape});
  }
  std::string out = t.render();
  if (!report.missing.empty()) {
    out += "not reported by this ncu/GPU:";
    for (const std::string& m : report.missing) out += " " + m;
    out += "\n";
  }
  return out;
}

// ---- compute-sanitizer ----------------------------------------------------------------------

std::string SanitizerVerdict::str() const {
  if (!ran) return tool + ": did not run (" + note + ")";
  std::string s = tool + ": ";
  if (errors == 0) {
    s += "clean";
  } else {
    s += std::to_string(errors) + (errors == 1 ? " error" : " errors");
  }
  if (warnings > 0) s += ", " + std::to_string(warnings) + (warnings == 1 ? " warning" : " warnings");
  if (!note.empty()) s += " (" + note + ")";
  return s;
}

nlohmann::json SanitizerVerdict::to_json() const {
  return {{"tool", tool},
          {"ran", ran},
          {"clean", clean},
          {"errors", errors},
          {"warnings", warnings},
          {"exit_code", exit_code},
          {"first_errors", first_errors},
          {"note", note}};
}

SanitizerVerdict parse_sanitizer_output(const std::string& tool, int exit_code, const std::string& output) {
  SanitizerVerdict v;
  v.tool = tool;
  v.exit_code = exit_code;
  static const std::regex error_summary(R"(ERROR SUMMARY:\s*([0-9,]+)\s+errors?)");
  static const std::regex race_summary(
      R"(RACECHECK SUMMARY:\s*([0-9,]+)\s+hazards?\s+displayed\s*\(\s*([0-9,]+)\s+errors?,\s*([0-9,]+)\s+warnings?\))");
  std::smatch m;
  bool summary = false;
  std::istringstream in(output);
  std::string line;
  while (std::getline(in, line)) {
    if (std::regex_search(line, m, race_summary)) {
      summary = true;
      v.errors = static_cast<long>(parse_ncu_number(m[2].str()).value_or(0));
      v.warnings = static_cast<long>(parse_ncu_number(m[3].str()).value_or(0));
    } else if (std::regex_search(line, m, error_summary)) {
      summary = true;
      v.errors = std::max(v.errors, static_cast<long>(parse_ncu_number(m[1].str()).value_or(0)));
    } else if (line.rfind("========= ", 0) == 0 && v.first_errors.size() < 8) {
      const std::string body = line.substr(10);
      const bool starts_record = !body.empty() && body[0] != ' ' &&
                                 body.rfind("Saved host backtrace", 0) != 0 &&
                                 body.rfind("Host Frame", 0) != 0 && body.rfind("COMPUTE-SANITIZER", 0) != 0;
      if (starts_record &&
          (body.find("Invalid") != std::string::npos || body.find("rror") != std::string::npos ||
           body.find("hazard") != std::string::npos || body.find("Race") != std::string::npos ||
           body.find("Barrier") != std::string::npos || body.find("Uninitialized") != std::string::npos))
        v.first_errors.push_back(body);
    }
  }
  v.ran = summary;
  if (!summary) {
    v.note = exit_code == 127 ? "compute-sanitizer could not start the program"
                              : "no summary printed; exit status " + std::to_string(exit_code);
    return v;
  }
  if (exit_code != 0 && exit_code != 99)
    v.note = "the run itself exited with status " + std::to_string(exit_code);
  v.clean = v.errors == 0 && exit_code == 0;
  return v;
}

// ---- orchestration --------------------------------------------------------------------------

std::vector<std::string> problem_flags(const Problem& problem) {
  std::vector<std::string> flags;
  for (const auto& [name, value] : problem.values()) flags.push_back("--" + name + "=" + param_text(value));
  return flags;
}

namespace {

std::vector<std::string> child_command(const RunArgs& a, const Problem& problem) {
  std::vector<std::string> cmd = {self_exe(), "run", a.kernel};
  for (const std::string& f : problem_flags(problem)) cmd.push_back(f);
  cmd.push_back("--seed=" + std::to_string(a.m.seed));
  return cmd;
}

std::string report_path_for(const RunArgs& a) {
  if (!a.m.json.empty()) {
    std::filesystem::path p(a.m.json);
    return (p.parent_path() / p.stem()).string() + ".ncu-rep";
  }
  std::string name = a.kernel;
  std::replace(name.begin(), name.end(), '/', '_');
  return (std::filesystem::path(TuneCache::default_dir()) / "ncu" / (name + ".ncu-rep")).string();
}

}  // namespace

int profile_with_ncu(const RunArgs& a, const RunResult& r, nlohmann::json* report, Io io) {
  if (!r.config) {
    io.err << "--prof=ncu: no config was chosen, so there is nothing to profile\n";
    return kExitRuntimeError;
  }
  const std::optional<std::string> ncu = find_tool(
      "ncu", {"/usr/local/cuda/bin", "/opt/nvidia/nsight-compute/*", "/usr/local/NVIDIA-Nsight-Compute*"});
  if (!ncu) {
    io.err << "--prof=ncu: Nsight Compute (ncu) not found on PATH, in /usr/local/cuda/bin or in "
              "/opt/nvidia/nsight-compute/<version>/; install Nsight Compute or put ncu on PATH\n";
    return kExitRuntimeError;
  }
  // Every function of one call, a few calls: ncu replays each launch once per metric pass.
  const std::size_t functions = std::max<std::size_t>(1, r.resources.size());
  const std::string launch_count = std::to_string(3 * functions);
  const std::string rep = report_path_for(a);
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(rep).parent_path(), ec);
  const std::string rep_base = rep.substr(0, rep.size() - std::string(".ncu-rep").size());

  std::vector<std::string> filters;
  if (const char* env = std::getenv("CUTELAB_NCU_NVTX_INCLUDE"); env && *env) {
    filters.push_back(env);
  } else {
    filters = nvtx_filters(r.kernel);
  }
  std::vector<std::string> metrics = ncu_metrics();
  for (std::size_t f = 0; f < filters.size(); ++f) {
    const std::string& filter = filters[f];
    std::string metric_list;
    for (const std::string& m : metrics) metric_list += (metric_list.empty() ? "" : ",") + m;
    std::vector<std::string> cmd = {*ncu,
                                    "--clock-control",
                                    "none",
                                    "--nvtx",
                                    "--nvtx-include",
                                    filter,
                                    "--launch-count",
                                    launch_count,
                                    "--metrics",
                                    metric_list,
                                    "--export",
                                    rep_base,
                                    "--force-overwrite"};
    for (const std::string& c : child_command(a, r.problem)) cmd.push_back(c);
    for (const char* c : {"--prof=annotation", "--no-check", "--max-time=0", "--min-samples=1"})
      cmd.push_back(c);
    cmd.push_back("--config=" + r.config->name);

    io.err << "ncu: profiling " << r.kernel << " config " << r.config->name << " (up to " << launch_count
           << " launches inside NVTX range " << filter << ")\n";
    if (std::getenv("CUTELAB_VERBOSE")) io.err << "ncu: " << shell_join(cmd) << "\n";
    std::filesystem::remove(rep, ec);
    const ProcessResult prof = run_process(cmd);
    if (!prof.started || prof.exit_code != 0) {
      // A metric this ncu or GPU does not know fails the whole run: drop it and try again.
      std::vector<std::string> known;
      for (const std::string& m : metrics)
        if (prof.output.find(m) == std::string::npos) known.push_back(m);
      const bool metric_error =
          prof.output.find("etric") != std::string::npos && !known.empty() && known.size() < metrics.size();
      if (prof.started && metric_error) {
        io.err << "ncu: dropping metrics it does not know:";
        for (const std::string& m : metrics)
          if (std::find(known.begin(), known.end(), m) == known.end()) io.err << " " << m;
        io.err << "\n";
        metrics = known;
        --f;  // the same filter again
        continue;
      }
      io.err << "--prof=ncu: ncu failed (exit status " << prof.exit_code << ")"
             << (prof.start_error.empty() ? "" : ": " + prof.start_error) << "\n"
             << tail_lines(prof.output, 25);
      if (prof.output.find("ERR_NVGPUCTRPERM") != std::string::npos)
        io.err << "ncu has no permission to read GPU performance counters on this machine "
                  "(NVreg_RestrictProfilingToAdminUsers); run as an administrator or ask for access\n";
      return kExitRuntimeError;
    }
    NcuReport parsed;
    if (std::filesystem::exists(rep, ec)) {
      const ProcessResult csv = run_process(
          {*ncu, "--import", rep, "--csv", "--page", "raw", "--print-units", "base"}, Stderr::inherit);
      try {
        parsed = parse_ncu_raw_csv(csv.output);
      } catch (const Error& e) {
        io.err << "--prof=ncu: could not read ncu's report " << rep << ": " << e.message() << "\n"
               << tail_lines(csv.output, 10);
        return kExitRuntimeError;
      }
    }
    if (parsed.rows == 0) {
      io.err << "ncu: no kernel matched NVTX filter '" << filter << "'; its output ended with:\n"
             << tail_lines(prof.output, 6);
      continue;
    }
    io.out << "\nNsight Compute (clocks not locked; " << parsed.rows << " launches profiled; report " << rep
           << ")\n"
           << render_ncu(parsed);
    if (report) {
      (*report)["ncu"] = parsed.to_json();
      (*report)["ncu"]["report_file"] = rep;
      (*report)["ncu"]["command"] = shell_join(cmd);
    }
    return kExitOk;
  }
  io.err << "--prof=ncu: ncu profiled no kernel (set CUTELAB_NCU_NVTX_INCLUDE to another NVTX filter)\n";
  return kExitRuntimeError;
}

int profile_with_sanitizer(const RunArgs& a, const Problem& problem, nlohmann::json* report, Io io) {
  const std::optional<std::string> tool = find_tool(
      "compute-sanitizer",
      {"/usr/local/cuda/bin", "/usr/local/cuda/compute-sanitizer", "/opt/nvidia/compute-sanitizer*"});
  if (!tool) {
    io.err << "--prof=sanitize: compute-sanitizer not found on PATH or in /usr/local/cuda/bin; it ships with "
              "the CUDA toolkit\n";
    return kExitRuntimeError;
  }
  std::vector<std::string> child = child_command(a, problem);
  for (const char* c : {"--check", "--no-measure", "--max-time=0", "--min-samples=1"}) child.push_back(c);
  if (a.config) child.push_back("--config=" + *a.config);
  if (a.m.tune) child.push_back("--tune");

  io.out << "compute-sanitizer on " << a.kernel << " " << problem.key() << "\n";
  nlohmann::json runs = nlohmann::json::array();
  int status = kExitOk;
  auto raise = [&status](int s) {
    // Severity order: check failed > runtime error > skipped > ok.
    auto rank = [](int x) {
      return x == kExitCheckFailed ? 3 : x == kExitRuntimeError ? 2 : x == kExitSkipped ? 1 : 0;
    };
    if (rank(s) > rank(status)) status = s;
  };
  for (const std::string& t : kSanitizerTools) {
    ProgressLine progress;
    progress.update("sanitize: " + t + " ...");
    std::vector<std::string> cmd = {*tool, "--tool", t, "--error-exitcode", "99"};
    if (t == "racecheck") {
      cmd.push_back("--racecheck-report");
      cmd.push_back("all");  // hazards and their analysis, warnings included
    }
    cmd.insert(cmd.end(), child.begin(), child.end());
    const ProcessResult res = run_process(cmd);
    progress.done();
    SanitizerVerdict v = parse_sanitizer_output(t, res.started ? res.exit_code : -1, res.output);
    if (!res.started) v.note = res.start_error;
    io.out << "  " << v.str() << "\n";
    for (const std::string& e : v.first_errors) io.out << "      " << e << "\n";
    if (v.errors > 0) {
      raise(kExitCheckFailed);
    } else if (v.ran && v.exit_code == kExitCheckFailed) {
      raise(kExitCheckFailed);  // clean under the tool, but the result was wrong
    } else if (v.ran && v.exit_code == kExitSkipped) {
      raise(kExitSkipped);
    } else if (!v.ran || v.exit_code != 0) {
      raise(kExitRuntimeError);
    }
    if (!v.ran || v.exit_code != 0) io.out << tail_lines(res.output, 12);
    nlohmann::json j = v.to_json();
    j["command"] = shell_join(cmd);
    j["output_tail"] = tail_lines(res.output, 60);
    runs.push_back(j);
  }
  if (report) (*report)["sanitize"] = runs;
  return status;
}

}  // namespace cutelab
