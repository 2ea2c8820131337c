#include "cutelab/runtime/nvtx.hpp"

#include <nvtx3/nvToolsExt.h>

#include <atomic>

namespace cutelab {
namespace {

std::atomic<bool> g_enabled{false};

// One domain for the lab, so `ncu --nvtx-include "cutelab@cutelab/measure/..."` can select it.
nvtxDomainHandle_t domain() {
  static const nvtxDomainHandle_t d = nvtxDomainCreateA("cutelab");
  return d;
}

}  // namespace

void set_nvtx_enabled(bool on) noexcept { g_enabled = on; }
bool nvtx_enabled() noexcept { return g_enabled; }

NvtxRange::NvtxRange(const std::string& name) : active_(g_enabled) {
  if (!active_) return;
  nvtxEventAttributes_t attr{};
  attr.version = NVTX_VERSION;
  attr.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  attr.messageType = NVTX_MESSAGE_TYPE_ASCII;
  attr.message.ascii = name.c_str();
  nvtxDomainRangePushEx(domain(), &attr);
}

NvtxRange::~NvtxRange() {
  if (active_) nvtxDomainRangePop(domain());
}

}  // namespace cutelab
