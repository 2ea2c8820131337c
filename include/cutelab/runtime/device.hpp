#pragma once
// What the runtime knows of a device: the database entry for its SM version (and product),
// merged with the live cudaGetDeviceProperties values, which win. Plus the arch gate.

#include <cstddef>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>  // declarations only: kernel code includes this header

namespace cutelab {

struct DeviceInfo {
  bool present = false;  // false: no CUDA device (the fields hold nothing useful)
  int index = 0;
  std::string name;
  int cc_major = 0;
  int cc_minor = 0;
  int sm_count = 0;
  int max_threads_per_block = 1024;
  int max_threads_per_sm = 2048;
  int max_regs_per_thread = 255;
  int regs_per_sm = 65536;
  int regs_per_block = 65536;
  std::size_t smem_per_sm = 0;
  std::size_t smem_per_block_optin = 0;  // the most a block can opt in to
  std::size_t l2_bytes = 0;
  std::size_t global_mem_bytes = 0;
  int sm_clock_max_mhz = 0;
  int mem_clock_max_mhz = 0;
  int mem_bus_width_bits = 0;
  // Datasheet peaks (leads, not limits).
  double peak_bandwidth_gbs = 0;
  double peak_bf16_tflops = 0;  // dense
  double peak_fp8_tflops = 0;   // dense
  std::string runtime_version;  // "13.0"
  std::string driver_version;   // "13.0" (CUDA version the driver supports)
  std::string driver_release;   // "580.159.04" when nvidia-smi tells, else empty
  // Where each field came from: "live", "db:sm_90", "db:product:<name>".
  std::map<std::string, std::string> source;

  [[nodiscard]] std::string sm() const;  // "sm_90"
  // The driver release ("580.159.04") when nvidia-smi told it, else the CUDA version it supports.
  [[nodiscard]] std::string driver() const { return driver_release.empty() ? driver_version : driver_release; }
  [[nodiscard]] nlohmann::json to_json() const;
};

// Live values read from the driver, or given by a test.
struct LiveProperties {
  std::string name;
  int cc_major = 0, cc_minor = 0, sm_count = 0;
  int max_threads_per_block = 0, max_threads_per_sm = 0;
  int regs_per_sm = 0, regs_per_block = 0;
  std::size_t smem_per_sm = 0, smem_per_block_optin = 0, l2_bytes = 0, global_mem_bytes = 0;
  int sm_clock_max_mhz = 0, mem_clock_max_mhz = 0, mem_bus_width_bits = 0;
};

class DeviceDb {
 public:
  static DeviceDb from_json(const nlohmann::json& j);  // throws Error naming the bad field
  static DeviceDb load(const std::string& path);
  // $CUTELAB_DEVICE_DB, then <exe dir>/../conf/devices.json, then the source tree's copy.
  static DeviceDb load_default();

  [[nodiscard]] const nlohmann::json* sm_entry(int cc_major, int cc_minor) const;
  [[nodiscard]] const nlohmann::json* product_entry(const std::string& name) const;
  [[nodiscard]] std::vector<std::string> sm_versions() const;
  [[nodiscard]] const std::string& path() const noexcept { return path_; }

 private:
  std::shared_ptr<const nlohmann::json> json_;  // by pointer: json_fwd.hpp; null only in a default-made db
  std::string path_;
};

// Database entry for the SM version, then the product entry, then live values (nonzero wins).
// An SM version the database lacks falls back to the closest lower entry of the same major
// ("db:sm_90 (for sm_91)" in `source`); with none, only live values and no datasheet peaks
// (source["db"] says so).
[[nodiscard]] DeviceInfo merge_device_info(const DeviceDb& db, const LiveProperties& live);
// Number of CUDA devices, 0 when there is none or no driver; `why` says what the runtime said.
[[nodiscard]] int cuda_device_count(std::string* why = nullptr);
[[nodiscard]] DeviceInfo query_device(int index, const DeviceDb& db);

// What a kernel needs: `exact` kernels use arch-specific features (sm_90a: wgmma, setmaxnreg)
// and run only on that compute capability; the others run on it and anything newer.
struct ArchRequirement {
  int major = 8;
  int minor = 0;
  bool exact = false;

  [[nodiscard]] std::string str() const;  // "sm_90a" or "sm_80+"
  [[nodiscard]] bool operator==(const ArchRequirement&) const = default;
};
[[nodiscard]] ArchRequirement parse_arch(const std::string& s);  // "sm_90a", "sm_80+"
// A one-line reason when the device cannot run the kernel, nothing when it can.
[[nodiscard]] std::optional<std::string> arch_mismatch(const ArchRequirement& need, const DeviceInfo& dev);

}  // namespace cutelab
