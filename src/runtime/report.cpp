#include "cutelab/runtime/report.hpp"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

#include "cutelab/core/error.hpp"

namespace cutelab {
namespace {

// Columns are aligned by code points, so "µs" counts as two characters, not three bytes.
std::size_t display_width(const std::string& s) {
  std::size_t n = 0;
  for (unsigned char c : s)
    if ((c & 0xC0) != 0x80) ++n;
  return n;
}

std::string pad(const std::string& s, std::size_t width, Table::Align align) {
  const std::size_t w = display_width(s);
  if (w >= width) return s;
  const std::string fill(width - w, ' ');
  return align == Table::Align::left ? s + fill : fill + s;
}

std::string format_sci(double v) {
  if (!std::isfinite(v)) return std::isnan(v) ? "nan" : (v > 0 ? "inf" : "-inf");
  if (v == 0) return "0";
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.2e", v);
  return buf;
}

std::string format_us(double us) { return format_fixed(us, us < 100 ? 2 : 1); }

// Joules a call: "0.450 J", "12.5 mJ" below a tenth of a joule.
std::string format_joules(double j) {
  return j >= 0.1 ? format_fixed(j, 3) + " J" : format_fixed(j * 1e3, j * 1e3 < 10 ? 2 : 1) + " mJ";
}

std::string format_tflops(double t) { return format_fixed(t, t < 10 ? 2 : 1); }

std::string format_count(double v) { return std::to_string(static_cast<long long>(std::llround(v))); }

// Rates are on the primary figure (RunResult::rate_timing).
double gbs_of(const RunResult& r) {
  const TimingStats* t = r.rate_timing();
  return t && t->median_us > 0 ? r.cost.bytes / t->median_us / 1e3 : 0.0;
}

double tflops_of(const RunResult& r) {
  const TimingStats* t = r.rate_timing();
  return t && t->median_us > 0 ? r.cost.flops / t->median_us / 1e6 : 0.0;
}

std::string spread_of(const TimingStats& s) { return format_us(s.p10_us) + "-" + format_us(s.p90_us); }

std::string rotating_label(const RotatingTiming& rot) { return "rotating K=" + std::to_string(rot.sets); }

std::string primary_label(const RunResult& r) { return r.has_setup ? "setup reused" : "L2 flushed"; }

std::string share(double value, double ceiling) {
  return ceiling > 0 && value > 0 ? format_percent(value / ceiling) : "-";
}

std::string tolerance_text(const Tolerance& t) {
  return "atol " + format_sci(t.atol) + ", rtol " + format_sci(t.rtol) +
         (t.max_rel_l2 > 0 ? ", rel L2 < " + format_sci(t.max_rel_l2) : ", rel L2 not applied");
}

// Both ways of calling a kernel with a setup count: one failure fails the row.
std::string check_cell(const RunResult& r) {
  if (r.checks.empty() && r.checks_reusing_setup.empty()) return "-";
  bool passed = true;
  double worst = 0;
  for (const auto* checks : {&r.checks, &r.checks_reusing_setup}) {
    for (const CheckResult& c : *checks) {
      passed &= c.passed;
      worst = std::max(worst, c.rel_l2);
    }
  }
  return std::string(passed ? "pass " : "FAIL ") + format_sci(worst);
}

void render_device(std::ostringstream& o, const RunResult& r) {
  const DeviceInfo& d = r.device;
  if (!d.present) return;
  o << "device   " << d.name << " (" << d.sm() << ", " << d.sm_count << " SMs), CUDA " << d.runtime_version
    << ", driver " << d.driver() << "\n";
  o << "clocks   " << (r.clocks.available ? r.clocks.str() : "not read (" + r.clocks.why_unavailable + ")")
    << "\n";
}

void render_tuning(std::ostringstream& o, const RunResult& r) {
  if (r.tuning.empty()) return;
  Table t;
  t.add_column("", Table::Align::left);
  t.add_column("config", Table::Align::left);
  t.add_column("status", Table::Align::left);
  t.add_column("median µs");
  t.add_column("p10-p90 µs");
  t.add_column("note", Table::Align::left);
  for (const ConfigOutcome& c : r.tuning) {
    const bool winner = r.config && r.config->name == c.config.name;
    std::string median = "-", spread = "-";
    if (c.timing) {
      median = format_us(c.timing->median_us);
      spread = format_us(c.timing->p10_us) + "-" + format_us(c.timing->p90_us);
    }
    t.add_row({winner ? "*" : "", c.config.name, status_name(c.status), median, spread, c.reason});
  }
  const bool rotating = std::any_of(r.tuning.begin(), r.tuning.end(),
                                    [](const ConfigOutcome& c) { return c.basis == TuneBasis::rotating; });
  o << "\ntuning (" << r.tuning.size() << " configs, * = chosen"
    << (rotating ? ", ranked by the rotating figure" : "") << ")\n"
    << t.render();
}

void render_checks(std::ostringstream& o, const RunResult& r) {
  if (r.checks.empty()) {
    o << "\ncheck    not run\n";
    return;
  }
  // A kernel with a setup is checked twice: the whole `launch`, and `setup` + `launch_reusing_setup`.
  const bool two_ways = !r.checks_reusing_setup.empty();
  std::vector<std::pair<std::string, const CheckResult*>> rows;
  for (const CheckResult& c : r.checks) rows.emplace_back("setup in each call", &c);
  for (const CheckResult& c : r.checks_reusing_setup) rows.emplace_back("setup reused", &c);
  Table t;
  if (two_ways) t.add_column("way", Table::Align::left);
  t.add_column("output", Table::Align::left);
  t.add_column("elements");
  t.add_column("rel L2");
  t.add_column("max abs");
  t.add_column("max rel");
  t.add_column("mismatches");
  t.add_column("NaN/Inf");
  t.add_column("unwritten");
  t.add_column("tolerance", Table::Align::left);
  t.add_column("verdict", Table::Align::left);
  for (const auto& [way, c] : rows) {
    std::vector<std::string> cells = {c->output,
                                      format_count(static_cast<double>(c->count)),
                                      format_sci(c->rel_l2),
                                      format_sci(c->max_abs),
                                      format_sci(c->max_rel),
                                      std::to_string(c->mismatches),
                                      std::to_string(c->nan_inf),
                                      std::to_string(c->unwritten),
                                      tolerance_text(c->tol),
                                      c->passed ? "PASS" : "FAIL"};
    if (two_ways) cells.insert(cells.begin(), way);
    t.add_row(std::move(cells));
  }
  o << "\ncheck\n" << t.render();
  for (const auto& [way, c] : rows) {
    if (c->passed) continue;
    o << "  " << (two_ways ? way + ", " : "") << c->output << ": " << c->reason;
    if (c->first_bad != SIZE_MAX) o << " (first bad element at index " << c->first_bad << ")";
    o << "\n";
  }
}

// One line per figure: the primary (L2 flushed; setup reused when the kernel has one), the
// whole call with its setup, the rotating one; then what each includes.
void render_times(std::ostringstream& o, const RunResult& r) {
  const RotatingTiming* rot = r.rotating ? &*r.rotating : nullptr;
  if (r.timing && !r.timing_with_setup && !rot) {  // the plain case: one line
    const TimingStats& s = *r.timing;
    o << "\ntime     " << format_us(s.median_us) << " µs median (p10 " << format_us(s.p10_us) << ", p90 "
      << format_us(s.p90_us) << ", n=" << s.n << ", " << s.stop_reason << ")\n";
    return;
  }
  Table t;
  t.add_column("time", Table::Align::left);
  t.add_column("median µs");
  t.add_column("p10-p90 µs");
  t.add_column("n");
  t.add_column("stop", Table::Align::left);
  const auto row = [&](const std::string& label, const TimingStats& s) {
    t.add_row({label, format_us(s.median_us), spread_of(s), std::to_string(s.n), s.stop_reason});
  };
  if (r.timing) row(primary_label(r), *r.timing);
  if (r.timing_with_setup) row("setup in each call", *r.timing_with_setup);
  if (rot && rot->stats) row(rotating_label(*rot), *rot->stats);
  o << "\n" << t.render();
  if (r.timing && r.has_setup)
    o << "  setup reused: `setup` once, then `launch_reusing_setup` in each call; setup in each call: "
         "`launch`\n";
  if (r.timing)
    o << "  " << (r.has_setup ? "setup reused, setup in each call" : primary_label(r))
      << ": one call per graph replay, L2 flushed before each sample\n";
  if (rot && rot->stats) {
    const double total = rot->set_bytes * rot->sets;
    o << "  " << rotating_label(*rot) << ": " << rot->sets << " input sets of "
      << format_bytes(rot->set_bytes) << " (" << format_bytes(total) << " in all, L2 "
      << format_bytes(rot->l2_bytes) << ")" << (rot->reuses_setup ? ", setup made once per set" : "") << ", "
      << rot->sets << " calls per graph replay, time / " << rot->sets << ", no flush";
    if (rot->l2_bytes > 0 && total <= rot->l2_bytes) o << "; the sets fit in L2: the data stays warm";
    o << "\n";
    const TimingStats& s = *rot->stats;
    if (s.joules_per_call)
      o << "  " << rotating_label(*rot) << " energy: " << format_joules(*s.joules_per_call) << " a call at "
        << format_fixed(s.mean_watts.value_or(0), 0)
        << " W mean (the board's counter over the sampling loop)\n";
    else if (!s.energy_note.empty())
      o << "  " << rotating_label(*rot) << " energy: " << s.energy_note << "\n";
  }
  if (rot && !rot->skipped.empty()) o << "  rotating: not measured: " << rot->skipped << "\n";
}

void render_numbers(std::ostringstream& o, const RunResult& r) {
  render_times(o, r);
  const TimingStats* basis = r.rate_timing();
  if (!basis) return;
  const double gbs = gbs_of(r), tflops = tflops_of(r);
  const bool several = r.timing_with_setup || r.rotating;
  const std::string on = !several   ? ""
                         : r.timing ? " on the " + primary_label(r) + " time"
                                    : " on the " + rotating_label(*r.rotating) + " time";
  o << "rate     " << format_fixed(gbs, 0) << " GB/s, " << format_tflops(tflops) << " TFLOP/s" << on
    << "  (moves " << format_bytes(r.cost.bytes) << ", " << format_sci(r.cost.flops) << " FLOP)\n";
  if (r.ceilings) {
    const Ceilings& c = *r.ceilings;
    o << "measured ceilings: " << share(gbs, c.copy_gbs) << " of copy " << format_fixed(c.copy_gbs, 0)
      << " GB/s, " << share(gbs, c.read_gbs) << " of read " << format_fixed(c.read_gbs, 0) << " GB/s, "
      << share(tflops, c.gemm_bf16_tflops) << " of cuBLAS bf16 " << format_fixed(c.gemm_bf16_tflops, 0)
      << " TFLOP/s\n";
  } else {
    o << "measured ceilings: none (run `cutelab device --ceilings`)\n";
  }
  if (r.read_floor) {
    const ReadFloor& f = *r.read_floor;
    if (const std::optional<double> x = r.over_read_floor())
      o << "read floor:        " << format_us(f.stats->median_us) << " µs to read the case's "
        << format_bytes(f.bytes) << " once, timed the same way; " << primary_label(r) << " "
        << format_fixed(*x, 3) << "x it\n"
        << (f.method.empty() ? "" : "                   (" + f.method + ")\n");
    else
      o << "read floor:        not measured: " << (f.skipped.empty() ? "no flush figure" : f.skipped) << "\n";
  }
  const DeviceInfo& d = r.device;
  if (d.peak_bandwidth_gbs > 0 || d.peak_bf16_tflops > 0)
    o << "datasheet peaks:   " << share(gbs, d.peak_bandwidth_gbs) << " of "
      << format_fixed(d.peak_bandwidth_gbs, 0) << " GB/s, " << share(tflops, d.peak_bf16_tflops)
      << " of bf16 " << format_fixed(d.peak_bf16_tflops, 0) << " TFLOP/s\n";
}

void render_resources(std::ostringstream& o, const RunResult& r) {
  if (r.resources.empty()) return;
  Table t;
  t.add_column("function", Table::Align::left);
  t.add_column("regs");
  t.add_column("smem static");
  t.add_column("smem dynamic");
  t.add_column("local B (spills)");
  t.add_column("threads");
  t.add_column("SASS");
  for (const FunctionResources& f : r.resources)
    t.add_row({f.name, std::to_string(f.registers), std::to_string(f.static_smem),
               std::to_string(f.dynamic_smem), std::to_string(f.local_bytes), std::to_string(f.block_threads),
               f.binary_version > 0 ? "sm_" + std::to_string(f.binary_version) : "-"});
  o << "\nresources\n" << t.render();
}

}  // namespace

// ---- Table -----------------------------------------------------------------------------------

void Table::add_column(std::string header, Align align) {
  headers_.push_back(std::move(header));
  aligns_.push_back(align);
}

void Table::add_row(std::vector<std::string> cells) {
  if (cells.size() > headers_.size())
    throw Error(concat("Table::add_row: ", cells.size(), " cells for ", headers_.size(), " columns"));
  cells.resize(headers_.size());
  rows_.push_back(std::move(cells));
}

std::string Table::render() const {
  std::vector<std::size_t> width(headers_.size());
  for (std::size_t c = 0; c < headers_.size(); ++c) {
    width[c] = display_width(headers_[c]);
    for (const auto& row : rows_) width[c] = std::max(width[c], display_width(row[c]));
  }
  auto line = [&](const std::vector<std::string>& cells) {
    std::string s;
    for (std::size_t c = 0; c < cells.size(); ++c) {
      if (c) s += "  ";
      s += pad(cells[c], width[c], aligns_[c]);
    }
    while (!s.empty() && s.back() == ' ') s.pop_back();
    return s + "\n";
  };
  std::string out = line(headers_);
  std::string rule;
  for (std::size_t c = 0; c < width.size(); ++c) rule += (c ? "  " : "") + std::string(width[c], '-');
  out += rule + "\n";
  for (const auto& row : rows_) out += line(row);
  return out;
}

// ---- numbers ---------------------------------------------------------------------------------

std::string format_fixed(double v, int digits) {
  if (!std::isfinite(v)) return std::isnan(v) ? "nan" : (v > 0 ? "inf" : "-inf");
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.*f", std::max(0, digits), v);
  return buf;
}

std::string format_bytes(double bytes) {
  static const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  if (!std::isfinite(bytes)) return format_fixed(bytes, 0);
  int u = 0;
  double v = bytes;
  while (std::fabs(v) >= 1024.0 && u < 5) {
    v /= 1024.0;
    ++u;
  }
  return u == 0 ? format_fixed(v, 0) + " B" : format_fixed(v, 2) + " " + units[u];
}

std::string format_percent(double fraction) { return format_fixed(fraction * 100.0, 1) + "%"; }

// ---- reports ---------------------------------------------------------------------------------

std::string render_run(const RunResult& r) {
  std::ostringstream o;
  o << "kernel   " << r.kernel << "\n";
  o << "problem  " << r.problem.display() << "\n";
  render_device(o, r);
  for (const std::string& w : r.warnings) o << "warning: " << w << "\n";
  if (r.status == RunResult::Status::skipped) {
    o << "skipped: " << r.message << "\n";
    return o.str();
  }
  if (r.config) {
    o << "config   " << r.config->name << " (" << (r.config_source.empty() ? "-" : r.config_source) << ")";
    if (!r.config->params.is_null() && !r.config->params.empty()) o << "  " << r.config->params.dump();
    o << "\n";
  }
  render_tuning(o, r);
  render_checks(o, r);
  render_numbers(o, r);
  render_resources(o, r);
  o << "\n";
  switch (r.status) {
    case RunResult::Status::ok:
      o << "result: OK\n";
      break;
    case RunResult::Status::check_failed:
      o << "result: CHECK FAILED" << (r.message.empty() ? "" : ": " + r.message) << "\n";
      break;
    case RunResult::Status::error:
      o << "result: ERROR: " << r.message << "\n";
      break;
    case RunResult::Status::skipped:
      break;
  }
  return o.str();
}

std::string render_suite(const std::vector<RunResult>& runs) { return render_suite(runs, {}); }

std::string render_suite(const std::vector<RunResult>& runs,
                         const std::vector<std::optional<Anchor>>& anchors) {
  return render_suite(runs, anchors, {});
}

std::vector<std::optional<double>> vs_best_baseline(const std::vector<RunResult>& runs,
                                                    const std::vector<std::size_t>& case_of) {
  std::map<std::size_t, double> best;  // case -> fastest baseline µs
  const auto time_of = [&](std::size_t i) -> std::optional<double> {
    const TimingStats* t = runs[i].rate_timing();
    if (!t || !(t->median_us > 0) || i >= case_of.size()) return std::nullopt;
    return t->median_us;
  };
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const std::optional<double> us = time_of(i);
    const std::optional<KernelId> id = KernelId::parse(runs[i].kernel);
    if (!us || !id || id->tier != "baseline") continue;
    auto [it, fresh] = best.emplace(case_of[i], *us);
    if (!fresh) it->second = std::min(it->second, *us);
  }
  std::vector<std::optional<double>> out(runs.size());
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const std::optional<double> us = time_of(i);
    if (!us) continue;
    if (auto it = best.find(case_of[i]); it != best.end()) out[i] = it->second / *us;
  }
  return out;
}

