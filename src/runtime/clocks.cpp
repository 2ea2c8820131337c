#include "cutelab/runtime/clocks.hpp"

#include <cuda_runtime_api.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <utility>

#include <nlohmann/json.hpp>

#include "cutelab/core/error.hpp"
#include "text.hpp"

namespace cutelab {
namespace {

using detail::trim;

// $CUTELAB_NVIDIA_SMI (tests point it at a fake), else nvidia-smi on PATH.
std::optional<std::string> find_nvidia_smi() {
  if (const char* forced = std::getenv("CUTELAB_NVIDIA_SMI"); forced && *forced) {
    if (access(forced, X_OK) == 0) return std::string(forced);
    return std::nullopt;
  }
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "/usr/bin:/bin");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    const std::string candidate = (dir.empty() ? "." : dir) + "/nvidia-smi";
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return std::nullopt;
}

std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// nvidia-smi numbers GPUs its own way; the PCI bus id names the same GPU for both.
std::string smi_id(int index) {
  char bus[64] = {};
  if (cudaDeviceGetPCIBusId(bus, sizeof(bus), index) != cudaSuccess) {
    (void)cudaGetLastError();
    return std::to_string(index);
  }
  std::string id = bus;  // "0000:01:00.0"; nvidia-smi prints an 8-digit domain
  const std::size_t colon = id.find(':');
  if (colon != std::string::npos && colon < 8) id.insert(0, 8 - colon, '0');
  return id;
}

struct CommandResult {
  int status = -1;
  std::string output;
};

CommandResult run_command(const std::string& command) {
  CommandResult r;
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return r;
  char buf[512];
  while (std::fgets(buf, sizeof(buf), pipe)) r.output += buf;
  const int raw = pclose(pipe);
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  return r;
}

std::optional<double> parse_number(const std::string& field) {
  const std::string t = trim(field);
  if (t.empty()) return std::nullopt;
  char* end = nullptr;
  const double v = std::strtod(t.c_str(), &end);
  if (end != t.c_str() + t.size()) return std::nullopt;
  return v;
}

bool not_available(const std::string& field) {
  const std::string t = trim(field);
  return t == "[N/A]" || t == "N/A" || t == "[Not Supported]";
}

int median_of(std::vector<int> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

std::string slowdown_names(std::uint64_t reasons) {
  static constexpr std::pair<std::uint64_t, const char*> kNames[] = {{kSwPowerCap, "SW power cap"},
                                                                     {kHwSlowdown, "HW slowdown"},
                                                                     {kSwThermal, "SW thermal slowdown"},
                                                                     {kHwThermal, "HW thermal slowdown"},
                                                                     {kHwPowerBrake, "HW power brake"}};
  std::string s;
  for (const auto& [bit, name] : kNames)
    if (reasons & bit) s += concat(s.empty() ? "" : ", ", name);
  return s;
}

std::optional<ClockReading> parse_clock_line(const std::string& line) {
  std::vector<std::string> fields;
  std::stringstream in(line);
  std::string f;
  while (std::getline(in, f, ',')) fields.push_back(f);
  if (fields.size() != 5 && fields.size() != 6) return std::nullopt;
  // The current clocks must be there; the rest may be "[N/A]" on some boards.
  const auto sm = parse_number(fields[0]);
  const auto mem = parse_number(fields[1]);
  if (!sm || !mem) return std::nullopt;
  ClockReading r;
  r.sm_mhz = static_cast<int>(*sm);
  r.mem_mhz = static_cast<int>(*mem);
  const std::optional<double> rest[3] = {parse_number(fields[2]), parse_number(fields[3]), parse_number(fields[4])};
  for (int i = 0; i < 3; ++i)
    if (!rest[i] && !not_available(fields[2 + i])) return std::nullopt;
  r.sm_max_mhz = static_cast<int>(rest[0].value_or(0));
  r.power_w = rest[1].value_or(0);
  r.temperature_c = static_cast<int>(rest[2].value_or(0));
  if (fields.size() == 6 && !not_available(fields[5])) {
    const std::string hex = trim(fields[5]);  // "0x0000000000000004"
    if (hex.size() < 3 || hex[0] != '0' || (hex[1] != 'x' && hex[1] != 'X')) return std::nullopt;
    char* end = nullptr;
    const unsigned long long bits = std::strtoull(hex.c_str() + 2, &end, 16);
    if (end != hex.c_str() + hex.size()) return std::nullopt;
    r.event_reasons = bits;
  }
  return r;
}

std::optional<std::string> nvidia_smi_query(int index, const std::string& fields, std::string* why) {
  const std::optional<std::string> smi = find_nvidia_smi();
  if (!smi) {
    if (why) *why = "nvidia-smi not found (clocks are not recorded)";
    return std::nullopt;
  }
  const std::string base = concat(shell_quote(*smi), " --query-gpu=", fields, " --format=csv,noheader,nounits -i ");
  CommandResult r = run_command(concat(base, shell_quote(smi_id(index)), " 2>&1"));
  if (r.status != 0) r = run_command(concat(base, index, " 2>&1"));  // some versions refuse bus ids
  std::string first = r.output.substr(0, r.output.find('\n'));
  if (r.status != 0) {
    if (why) *why = concat("nvidia-smi failed (exit ", r.status, "): ", trim(first));
    return std::nullopt;
  }
  return first;
}

namespace {

// Reads the clocks with field set `field_set` of kFieldSets, or (when -1) with the first one this
// nvidia-smi accepts, which it then keeps: drivers before R535 name the reasons field
// clocks_throttle_reasons, and some boards report neither.
std::optional<ClockReading> read_clocks_with(int index, int& field_set, std::string* why) {
  static constexpr const char* kFieldSets[] = {
      "clocks.sm,clocks.mem,clocks.max.sm,power.draw,temperature.gpu,clocks_event_reasons.active",
      "clocks.sm,clocks.mem,clocks.max.sm,power.draw,temperature.gpu,clocks_throttle_reasons.active",
      "clocks.sm,clocks.mem,clocks.max.sm,power.draw,temperature.gpu"};
  const int first = field_set < 0 ? 0 : field_set, last = field_set < 0 ? 2 : field_set;
  std::string first_why;
  for (int i = first; i <= last; ++i) {
    std::string w;
    const auto line = nvidia_smi_query(index, kFieldSets[i], &w);
    if (!line) {
      if (first_why.empty()) first_why = w;
      if (!find_nvidia_smi()) break;  // no other field set helps
      continue;
    }
    auto r = parse_clock_line(*line);
    if (!r) {
      if (why) *why = concat("cannot parse nvidia-smi output '", trim(*line), "'");
      return std::nullopt;
    }
    field_set = i;
    return r;
  }
  if (why) *why = first_why;
  return std::nullopt;
}

}  // namespace

std::optional<ClockReading> read_clocks(int index, std::string* why) {
  int field_set = -1;
  return read_clocks_with(index, field_set, why);
}

ClockSummary summarize_clocks(const std::vector<ClockReading>& readings) {
  ClockSummary s;
  s.samples = static_cast<int>(readings.size());
  s.available = !readings.empty();
  if (!s.available) return s;
  std::vector<int> sm, mem;
  s.sm_mhz_min = readings.front().sm_mhz;
  for (const ClockReading& r : readings) {
    sm.push_back(r.sm_mhz);
    mem.push_back(r.mem_mhz);
    s.sm_mhz_min = std::min(s.sm_mhz_min, r.sm_mhz);
    s.sm_mhz_max = std::max(s.sm_mhz_max, r.sm_mhz);
    s.sm_max_mhz = std::max(s.sm_max_mhz, r.sm_max_mhz);
    s.power_w_max = std::max(s.power_w_max, r.power_w);
    s.temperature_c_max = std::max(s.temperature_c_max, r.temperature_c);
    if (r.event_reasons) {
      ++s.reason_samples;
      const std::uint64_t slow = *r.event_reasons & kSlowdownReasons;
      s.slowed_samples += slow != 0;
      s.slowdowns_seen |= slow;
    }
  }
  s.sm_mhz_median = median_of(sm);
  s.mem_mhz_median = median_of(mem);
  return s;
}

nlohmann::json ClockSummary::to_json() const {
  if (!available) return {{"available", false}, {"why", why_unavailable}};
  return {{"available", true},
          {"samples", samples},
          {"sm_mhz_min", sm_mhz_min},
          {"sm_mhz_median", sm_mhz_median},
          {"sm_mhz_max", sm_mhz_max},
          {"mem_mhz_median", mem_mhz_median},
          {"sm_max_mhz", sm_max_mhz},
          {"power_w_max", power_w_max},
          {"temperature_c_max", temperature_c_max},
          {"reason_samples", reason_samples},
          {"slowed_samples", slowed_samples},
          {"slowdown_bits", slowdowns_seen},
          {"slowdowns", slowdown_names(slowdowns_seen)}};
}

std::string ClockSummary::str() const {
  if (!available) return concat("clocks not recorded: ", why_unavailable.empty() ? "no samples" : why_unavailable);
  std::string s = concat("SM ", sm_mhz_median, " MHz (", sm_mhz_min, "-", sm_mhz_max, ")");
  if (sm_max_mhz > 0) s += concat(" of max ", sm_max_mhz);
  s += concat(", mem ", mem_mhz_median, " MHz");
  if (power_w_max > 0) s += concat(", ", static_cast<int>(power_w_max + 0.5), " W peak");
  if (temperature_c_max > 0) s += concat(", ", temperature_c_max, " C");
  if (slowed_samples > 0)
    s += concat(", ", slowdown_names(slowdowns_seen), " in ", slowed_samples, " of ", reason_samples,
                " samples");
  else if (reason_samples > 0)
    s += ", no slowdown";
  return s;
}

std::string ClockSummary::brief() const {
  if (!available) return "-";
  std::string s = sm_mhz_min == sm_mhz_max ? std::to_string(sm_mhz_max) : concat(sm_mhz_min, "-", sm_mhz_max);
  if (slowed_samples > 0) s += concat(" slow ", slowed_samples, "/", reason_samples);
  return s;
}

ClockSampler::ClockSampler(int device_index, int period_ms) : index_(device_index), period_ms_(period_ms) {}

ClockSampler::~ClockSampler() {
  running_ = false;
  if (thread_.joinable()) thread_.join();
}

void ClockSampler::start() {
  if (thread_.joinable()) return;
  readings_.clear();
  why_.clear();
  running_ = true;
  // Only this thread touches readings_ and why_ until stop() joins it.
  thread_ = std::thread([this] {
    // The first reading is taken even when stop() comes at once.
    int field_set = -1;
    do {
      std::string why;
      if (auto r = read_clocks_with(index_, field_set, &why)) {
        readings_.push_back(*r);
      } else {
        why_ = why;
        return;  // a missing or failing nvidia-smi will not start working mid-run
      }
      const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(period_ms_);
      while (running_ && std::chrono::steady_clock::now() < until)
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    } while (running_);
  });
}

ClockSummary ClockSampler::stop() {
  running_ = false;
  if (thread_.joinable()) thread_.join();
  ClockSummary s = summarize_clocks(readings_);
  if (!s.available) s.why_unavailable = why_.empty() ? "no clock sample taken" : why_;
  return s;
}

}  // namespace cutelab
