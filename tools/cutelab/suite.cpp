#include "suite.hpp"

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string_view>

#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "cutelab/core/error.hpp"
#include "cutelab/runtime/problem.hpp"
#include "cutelab/runtime/registry.hpp"

namespace cutelab {
namespace {

std::string found(const nlohmann::json& v) {
  std::string text = v.dump();
  if (text.size() > 40) text = text.substr(0, 37) + "...";
  return std::string(v.type_name()) + " " + text;
}

[[noreturn]] void fail(const std::string& origin, const std::string& field, const std::string& what) {
  throw UsageError("suite " + origin + ": " + field + ": " + what);
}

void only_keys(const nlohmann::json& obj, const std::set<std::string>& allowed, const std::string& origin,
               const std::string& field) {
  for (const auto& [key, value] : obj.items()) {
    if (allowed.count(key)) continue;
    std::string list;
    for (const std::string& a : allowed) list += (list.empty() ? "" : ", ") + a;
    fail(origin, field.empty() ? key : field + "." + key, "unknown field (expected one of: " + list + ")");
  }
}

std::string required_string(const nlohmann::json& obj, const std::string& key, const std::string& origin,
                            const std::string& field) {
  const std::string where = field.empty() ? key : field + "." + key;
  if (!obj.contains(key)) fail(origin, where, "missing (expected a string)");
  const nlohmann::json& v = obj.at(key);
  if (!v.is_string() || v.get<std::string>().empty())
    fail(origin, where, "expected a non-empty string, found " + found(v));
  return v.get<std::string>();
}

// A list file named in a suite is relative to the suite file's folder.
std::string beside(const std::string& origin, const std::string& path) {
  const std::filesystem::path p(path);
  if (p.is_absolute()) return path;
  return (std::filesystem::path(origin).parent_path() / p).lexically_normal().string();
}

// The problem's fields: integers, booleans, strings, lists of integers, and X_file (a list
// file for the list parameter X), which is read here and replaced by X.
nlohmann::json problem_fields(const nlohmann::json& problem, const std::string& origin,
                              const std::string& at) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [key, value] : problem.items()) {
    const std::string where = at + "." + key;
    constexpr std::string_view kFile = "_file";
    if (key.size() > kFile.size() && key.ends_with(kFile)) {
      const std::string list = key.substr(0, key.size() - kFile.size());
      if (problem.contains(list)) fail(origin, where, "excludes " + at + "." + list + " (give one of them)");
      if (!value.is_string() || value.get<std::string>().empty())
        fail(origin, where, "expected the name of a list file, found " + found(value));
      try {
        out[list] = read_integer_list_file(beside(origin, value.get<std::string>()));
      } catch (const UsageError& e) {
        fail(origin, where, e.message());
      }
      continue;
    }
    if (value.is_array()) {
      if (value.empty()) fail(origin, where, "expected a non-empty list of integers, found " + found(value));
      for (std::size_t i = 0; i < value.size(); ++i)
        if (!value[i].is_number_integer())
          fail(origin, where + "[" + std::to_string(i) + "]",
               "expected an integer, found " + found(value[i]));
    } else if (!value.is_number_integer() && !value.is_boolean() && !value.is_string()) {
      fail(origin, where,
           "expected an integer, a boolean, a string or a list of integers, found " + found(value));
    }
    out[key] = value;
  }
  return out;
}

}  // namespace

