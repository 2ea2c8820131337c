#include "cutelab/runtime/energy.hpp"

#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <cstdio>
#include <map>
#include <memory>
#include <mutex>

#include "cutelab/core/error.hpp"

namespace cutelab {
namespace {

// NVML's entry points by their C signatures (nvml.h): returns 0 (NVML_SUCCESS) or an error code.
using NvmlInit = int (*)();
using NvmlHandleByPciBusId = int (*)(const char*, void**);
using NvmlTotalEnergy = int (*)(void*, unsigned long long*);

struct Nvml {
  void* lib = nullptr;
  NvmlHandleByPciBusId handle_by_bus_id = nullptr;
  NvmlTotalEnergy total_energy = nullptr;
  std::string why;  // empty when usable
};

const Nvml& nvml() {
  static const Nvml loaded = [] {
    Nvml n;
    n.lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!n.lib) {
      const char* e = dlerror();
      n.why = concat("the driver's libnvidia-ml.so.1 could not be loaded (", e ? e : "no reason given", ")");
      return n;
    }
    const auto init = reinterpret_cast<NvmlInit>(dlsym(n.lib, "nvmlInit_v2"));
    n.handle_by_bus_id =
        reinterpret_cast<NvmlHandleByPciBusId>(dlsym(n.lib, "nvmlDeviceGetHandleByPciBusId_v2"));
    n.total_energy = reinterpret_cast<NvmlTotalEnergy>(dlsym(n.lib, "nvmlDeviceGetTotalEnergyConsumption"));
    if (!init || !n.handle_by_bus_id || !n.total_energy)
      n.why =
          "libnvidia-ml.so.1 lacks nvmlInit_v2, nvmlDeviceGetHandleByPciBusId_v2 or "
          "nvmlDeviceGetTotalEnergyConsumption";
    else if (const int rc = init(); rc != 0)
      n.why = concat("nvmlInit_v2 returned ", rc);
    return n;
  }();
  return loaded;
}

}  // namespace

EnergyCounter::EnergyCounter(int cuda_device) {
  const Nvml& n = nvml();
  if (!n.why.empty()) {
    why_ = n.why;
    return;
  }
  char bus_id[32] = {};
  if (cudaDeviceGetPCIBusId(bus_id, sizeof(bus_id), cuda_device) != cudaSuccess) {
    (void)cudaGetLastError();
    why_ = concat("CUDA device ", cuda_device, " has no PCI bus id");
    return;
  }
  void* handle = nullptr;
  if (const int rc = n.handle_by_bus_id(bus_id, &handle); rc != 0 || !handle) {
    why_ = concat("NVML knows no device at PCI bus id ", bus_id, " (", rc, ")");
    return;
  }
  unsigned long long mj = 0;
  if (const int rc = n.total_energy(handle, &mj); rc != 0) {
    why_ = concat("NVML's energy counter is not supported on this board (", rc, ")");
    return;
  }
  handle_ = handle;
}

const EnergyCounter& EnergyCounter::of(int cuda_device) {
  static std::mutex mutex;
  static std::map<int, std::unique_ptr<EnergyCounter>> counters;
  const std::lock_guard<std::mutex> lock(mutex);
  std::unique_ptr<EnergyCounter>& c = counters[cuda_device];
  if (!c) c.reset(new EnergyCounter(cuda_device));
  return *c;
}

std::optional<std::uint64_t> EnergyCounter::millijoules() const {
  if (!handle_) return std::nullopt;
  unsigned long long mj = 0;
  if (nvml().total_energy(handle_, &mj) != 0) return std::nullopt;
  return static_cast<std::uint64_t>(mj);
}

std::optional<EnergyReading> energy_over(std::uint64_t mj_before, std::uint64_t mj_after, double seconds,
                                         double calls) {
  if (!(seconds >= kEnergyMinSeconds) || !(calls > 0) || mj_after <= mj_before) return std::nullopt;
  const double joules = static_cast<double>(mj_after - mj_before) / 1000.0;
  return EnergyReading{joules / calls, joules / seconds};
}

EnergyMeter::EnergyMeter(int cuda_device)
    : counter_(EnergyCounter::of(cuda_device)),
      mj_before_(counter_.millijoules()),
      began_(std::chrono::steady_clock::now()) {}

EnergyMeter::Result EnergyMeter::finish(double calls, const std::string& raise) const {
  const std::optional<std::uint64_t> mj_after = counter_.millijoules();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - began_).count();
  Result r;
  if (!counter_.available()) {
    r.note = "no energy counter: " + counter_.why_unavailable();
  } else if (mj_before_ && mj_after) {
    r.reading = energy_over(*mj_before_, *mj_after, seconds, calls);
  }
  if (r.reading || !r.note.empty()) return r;
  if (seconds < kEnergyMinSeconds) {
    char ran[32];
    std::snprintf(ran, sizeof(ran), "%.3f", seconds);
    r.note = concat("no energy figure: the loop ran ", ran, " s (the counter needs ", kEnergyMinSeconds,
                    " s or more; raise ", raise, ")");
  } else {
    r.note = "no energy figure: the counter could not be read or did not move";
  }
  return r;
}

}  // namespace cutelab
