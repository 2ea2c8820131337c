#include "cutelab/runtime/device.hpp"

#include <cuda_runtime_api.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>

#include <nlohmann/json.hpp>

#include "cutelab/core/error.hpp"
#include "cutelab/runtime/clocks.hpp"
#include "text.hpp"

namespace cutelab {
namespace {

// The numeric fields the database may set, and their live counterparts.
struct Field {
  const char* name;
  void (*set)(DeviceInfo&, double);
  double (*live)(const LiveProperties&);  // nullptr: the driver does not report it
};

#define CUTELAB_FIELD(member, type)                                        \
  Field {                                                                  \
    #member, [](DeviceInfo& d, double v) { d.member = static_cast<type>(v); }, \
        [](const LiveProperties& l) { return static_cast<double>(l.member); }  \
  }
#define CUTELAB_DB_ONLY(member, type) \
  Field { #member, [](DeviceInfo& d, double v) { d.member = static_cast<type>(v); }, nullptr }

const Field kFields[] = {
    CUTELAB_FIELD(sm_count, int),
    CUTELAB_FIELD(max_threads_per_block, int),
    CUTELAB_FIELD(max_threads_per_sm, int),
    CUTELAB_DB_ONLY(max_regs_per_thread, int),
    CUTELAB_FIELD(regs_per_sm, int),
    CUTELAB_FIELD(regs_per_block, int),
    CUTELAB_FIELD(smem_per_sm, std::size_t),
    CUTELAB_FIELD(smem_per_block_optin, std::size_t),
    CUTELAB_FIELD(l2_bytes, std::size_t),
    CUTELAB_FIELD(global_mem_bytes, std::size_t),
    CUTELAB_FIELD(sm_clock_max_mhz, int),
    CUTELAB_FIELD(mem_clock_max_mhz, int),
    CUTELAB_FIELD(mem_bus_width_bits, int),
    CUTELAB_DB_ONLY(peak_bandwidth_gbs, double),
    CUTELAB_DB_ONLY(peak_bf16_tflops, double),
    CUTELAB_DB_ONLY(peak_fp8_tflops, double),
};
#undef CUTELAB_FIELD
#undef CUTELAB_DB_ONLY

const Field* find_field(const std::string& name) {
  for (const Field& f : kFields)
    if (name == f.name) return &f;
  return nullptr;
}

std::string sm_name(int major, int minor) { return concat("sm_", major, minor); }

// Every key of an entry is a known numeric field with a source note, or a string ("arch").
void validate_entry(const std::string& where, const nlohmann::json& e) {
  if (!e.is_object()) throw Error(concat("device database: ", where, " must be an object"));
  const nlohmann::json* source = e.contains("source") ? &e.at("source") : nullptr;
  if (source && !source->is_object())
    throw Error(concat("device database: ", where, ".source must be an object of notes"));
  for (const auto& [key, value] : e.items()) {
    if (key == "source") continue;
    if (!find_field(key)) {
      if (value.is_string()) continue;  // descriptive text: "arch"
      throw Error(concat("device database: unknown field ", where, ".", key));
    }
    if (!value.is_number() || value.get<double>() < 0)
      throw Error(concat("device database: ", where, ".", key, " must be a number >= 0, got ", value.dump()));
    if (!source || !(source->contains(key) || source->contains("*")))
      throw Error(concat("device database: ", where, ".", key, " has no note under ", where, ".source"));
  }
}

void apply(DeviceInfo& info, const nlohmann::json& entry, const std::string& tag) {
  for (const auto& [key, value] : entry.items()) {
    if (!value.is_number()) continue;
    if (const Field* f = find_field(key)) {
      f->set(info, value.get<double>());
      info.source[key] = tag;
    }
  }
}

std::string version_string(int v) { return concat(v / 1000, '.', (v % 1000) / 10); }

using detail::trim;

}  // namespace

std::string DeviceInfo::sm() const { return sm_name(cc_major, cc_minor); }

nlohmann::json DeviceInfo::to_json() const {
  nlohmann::json j = {
      {"present", present},
      {"index", index},
      {"name", name},
      {"sm", sm()},
      {"cc", concat(cc_major, '.', cc_minor)},
      {"sm_count", sm_count},
      {"max_threads_per_block", max_threads_per_block},
      {"max_threads_per_sm", max_threads_per_sm},
      {"max_regs_per_thread", max_regs_per_thread},
      {"regs_per_sm", regs_per_sm},
      {"regs_per_block", regs_per_block},
      {"smem_per_sm", smem_per_sm},
      {"smem_per_block_optin", smem_per_block_optin},
      {"l2_bytes", l2_bytes},
      {"global_mem_bytes", global_mem_bytes},
      {"sm_clock_max_mhz", sm_clock_max_mhz},
      {"mem_clock_max_mhz", mem_clock_max_mhz},
      {"mem_bus_width_bits", mem_bus_width_bits},
      {"peak_bandwidth_gbs", peak_bandwidth_gbs},
      {"peak_bf16_tflops", peak_bf16_tflops},
      {"peak_fp8_tflops", peak_fp8_tflops},
      {"runtime_version", runtime_version},
      {"driver_version", driver_version},
      {"driver_release", driver_release},
      {"source", source},
  };
  return j;
}

DeviceDb DeviceDb::from_json(const nlohmann::json& j) {
  if (!j.is_object() || !j.contains("sm") || !j.at("sm").is_object())
    throw Error("device database: expected an object with an \"sm\" object");
  for (const auto& [key, entry] : j.at("sm").items()) {
    if (key.rfind("sm_", 0) != 0 || key.size() < 5 ||
        !std::all_of(key.begin() + 3, key.end(), [](unsigned char c) { return std::isdigit(c); }))
      throw Error(concat("device database: sm entry '", key, "' is not of the form sm_<major><minor>"));
    validate_entry("sm." + key, entry);
  }
  if (j.contains("products")) {
    if (!j.at("products").is_object()) throw Error("device database: \"products\" must be an object");
    for (const auto& [name, entry] : j.at("products").items()) validate_entry("products." + name, entry);
  }
  DeviceDb db;
  db.json_ = std::make_shared<const nlohmann::json>(j);
  return db;
}

DeviceDb DeviceDb::load(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error(concat("device database: cannot open ", path));
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw Error(concat("device database ", path, " is not valid JSON: ", e.what()));
  }
  DeviceDb db;
  try {
    db = from_json(j);
  } catch (const Error& e) {
    throw Error(concat(e.message(), " (in ", path, ")"));
  }
  db.path_ = path;
  return db;
}

DeviceDb DeviceDb::load_default() {
  std::vector<std::string> tried;
  if (const char* env = std::getenv("CUTELAB_DEVICE_DB"); env && *env) return load(env);
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const std::filesystem::path p = exe.parent_path().parent_path() / "conf" / "devices.json";
    if (std::filesystem::exists(p)) return load(p.string());
    tried.push_back(p.string());
  }
#ifdef CUTELAB_SOURCE_DIR
  const std::string src = std::string(CUTELAB_SOURCE_DIR) + "/conf/devices.json";
  if (std::filesystem::exists(src)) return load(src);
  tried.push_back(src);
#endif
  std::string list;
  for (const std::string& t : tried) list += (list.empty() ? "" : ", ") + t;
  throw Error(concat("device database not found: set CUTELAB_DEVICE_DB, or install conf/devices.json (tried ",
                     list, ")"));
}