Suite parse_suite(const nlohmann::json& j, const std::string& origin) {
  if (!j.is_object()) fail(origin, "(top level)", "expected an object, found " + found(j));
  only_keys(j, {"name", "description", "kernels", "cases"}, origin, "");
  Suite s;
  s.origin = origin;
  s.name = required_string(j, "name", origin, "");
  if (j.contains("description")) {
    if (!j["description"].is_string())
      fail(origin, "description", "expected a string, found " + found(j["description"]));
    s.description = j["description"].get<std::string>();
  }

  if (!j.contains("kernels")) fail(origin, "kernels", "missing (expected a list of kernel names)");
  const nlohmann::json& kernels = j["kernels"];
  if (!kernels.is_array() || kernels.empty())
    fail(origin, "kernels", "expected a non-empty list of kernel names, found " + found(kernels));
  for (std::size_t i = 0; i < kernels.size(); ++i) {
    if (!kernels[i].is_string() || kernels[i].get<std::string>().empty())
      fail(origin, "kernels[" + std::to_string(i) + "]",
           "expected a kernel name, found " + found(kernels[i]));
    s.kernels.push_back(kernels[i].get<std::string>());
  }

  if (!j.contains("cases")) fail(origin, "cases", "missing (expected a list of {\"problem\": {...}})");
  const nlohmann::json& cases = j["cases"];
  if (!cases.is_array() || cases.empty())
    fail(origin, "cases", "expected a non-empty list, found " + found(cases));
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const std::string at = "cases[" + std::to_string(i) + "]";
    const nlohmann::json& c = cases[i];
    if (!c.is_object()) fail(origin, at, "expected an object with a \"problem\", found " + found(c));
    only_keys(c, {"label", "problem", "kernels", "anchors"}, origin, at);
    SuiteCase sc;
    if (c.contains("label")) {
      if (!c["label"].is_string())
        fail(origin, at + ".label", "expected a string, found " + found(c["label"]));
      sc.label = c["label"].get<std::string>();
    }
    if (!c.contains("problem"))
      fail(origin, at + ".problem", "missing (expected an object of problem parameters)");
    if (!c["problem"].is_object())
      fail(origin, at + ".problem", "expected an object of problem parameters, found " + found(c["problem"]));
    sc.problem = problem_fields(c["problem"], origin, at + ".problem");
    if (c.contains("kernels")) {
      const nlohmann::json& ks = c["kernels"];
      if (!ks.is_array() || ks.empty())
        fail(origin, at + ".kernels", "expected a non-empty list of kernel names, found " + found(ks));
      for (std::size_t k = 0; k < ks.size(); ++k) {
        if (!ks[k].is_string() || ks[k].get<std::string>().empty())
          fail(origin, at + ".kernels[" + std::to_string(k) + "]",
               "expected a kernel name, found " + found(ks[k]));
        sc.kernels.push_back(ks[k].get<std::string>());
      }
    }
    if (c.contains("anchors")) {
      const nlohmann::json& anchors = c["anchors"];
      if (!anchors.is_object())
        fail(origin, at + ".anchors", "expected an object keyed by device name, found " + found(anchors));
      for (const auto& [device, one_or_more] : anchors.items()) {
        const std::string dat = at + ".anchors." + device;
        if (!one_or_more.is_object() && !one_or_more.is_array())
          fail(origin, dat,
               "expected {\"us\": <number>, \"source\": \"...\"} or a list of them, found " +
                   found(one_or_more));
        const nlohmann::json list =
            one_or_more.is_array() ? one_or_more : nlohmann::json::array({one_or_more});
        RowAnchors& kept = sc.anchors[device];
        for (std::size_t k = 0; k < list.size(); ++k) {
          const nlohmann::json& a = list[k];
          const std::string aat = one_or_more.is_array() ? dat + "[" + std::to_string(k) + "]" : dat;
          if (!a.is_object())
            fail(origin, aat, "expected {\"us\": <number>, \"source\": \"...\"}, found " + found(a));
          only_keys(a, {"us", "source", "timing"}, origin, aat);
          bool rotating = false;
          if (a.contains("timing")) {
            if (!a["timing"].is_string() || (a["timing"] != "flush" && a["timing"] != "rotating"))
              fail(origin, aat + ".timing",
                   "expected \"flush\" or \"rotating\", found " + found(a["timing"]));
            rotating = a["timing"] == "rotating";
          }
          if (!a.contains("us") || !a["us"].is_number() || !(a["us"].get<double>() > 0))
            fail(origin, aat + ".us",
                 a.contains("us") ? "expected a positive number, found " + found(a["us"])
                                  : "missing (expected a positive number of microseconds)");
          for (const Anchor& before : kept)
            if (before.rotating == rotating)
              fail(origin, a.contains("timing") ? aat + ".timing" : aat,
                   concat("a second ", rotating ? "rotating" : "flush",
                          " anchor for this device (one of each kind)"));
          kept.push_back(Anchor{a["us"].get<double>(), required_string(a, "source", origin, aat), rotating});
        }
      }
    }
    s.cases.push_back(std::move(sc));
  }
  return s;
}

Suite load_suite(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw UsageError("suite " + path + ": cannot open the file");
  std::stringstream text;
  text << in.rdbuf();
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text.str());
  } catch (const nlohmann::json::parse_error& e) {
    throw UsageError("suite " + path + ": not valid JSON: " + e.what());
  }
  return parse_suite(j, path);
}

