#include "commands.hpp"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "cutelab/core/error.hpp"
#include "cutelab/runtime/cache.hpp"
#include "cutelab/runtime/clocks.hpp"
#include "cutelab/runtime/registry.hpp"
#include "cutelab/runtime/report.hpp"
#include "process.hpp"
#include "profile.hpp"

namespace cutelab {
namespace {

// Where a value came from: "live", or the database entry plus the note it gives for the field
// (datasheet values carry their citation there).
std::string source_of(const DeviceInfo& dev, const DeviceDb* db, const std::string& field) {
  auto it = dev.source.find(field);
  if (it == dev.source.end()) return "";
  std::string text = it->second;
  if (db && text.rfind("db:", 0) == 0) {
    const nlohmann::json* entry = text.rfind("db:product:", 0) == 0
                                      ? db->product_entry(dev.name)
                                      : db->sm_entry(dev.cc_major, dev.cc_minor);
    if (entry && entry->contains("source")) {
      const nlohmann::json& notes = (*entry)["source"];
      const nlohmann::json* note = notes.contains(field) ? &notes[field]
                                   : notes.contains("*") ? &notes["*"]
                                                         : nullptr;
      if (note && note->is_string()) text += ": " + note->get<std::string>();
    }
  }
  return text;
}

std::string mib(std::size_t bytes) { return format_bytes(static_cast<double>(bytes)); }

}  // namespace

// ---- shared ----------------------------------------------------------------------------------

DeviceOrExit open_device(Io io) {
  std::string why;
  const int count = cuda_device_count(&why);
  if (count <= 0) {
    // The runtime's reason may already start with the headline: keep one.
    const std::string headline = "no CUDA GPU found";
    std::string reason = why;
    if (reason.rfind(headline, 0) == 0) {
      reason = reason.substr(headline.size());
      if (reason.rfind(" (", 0) == 0 && reason.back() == ')') reason = reason.substr(2, reason.size() - 3);
      if (reason.rfind(": ", 0) == 0) reason = reason.substr(2);
    }
    io.err << headline << ": " << (reason.empty() ? "the CUDA runtime reports 0 devices" : reason) << "\n";
    return {std::nullopt, kExitSkipped};
  }
  const DeviceDb db = DeviceDb::load_default();
  return {query_device(0, db), kExitOk};
}

std::optional<Ceilings> ceilings_for(const DeviceInfo& dev, Io io) {
  const std::string dir = TuneCache::default_dir();
  try {
    if (std::optional<Ceilings> c = load_cached_ceilings(dev, dir)) return c;
  } catch (const std::exception& e) {
    io.err << "warning: cached ceilings unreadable (" << e.what() << "); measuring again\n";
  }
  io.err << "measuring the device ceilings (copy, read, cuBLAS bf16 GEMM), once per device and driver; "
            "cached in "
         << dir << "\n";
  ProgressLine progress;
  try {
    Ceilings c = measure_ceilings(dev, progress.fn());
    progress.done();
    store_cached_ceilings(c, dir);
    return c;
  } catch (const CudaError& e) {
    progress.done();
    if (e.sticky()) throw;
    io.err << "warning: could not measure the ceilings (" << e.message() << "); reporting without them\n";
  } catch (const std::exception& e) {
    progress.done();
    io.err << "warning: could not measure the ceilings (" << e.what() << "); reporting without them\n";
  }
  return std::nullopt;
}

RunOptions run_options(const MeasureArgs& m) {
  RunOptions o;
  o.check = m.check;
  o.tune = m.tune;
  o.seed = m.seed;
  o.measure = m.measure;
  const std::optional<TimingMode> mode = parse_timing_mode(m.timing);
  CUTELAB_REQUIRE(mode, "--timing: expected flush, rotating or both, found '", m.timing, "'");
  o.timing_mode = *mode;
  o.read_floor = m.floor;
  CUTELAB_REQUIRE(!m.floor || times_flush(*mode), "--floor: the read floor stands beside the flush figure, and "
                  "--timing ", m.timing, " takes none (use --timing flush or both)");
  if (m.floor && !m.measure) throw UsageError("--floor: nothing is measured with --no-measure");
  if (m.max_time) o.timing.max_seconds = *m.max_time;
  if (m.min_samples) {
    o.timing.min_samples = *m.min_samples;
    if (o.timing.max_samples < o.timing.min_samples) o.timing.max_samples = o.timing.min_samples;
  }
  return o;
}

int exit_status_of(const RunResult& r) noexcept {
  switch (r.status) {
    case RunResult::Status::ok:
      return kExitOk;
    case RunResult::Status::skipped:
      return kExitSkipped;
    case RunResult::Status::check_failed:
      return kExitCheckFailed;
    case RunResult::Status::error:
      return kExitRuntimeError;
  }
  return kExitRuntimeError;
}

void add_provenance(nlohmann::json& j, const std::vector<std::string>& command_line) {
  j["command"] = shell_join(command_line);
  j["git_commit"] = git_commit();
  j["date_utc"] = utc_timestamp();
}

void write_report_json(const std::string& path, const nlohmann::json& j, Io io) {
  try {
    write_json_atomic(path, j);
  } catch (const std::exception& e) {
    throw Error("cannot write the JSON report to " + path + ": " + e.what());
  }
  io.err << "wrote " << path << "\n";
}

// ---- list ------------------------------------------------------------------------------------

int cmd_list(const ListArgs& a, Io io) {
  const std::vector<const KernelPlan*> plans = Registry::instance().all();
  std::map<std::string, std::string> defaults;  // family -> the plan `run <family>` picks
  std::map<std::string, const Family*> families;
  for (const KernelPlan* p : plans) {
    const std::string fam = p->id().family;
    families[fam] = &p->family();
    if (defaults.count(fam)) continue;
    try {
      defaults[fam] = Registry::instance().find(fam).id().full();
    } catch (const UsageError&) {
      defaults[fam] = "";
    }
  }
  if (a.names) {
    for (const KernelPlan* p : plans) io.out << p->id().full() << "\n";
    return kExitOk;
  }
  nlohmann::json j = nlohmann::json::array();
  if (plans.empty()) {
    io.out << "no kernels registered (is libcutelab_kernels.so built and next to the cutelab binary?)\n";
  } else {
    Table t;
    t.add_column("kernel", Table::Align::left);
    t.add_column("tier", Table::Align::left);
    t.add_column("family", Table::Align::left);
    t.add_column("arch", Table::Align::left);
    t.add_column("default", Table::Align::left);
    t.add_column("summary", Table::Align::left);
    for (const KernelPlan* p : plans) {
      const KernelId id = p->id();
      const bool is_default = defaults[id.family] == id.full();
      t.add_row({id.full(), id.tier, id.family, p->arch().str(), is_default ? "*" : "", p->summary()});
      j.push_back({{"name", id.full()},
                   {"tier", id.tier},
                   {"family", id.family},
                   {"design", id.design},
                   {"version", id.version},
                   {"arch", p->arch().str()},
                   {"family_default", is_default},
                   {"summary", p->summary()}});
    }
    io.out << t.render();
    io.out << "\n* = what `cutelab run <family>` picks. Problem flags per family:\n";
    for (const auto& [name, fam] : families) {
      std::string flags;
      for (const ParamSpec& p : fam->params) flags += " --" + p.name;
      io.out << "  " << name << ":" << flags << "\n";
    }
  }
  if (!a.json.empty()) {
    nlohmann::json report = {{"kernels", j}};
    add_provenance(report, a.command_line);
    write_report_json(a.json, report, io);
  }
  return kExitOk;
}

// ---- device ----------------------------------------------------------------------------------

namespace {

std::string ceiling_share(double measured, double peak) {
  return peak > 0 ? format_percent(measured / peak) : "-";
}

std::string render_ceilings(const Ceilings& c, const DeviceInfo& dev) {
  Table t;
  t.add_column("ceiling", Table::Align::left);
  t.add_column("measured");
  t.add_column("datasheet peak");
  t.add_column("share");
  const std::string peak_bw =
      dev.peak_bandwidth_gbs > 0 ? format_fixed(dev.peak_bandwidth_gbs, 0) + " GB/s" : "-";
  t.add_row({"copy (read + write)", format_fixed(c.copy_gbs, 0) + " GB/s", peak_bw,
             ceiling_share(c.copy_gbs, dev.peak_bandwidth_gbs)});
  t.add_row({"read stream", format_fixed(c.read_gbs, 0) + " GB/s", peak_bw,
             ceiling_share(c.read_gbs, dev.peak_bandwidth_gbs)});
  t.add_row({"cuBLAS bf16 GEMM " + std::to_string(c.gemm_size) + "^3",
             format_fixed(c.gemm_bf16_tflops, 0) + " TFLOP/s",
             dev.peak_bf16_tflops > 0 ? format_fixed(dev.peak_bf16_tflops, 0) + " TFLOP/s" : "-",
             ceiling_share(c.gemm_bf16_tflops, dev.peak_bf16_tflops)});
  std::string out = t.render();
  out += "measured " + c.measured_at + (c.clocks.available ? ", clocks " + c.clocks.str() : "") + "\n";
  return out;
}

}  // namespace

int cmd_device(const DeviceArgs& a, Io io) {
  DeviceOrExit d = open_device(io);
  if (!d.dev) return d.exit_status;
  const DeviceInfo& dev = *d.dev;

  Table t;
  t.add_column("property", Table::Align::left);
  t.add_column("value", Table::Align::left);
  t.add_column("source", Table::Align::left);
  std::optional<DeviceDb> db;
  try {
    db = DeviceDb::load_default();
  } catch (const std::exception&) {
    // open_device() loaded it a moment ago; without it the notes are just left out.
  }
  auto row = [&](const std::string& name, const std::string& value, const std::string& field) {
    t.add_row({name, value, source_of(dev, db ? &*db : nullptr, field)});
  };
  row("name", dev.name, "name");
  row("architecture",
      dev.sm() + " (compute capability " + std::to_string(dev.cc_major) + "." + std::to_string(dev.cc_minor) +
          ")",
      "cc_major");
  row("SMs", std::to_string(dev.sm_count), "sm_count");
  row("threads per SM / block",
      std::to_string(dev.max_threads_per_sm) + " / " + std::to_string(dev.max_threads_per_block),
      "max_threads_per_sm");
  row("registers per SM / block",
      std::to_string(dev.regs_per_sm) + " / " + std::to_string(dev.regs_per_block), "regs_per_sm");
  row("registers per thread (max)", std::to_string(dev.max_regs_per_thread), "max_regs_per_thread");
  row("shared memory per SM", mib(dev.smem_per_sm), "smem_per_sm");
  row("shared memory per block (opt-in)", mib(dev.smem_per_block_optin), "smem_per_block_optin");
  row("L2 cache", mib(dev.l2_bytes), "l2_bytes");
  row("global memory", mib(dev.global_mem_bytes), "global_mem_bytes");
  row("SM clock (max)", std::to_string(dev.sm_clock_max_mhz) + " MHz", "sm_clock_max_mhz");
  row("memory clock (max)", std::to_string(dev.mem_clock_max_mhz) + " MHz", "mem_clock_max_mhz");
  row("memory bus", std::to_string(dev.mem_bus_width_bits) + " bit", "mem_bus_width_bits");
  row("peak bandwidth (datasheet)", format_fixed(dev.peak_bandwidth_gbs, 0) + " GB/s", "peak_bandwidth_gbs");
  row("peak bf16 dense (datasheet)", format_fixed(dev.peak_bf16_tflops, 0) + " TFLOP/s", "peak_bf16_tflops");
  row("peak fp8 dense (datasheet)", format_fixed(dev.peak_fp8_tflops, 0) + " TFLOP/s", "peak_fp8_tflops");
  row("CUDA runtime", dev.runtime_version, "runtime_version");
  row("CUDA driver", dev.driver_version + (dev.driver_release.empty() ? "" : " (" + dev.driver_release + ")"),
      "driver_version");
  io.out << t.render();
  if (auto it = dev.source.find("db"); it != dev.source.end()) io.out << "note: " << it->second << "\n";
  if (db) io.out << "device database: " << db->path() << "\n";

  nlohmann::json report = {{"device", dev.to_json()}};
  std::string why;
  if (std::optional<ClockReading> now = read_clocks(dev.index, &why)) {
    io.out << "clocks now: SM " << now->sm_mhz << " MHz (max " << now->sm_max_mhz << "), memory "
           << now->mem_mhz << " MHz, " << format_fixed(now->power_w, 0) << " W, " << now->temperature_c
           << " C";
    const std::string slowdowns = now->event_reasons ? slowdown_names(*now->event_reasons) : "";
    if (now->event_reasons) io.out << (slowdowns.empty() ? ", no slowdown" : ", " + slowdowns);
    io.out << "\n";
    report["clocks_now"] = {{"sm_mhz", now->sm_mhz},
                            {"mem_mhz", now->mem_mhz},
                            {"sm_max_mhz", now->sm_max_mhz},
                            {"power_w", now->power_w},
                            {"temperature_c", now->temperature_c}};
    if (now->event_reasons) {
      report["clocks_now"]["event_reasons"] = *now->event_reasons;
      report["clocks_now"]["slowdowns"] = slowdowns;
    }
  } else {
    io.out << "clocks now: unavailable (" << why << ")\n";
  }

  const std::string dir = TuneCache::default_dir();
  std::optional<Ceilings> ceilings;
  if (a.ceilings) {
    ProgressLine progress;
    progress.update("measuring ceilings ...");
    Ceilings c = measure_ceilings(dev, progress.fn());
    progress.done();
    store_cached_ceilings(c, dir);
    ceilings = c;
    io.out << "\nceilings (measured now, cached in " << dir << ")\n";
  } else {
    try {
      ceilings = load_cached_ceilings(dev, dir);
    } catch (const std::exception& e) {
      io.err << "warning: cached ceilings unreadable: " << e.what() << "\n";
    }
    io.out << (ceilings ? "\nceilings (cached)\n"
                        : "\nceilings: not measured yet (run `cutelab device --ceilings`)\n");
  }
  if (ceilings) {
    io.out << render_ceilings(*ceilings, dev);
    report["ceilings"] = ceilings->to_json();
  }
  if (!a.json.empty()) {
    add_provenance(report, a.command_line);
    write_report_json(a.json, report, io);
  }
  return kExitOk;
}

// ---- run -------------------------------------------------------------------------------------

int cmd_run(const RunArgs& a, Io io) {
  const KernelPlan& plan = Registry::instance().find(a.kernel);
  const Family& family = plan.family();
  std::map<std::string, std::string> given;
  // The family's small sanitizer problem, unless the user says otherwise. Explicit lists (MLA's
  // --lens) fix the batch and the lengths themselves, so they replace the small problem whole.
  const bool lists_given = std::any_of(a.params.begin(), a.params.end(), [&](const auto& kv) {
    const ParamSpec* spec = family.find(kv.first);
    return spec && spec->kind == ParamSpec::Kind::integer_list;
  });
  if (a.prof == "sanitize" && !lists_given) given = family.sanitize_problem;
  for (const auto& [name, value] : a.params) given[name] = value;
  const Problem problem = make_problem(family, given);
  plan.check_problem(problem);
  RunOptions options = run_options(a.m);  // its usage errors before the device is opened
  options.config = a.config;
  options.annotate = a.prof == "annotation";

  DeviceOrExit d = open_device(io);
  if (!d.dev) return d.exit_status;
  const DeviceInfo& dev = *d.dev;

  nlohmann::json report;
  auto finish = [&](int status) {
    if (!a.m.json.empty()) {
      add_provenance(report, a.command_line);
      write_report_json(a.m.json, report, io);
    }
    return status;
  };

  if (std::optional<std::string> why = arch_mismatch(plan.arch(), dev)) {
    io.err << "skipped: " << *why << "\n";
    RunResult skipped;
    skipped.status = RunResult::Status::skipped;
    skipped.message = *why;
    skipped.kernel = plan.id().full();
    skipped.problem = problem;
    skipped.device = dev;
    report = skipped.to_json();
    return finish(kExitSkipped);
  }

  if (a.prof == "sanitize") {
    RunArgs resolved = a;
    resolved.kernel = plan.id().full();
    report = {{"kernel", resolved.kernel}, {"problem", problem.to_json()}, {"device", dev.to_json()}};
    return finish(profile_with_sanitizer(resolved, problem, &report, io));
  }

  std::optional<Ceilings> ceilings;
  if (a.m.measure) ceilings = ceilings_for(dev, io);

  ProgressLine progress;
  RunResult r = run_kernel(plan, problem, dev, options, ceilings, progress.fn());
  progress.done();
  io.out << render_run(r);

  if (verbose_from_env()) {
    const TuneKey key = tune_key(r);
    io.err << "[verbose] config: " << (r.config ? r.config->name : std::string("(none)"))
           << ", chosen by: " << (r.config_source.empty() ? std::string("-") : r.config_source) << "\n"
           << "[verbose] tuning cache key: " << key.str() << "\n";
    if (r.config) io.err << "[verbose] config parameters: " << r.config->params.dump() << "\n";
  }

  report = r.to_json();
  int status = exit_status_of(r);
  if (a.prof == "ncu") {
    if (r.status == RunResult::Status::ok) {
      RunArgs resolved = a;
      resolved.kernel = r.kernel;
      const int prof_status = profile_with_ncu(resolved, r, &report, io);
      if (status == kExitOk) status = prof_status;
    } else {
      io.err << "--prof=ncu: not profiling: the run did not succeed (" << status_name(r.status) << ")\n";
    }
  }
  return finish(status);
}

}  // namespace cutelab