const nlohmann::json* DeviceDb::sm_entry(int cc_major, int cc_minor) const {
  if (!json_) return nullptr;
  const std::string key = sm_name(cc_major, cc_minor);
  const nlohmann::json& sm = json_->at("sm");
  auto it = sm.find(key);
  return it == sm.end() ? nullptr : &*it;
}

const nlohmann::json* DeviceDb::product_entry(const std::string& name) const {
  if (!json_ || !json_->contains("products")) return nullptr;
  const nlohmann::json& products = json_->at("products");
  auto it = products.find(name);
  return it == products.end() ? nullptr : &*it;
}

std::vector<std::string> DeviceDb::sm_versions() const {
  std::vector<std::string> out;
  if (json_ && json_->is_object() && json_->contains("sm"))
    for (const auto& [key, entry] : json_->at("sm").items()) out.push_back(key);
  std::sort(out.begin(), out.end(), [](const std::string& a, const std::string& b) {
    return std::stoi(a.substr(3)) < std::stoi(b.substr(3));
  });
  return out;
}

DeviceInfo merge_device_info(const DeviceDb& db, const LiveProperties& live) {
  DeviceInfo info;
  info.present = live.cc_major > 0;
  info.name = live.name;
  info.cc_major = live.cc_major;
  info.cc_minor = live.cc_minor;
  const std::string sm = info.sm();

  // The exact SM version, else the closest lower minor of the same major (sm_121 -> sm_120).
  const nlohmann::json* entry = nullptr;
  std::string tag;
  for (int minor = live.cc_minor; minor >= 0 && !entry; --minor) {
    entry = db.sm_entry(live.cc_major, minor);
    if (entry) {
      tag = "db:" + sm_name(live.cc_major, minor);
      if (minor != live.cc_minor) tag += " (for " + sm + ")";
    }
  }
  if (entry) apply(info, *entry, tag);
  else info.source["db"] = concat("no entry for ", sm, " in the device database: live values only, no datasheet peaks");

  if (const nlohmann::json* product = db.product_entry(live.name)) apply(info, *product, "db:product:" + live.name);

  for (const Field& f : kFields) {
    if (!f.live) continue;
    const double v = f.live(live);
    if (v > 0) {
      f.set(info, v);
      info.source[f.name] = "live";
    }
  }
  return info;
}