int cmd_suite(const SuiteArgs& a, Io io) {
  const Suite suite = load_suite(a.file);
  const std::vector<std::string>& names = a.kernels.empty() ? suite.kernels : a.kernels;
  std::vector<const KernelPlan*> plans;
  for (const std::string& n : names) plans.push_back(&Registry::instance().find(n));  // unknown: usage error
  // A case may name the kernels it is for (e.g. no slow baseline on the largest problems).
  std::vector<std::vector<const KernelPlan*>> case_plans;
  for (std::size_t ci = 0; ci < suite.cases.size(); ++ci) {
    std::vector<const KernelPlan*> selected;
    for (const KernelPlan* p : plans) {
      bool wanted = suite.cases[ci].kernels.empty();
      for (const std::string& k : suite.cases[ci].kernels) {
        try {
          wanted |= &Registry::instance().find(k) == p;
        } catch (const UsageError& e) {
          throw UsageError("suite " + suite.origin + ": cases[" + std::to_string(ci) +
                           "].kernels: " + e.message());
        }
      }
      if (wanted) selected.push_back(p);
    }
    case_plans.push_back(std::move(selected));
  }

  const RunOptions options = run_options(a.m);  // its usage errors before the device is opened
  DeviceOrExit d = open_device(io);
  if (!d.dev) return d.exit_status;
  const DeviceInfo& dev = *d.dev;
  // Measured (or loaded) once, when the first row gets past the arch gate.
  std::optional<Ceilings> ceilings;
  bool ceilings_loaded = !a.m.measure;

  std::vector<RunResult> runs;
  std::vector<RowAnchors> anchors;
  std::vector<std::size_t> case_of;
  nlohmann::json rows = nlohmann::json::array();
  std::size_t total = 0;
  for (const auto& selected : case_plans) total += selected.size();
  ProgressLine progress;
  for (std::size_t ci = 0; ci < suite.cases.size(); ++ci) {
    const SuiteCase& c = suite.cases[ci];
    for (const KernelPlan* plan : case_plans[ci]) {
      const std::string prefix = "case " + std::to_string(runs.size() + 1) + "/" + std::to_string(total) +
                                 " " + plan->id().full() + ": ";
      progress.update(prefix + "starting");
      RunResult r;
      r.kernel = plan->id().full();
      r.device = dev;
      try {
        try {
          r.problem = make_problem(plan->family(), c.problem);
          plan->check_problem(r.problem);
        } catch (const UsageError& e) {
          throw UsageError("cases[" + std::to_string(ci) + "].problem: " + e.message());
        }
        if (std::optional<std::string> why = arch_mismatch(plan->arch(), dev)) {
          r.status = RunResult::Status::skipped;
          r.message = *why;
        } else {
          if (!ceilings_loaded) {
            progress.done();
            ceilings = ceilings_for(dev, io);
            ceilings_loaded = true;
          }
          r = run_kernel(*plan, r.problem, dev, options, ceilings,
                         [&](const std::string& what) { progress.update(prefix + what); });
        }
      } catch (const UsageError& e) {
        r.status = RunResult::Status::error;
        r.message = e.message();
      } catch (const std::exception& e) {
        r.status = RunResult::Status::error;
        r.message = e.what();
      }
      RowAnchors row_anchors;
      if (auto it = c.anchors.find(dev.name); it != c.anchors.end()) row_anchors = it->second;
      nlohmann::json row = {{"case", ci}, {"label", c.label}, {"result", r.to_json()}};
      for (const Anchor& a : row_anchors)  // "anchor": the flush one, "rotating_anchor": the other
        row[a.rotating ? "rotating_anchor" : "anchor"] = {{"us", a.us},
                                                          {"source", a.source},
                                                          {"timing", a.rotating ? "rotating" : "flush"},
                                                          {"device", dev.name}};
      rows.push_back(row);
      runs.push_back(std::move(r));
      anchors.push_back(std::move(row_anchors));
      case_of.push_back(ci);
    }
  }
  progress.done();

  io.out << "suite " << suite.name << (suite.description.empty() ? "" : ": " + suite.description) << "\n"
         << "device " << dev.name << " (" << dev.sm() << ", " << dev.sm_count << " SMs), CUDA "
         << dev.runtime_version << ", driver "
         << dev.driver() << "\n";
  if (ceilings)
    io.out << "ceilings: copy " << format_fixed(ceilings->copy_gbs, 0) << " GB/s, read "
           << format_fixed(ceilings->read_gbs, 0) << " GB/s, cuBLAS bf16 "
           << format_fixed(ceilings->gemm_bf16_tflops, 0) << " TFLOP/s\n";
  io.out << render_suite(runs, anchors, case_of);
  const std::vector<std::optional<double>> vs_baseline = vs_best_baseline(runs, case_of);
  for (std::size_t i = 0; i < runs.size(); ++i)
    if (vs_baseline[i]) rows[i]["vs_best_baseline"] = *vs_baseline[i];

  bool check_failed = false, errored = false;
  for (const RunResult& r : runs) {
    check_failed |= r.status == RunResult::Status::check_failed;
    errored |= r.status == RunResult::Status::error;
  }
  if (!a.m.json.empty()) {
    nlohmann::json report = {{"suite", suite.name},
                             {"description", suite.description},
                             {"file", suite.origin},
                             {"device", dev.to_json()},
                             {"timing_mode", a.m.timing},
                             {"runs", rows}};
    if (ceilings) report["ceilings"] = ceilings->to_json();
    add_provenance(report, a.command_line);
    write_report_json(a.m.json, report, io);
  }
  return check_failed ? kExitCheckFailed : errored ? kExitRuntimeError : kExitOk;
}

}  // namespace cutelab