std::string render_suite(const std::vector<RunResult>& runs,
                         const std::vector<std::optional<Anchor>>& anchors,
                         const std::vector<std::size_t>& case_of) {
  std::vector<RowAnchors> rows(anchors.size());
  for (std::size_t i = 0; i < anchors.size(); ++i)
    if (anchors[i]) rows[i].push_back(*anchors[i]);
  return render_suite(runs, rows, case_of);
}

std::string render_suite(const std::vector<RunResult>& runs, const std::vector<RowAnchors>& anchors,
                         const std::vector<std::size_t>& case_of) {
  const std::vector<std::optional<double>> vs_baseline = vs_best_baseline(runs, case_of);
  const bool any_baseline =
      std::any_of(vs_baseline.begin(), vs_baseline.end(), [](const auto& v) { return v.has_value(); });
  // Show only the parameters that differ between rows; the rest is printed once above.
  // A parameter some rows leave unset (an optional list such as lens) varies too.
  std::map<std::string, std::set<std::string>> seen;
  std::map<std::string, std::size_t> rows_with;
  std::set<std::string> problems;
  for (const RunResult& r : runs) {
    problems.insert(r.problem.key());
    for (const auto& [name, value] : r.problem.values()) {
      seen[name].insert(display_text(value));
      ++rows_with[name];
    }
  }
  std::set<std::string> varying;
  std::string common;
  for (const auto& [name, values] : seen) {
    if (values.size() > 1 || rows_with[name] != runs.size()) {
      varying.insert(name);
    } else {
      common += (common.empty() ? "" : ",") + name + "=" + *values.begin();
    }
  }
  auto short_key = [&](const Problem& p) {
    if (varying.empty()) return p.display();
    std::string s;
    for (const auto& [name, value] : p.values())
      if (varying.count(name)) s += (s.empty() ? "" : ",") + name + "=" + display_text(value);
    return s;
  };
  // A row's anchor of one kind (flush or rotating), if its case has one.
  const auto anchor_of = [&](std::size_t i, bool rotating) -> const Anchor* {
    if (i >= anchors.size()) return nullptr;
    for (const Anchor& a : anchors[i])
      if (a.rotating == rotating) return &a;
    return nullptr;
  };
  bool any_anchor = false, any_rotating_anchor = false;
  for (std::size_t i = 0; i < anchors.size(); ++i) {
    any_anchor |= anchor_of(i, false) != nullptr;
    any_rotating_anchor |= anchor_of(i, true) != nullptr;
  }
  // The extra figures get a column only when some row has them.
  const bool any_rotating =
      std::any_of(runs.begin(), runs.end(), [](const RunResult& r) { return r.rotating.has_value(); });
  const bool any_setup = std::any_of(runs.begin(), runs.end(),
                                     [](const RunResult& r) { return r.timing_with_setup.has_value(); });
  const bool any_clocks =
      std::any_of(runs.begin(), runs.end(), [](const RunResult& r) { return r.clocks.available; });
  const bool any_floor =
      std::any_of(runs.begin(), runs.end(), [](const RunResult& r) { return r.read_floor.has_value(); });
  bool rates_on_rotating = false;
  bool unmatched_anchor = false;  // an anchor whose kind of figure the row did not take

  Table t;
  t.add_column("#");
  t.add_column("kernel", Table::Align::left);
  t.add_column("problem", Table::Align::left);
  t.add_column("config", Table::Align::left);
  t.add_column("check", Table::Align::left);
  t.add_column("median µs");
  t.add_column("p10-p90 µs");
  const bool any_energy = std::any_of(runs.begin(), runs.end(), [](const RunResult& r) {
    return r.rotating && r.rotating->stats && r.rotating->stats->joules_per_call;
  });
  if (any_rotating) t.add_column("rotating µs");
  if (any_energy) t.add_column("J/call");
  if (any_setup) t.add_column("with setup µs");
  t.add_column("GB/s");
  t.add_column("TFLOP/s");
  t.add_column("% copy");
  t.add_column("% read");
  t.add_column("% GEMM");
  if (any_floor) {
    t.add_column("floor µs");
    t.add_column("x floor");
  }
  if (any_anchor) {
    t.add_column("anchor µs");
    t.add_column("speedup");
  }
  if (any_rotating_anchor) {
    t.add_column("rot. anchor µs");
    t.add_column("rot. speedup");
  }
  if (any_baseline) t.add_column("vs best baseline");
  if (any_clocks) t.add_column("SM MHz", Table::Align::left);
  std::vector<std::string> notes;
  // Per kernel, over the rows that have the figure: the geometric mean and the lowest ratio.
  struct Ratios {
    double log_sum = 0;
    int n = 0, at_least_one = 0;
    double lowest = 0;
    std::string lowest_row;
    void add(double ratio, const std::string& row) {
      log_sum += std::log(ratio);
      at_least_one += ratio >= 1.0;
      if (n++ == 0 || ratio < lowest) {
        lowest = ratio;
        lowest_row = row;
      }
    }
  };
  std::map<std::string, Ratios> vs_anchor, vs_rotating_anchor, vs_base;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const RunResult& r = runs[i];
    const std::string index = std::to_string(i + 1);
    std::vector<std::string> row = {index, r.kernel, short_key(r.problem), r.config ? r.config->name : "-"};
    if (r.status == RunResult::Status::skipped || r.status == RunResult::Status::error) {
      row.push_back(r.status == RunResult::Status::skipped ? "skip" : "ERROR");
      notes.push_back("#" + index + " " + (r.status == RunResult::Status::skipped ? "skipped: " : "error: ") +
                      r.message);
    } else {
      row.push_back(check_cell(r));
      if (r.status == RunResult::Status::check_failed && !r.message.empty())
        notes.push_back("#" + index + " check failed: " + r.message);
    }
    for (const std::string& w : r.warnings) notes.push_back("#" + index + " warning: " + w);
    if (r.rotating && !r.rotating->skipped.empty())
      notes.push_back("#" + index + " rotating not measured: " + r.rotating->skipped);
    const double gbs = gbs_of(r), tflops = tflops_of(r);
    const TimingStats* basis = r.rate_timing();
    row.push_back(r.timing ? format_us(r.timing->median_us) : "-");
    row.push_back(r.timing ? spread_of(*r.timing) : "-");
    if (any_rotating) {
      const RotatingTiming* rot = r.rotating ? &*r.rotating : nullptr;
      row.push_back(rot && rot->stats
                        ? format_us(rot->stats->median_us) + " (K=" + std::to_string(rot->sets) + ")"
                    : rot && !rot->skipped.empty() ? "skip"
                                                   : "-");
    }
    if (any_energy) {
      const TimingStats* rs = r.rotating && r.rotating->stats ? &*r.rotating->stats : nullptr;
      row.push_back(rs && rs->joules_per_call ? format_joules(*rs->joules_per_call) : "-");
    }
    if (any_setup) row.push_back(r.timing_with_setup ? format_us(r.timing_with_setup->median_us) : "-");
    if (basis) {
      rates_on_rotating |= !r.timing;
      row.push_back(format_fixed(gbs, 0));
      row.push_back(format_tflops(tflops));
      row.push_back(r.ceilings ? share(gbs, r.ceilings->copy_gbs) : "-");
      row.push_back(r.ceilings ? share(gbs, r.ceilings->read_gbs) : "-");
      row.push_back(r.ceilings ? share(tflops, r.ceilings->gemm_bf16_tflops) : "-");
    } else {
      row.insert(row.end(), 5, "-");
    }
    if (any_floor) {
      const ReadFloor* f = r.read_floor ? &*r.read_floor : nullptr;
      row.push_back(f && f->stats ? format_us(f->stats->median_us) : f ? "skip" : "-");
      const std::optional<double> x = r.over_read_floor();
      row.push_back(x ? format_fixed(*x, 3) + "x" : "-");
      if (f && !f->stats && !f->skipped.empty()) notes.push_back("#" + index + " read floor not measured: " + f->skipped);
    }
    // Each anchor against our figure of its kind only.
    const auto anchor_cells = [&](bool rotating, std::map<std::string, Ratios>& ratios) {
      const Anchor* a = anchor_of(i, rotating);
      const TimingStats* ours = !a         ? nullptr
                                : rotating ? (r.rotating && r.rotating->stats ? &*r.rotating->stats : nullptr)
                                : r.timing ? &*r.timing
                                           : nullptr;
      const bool has = ours && ours->median_us > 0;
      unmatched_anchor |= a && !has && basis;
      row.push_back(a ? format_us(a->us) : "-");
      row.push_back(has ? format_fixed(a->us / ours->median_us, 2) + "x" : "-");
      if (has) ratios[r.kernel].add(a->us / ours->median_us, index);
    };
    if (any_anchor) anchor_cells(false, vs_anchor);
    if (any_rotating_anchor) anchor_cells(true, vs_rotating_anchor);
    if (any_baseline) row.push_back(vs_baseline[i] ? format_fixed(*vs_baseline[i], 2) + "x" : "-");
    if (const std::optional<KernelId> id = KernelId::parse(r.kernel);
        vs_baseline[i] && id && id->tier != "baseline")
      vs_base[r.kernel].add(*vs_baseline[i], index);
    if (any_clocks) row.push_back(r.clocks.brief());
    t.add_row(std::move(row));
  }
  std::string out;
  if (!varying.empty() && !common.empty()) out += "all problems: " + common + "\n";
  out += t.render();
  for (const std::string& n : notes) out += n + "\n";
  if (any_setup)
    out +=
        "kernels with a setup: median µs with it made once and reused (as a serving engine does per decode "
        "step), with setup µs with it made in each call\n";
  if (any_rotating)
    out +=
        "rotating µs: K calls on K input sets in one CUDA graph, time / K, no L2 flush (launch cost inside "
        "the graph, data cold)\n";
  if (rates_on_rotating) out += "rows without a median µs: GB/s, TFLOP/s and shares on the rotating time\n";
  if (any_floor)
    out +=
        "floor µs: a plain read of the row's bytes (the cost model's; bulk copies on sm_90+), timed as its "
        "median µs is (launch, L2 flush write-backs and ramp included); x floor = median µs / floor µs\n";
  if (any_energy)
    out +=
        "J/call: the board's energy (NVML's counter) over the rotating figure's sampling loop, a call "
        "(under a power cap the time is this energy over the power limit)\n";
  if (any_anchor) out += "speedup = anchor µs / our median µs (> 1: faster than the anchor)\n";
  if (any_rotating_anchor)
    out +=
        "rot. speedup = the anchor's rotating µs / our rotating µs (the same method: K input sets, no "
        "flush)\n";
  if (unmatched_anchor)
    out +=
        "speedup -: the row has no figure of the anchor's kind (an anchor is set only against our figure of "
        "the same method)\n";
  if (any_clocks)
    out +=
        "SM MHz: the SM clock nvidia-smi read while the row was timed (range); slow k/n: k of n readings "
        "with a power or thermal slowdown reported by the driver (a long row's median then depends on how "
        "many samples ran before it engaged: "
        "docs/knowledge/anti-patterns/short-median-under-a-power-cap.md)\n";
  const auto summarize = [&](const std::map<std::string, Ratios>& by_kernel, const char* against) {
    for (const auto& [kernel, q] : by_kernel)
      if (q.n > 1)
        out += concat(kernel, " against ", against, ": geometric mean ",
                      format_fixed(std::exp(q.log_sum / q.n), 3), "x over ", q.n, " rows, ", q.at_least_one,
                      " at >= 1.00x, lowest ", format_fixed(q.lowest, 3), "x (#", q.lowest_row, ")\n");
  };
  summarize(vs_anchor, "the anchors");
  summarize(vs_rotating_anchor, "the rotating anchors");
  summarize(vs_base, "the best baseline");
  if (any_baseline)
    out +=
        "vs best baseline = the fastest baseline kernel's µs in the same case and run / this row's µs (> 1: "
        "faster)\n";
  return out;
}