int cuda_device_count(std::string* why) {
  int n = 0;
  const cudaError_t err = cudaGetDeviceCount(&n);
  if (err != cudaSuccess) {
    (void)cudaGetLastError();
    if (why) *why = concat("no CUDA GPU found (cudaGetDeviceCount: ", cudaGetErrorName(err), ": ", cudaGetErrorString(err), ")");
    return 0;
  }
  if (n == 0 && why) *why = "no CUDA GPU found (the driver reports 0 devices)";
  return n;
}

DeviceInfo query_device(int index, const DeviceDb& db) {
  std::string why;
  const int count = cuda_device_count(&why);
  if (count == 0) {
    DeviceInfo none;
    none.source["present"] = why;
    return none;
  }
  CUTELAB_REQUIRE(index >= 0 && index < count, "device index ", index, " out of range: ", count,
                  " CUDA device(s) present");
  cudaDeviceProp prop{};
  CUTELAB_CUDA(cudaGetDeviceProperties(&prop, index));
  LiveProperties live;
  live.name = prop.name;
  live.cc_major = prop.major;
  live.cc_minor = prop.minor;
  live.sm_count = prop.multiProcessorCount;
  live.max_threads_per_block = prop.maxThreadsPerBlock;
  live.max_threads_per_sm = prop.maxThreadsPerMultiProcessor;
  live.regs_per_sm = prop.regsPerMultiprocessor;
  live.regs_per_block = prop.regsPerBlock;
  live.smem_per_sm = prop.sharedMemPerMultiprocessor;
  live.smem_per_block_optin = prop.sharedMemPerBlockOptin;
  live.l2_bytes = static_cast<std::size_t>(prop.l2CacheSize);
  live.global_mem_bytes = prop.totalGlobalMem;
  live.mem_bus_width_bits = prop.memoryBusWidth;
  int khz = 0;
  // CUDA 13 dropped the clock fields from cudaDeviceProp; the attributes remain (kHz).
  if (cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, index) == cudaSuccess) live.sm_clock_max_mhz = khz / 1000;
  if (cudaDeviceGetAttribute(&khz, cudaDevAttrMemoryClockRate, index) == cudaSuccess) live.mem_clock_max_mhz = khz / 1000;
  (void)cudaGetLastError();

  DeviceInfo info = merge_device_info(db, live);
  info.index = index;
  int v = 0;
  if (cudaRuntimeGetVersion(&v) == cudaSuccess) info.runtime_version = version_string(v);
  if (cudaDriverGetVersion(&v) == cudaSuccess) info.driver_version = version_string(v);
  (void)cudaGetLastError();
  if (auto release = nvidia_smi_query(index, "driver_version")) info.driver_release = trim(*release);
  return info;
}

std::string ArchRequirement::str() const { return concat("sm_", major, minor, exact ? "a" : "+"); }

ArchRequirement parse_arch(const std::string& s) {
  // "sm_90a" (exact), "sm_80+" or "sm_80" (that and newer); the last digit is the minor.
  std::string digits = s.rfind("sm_", 0) == 0 ? s.substr(3) : std::string();
  ArchRequirement a;
  if (!digits.empty() && (digits.back() == 'a' || digits.back() == '+')) {
    a.exact = digits.back() == 'a';
    digits.pop_back();
  }
  const bool ok = digits.size() >= 2 && digits.size() <= 3 &&
                  std::all_of(digits.begin(), digits.end(), [](unsigned char c) { return std::isdigit(c); });
  CUTELAB_REQUIRE(ok, "architecture '", s, "' is not of the form sm_90a (exact) or sm_80+ (that or newer)");
  a.major = std::stoi(digits.substr(0, digits.size() - 1));
  a.minor = digits.back() - '0';
  return a;
}

std::optional<std::string> arch_mismatch(const ArchRequirement& need, const DeviceInfo& dev) {
  if (!dev.present) return std::string("no CUDA GPU found");
  const bool runs = need.exact ? (dev.cc_major == need.major && dev.cc_minor == need.minor)
                               : (dev.cc_major * 10 + dev.cc_minor >= need.major * 10 + need.minor);
  if (runs) return std::nullopt;
  return concat("needs ", need.str(), ", found ", dev.sm());
}

}  // namespace cutelab