// ---- progress --------------------------------------------------------------------------------

ProgressLine::ProgressLine() : tty_(::isatty(STDERR_FILENO) == 1) {}

void ProgressLine::update(const std::string& text) {
  const double now =
      std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  if (tty_) {
    // A line wider than the terminal would wrap, and '\r' could no longer rewrite it.
    std::string shown = text;
    winsize ws{};
    if (::ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 1) {
      std::size_t points = 0, cut = 0;
      for (; cut < shown.size(); ++cut) {
        if ((static_cast<unsigned char>(shown[cut]) & 0xC0) != 0x80 && ++points > ws.ws_col - 1u) break;
      }
      shown.resize(cut);
    }
    const std::size_t w = display_width(shown);
    std::cerr << '\r' << shown;
    if (last_len_ > w) std::cerr << std::string(last_len_ - w, ' ');
    std::cerr << std::flush;
    last_len_ = w;
    return;
  }
  // Off a terminal (logs, CI): one line per distinct message, at most a few per second
  // unless the step itself (the text before the first ':') changed.
  if (text == last_text_) return;
  const auto head = [](const std::string& s) { return s.substr(0, s.find(':')); };
  if (head(text) == head(last_text_) && now - last_print_s_ < 0.5) return;
  std::cerr << text << '\n' << std::flush;
  last_text_ = text;
  last_print_s_ = now;
}

void ProgressLine::done() {
  if (tty_ && last_len_ > 0) std::cerr << '\r' << std::string(last_len_, ' ') << '\r' << std::flush;
  last_len_ = 0;
  last_text_.clear();
}

ProgressFn ProgressLine::fn() {
  return [this](const std::string& text) { update(text); };
}

}  // namespace cutelab
