#pragma once
// NVTX ranges for --prof=annotation (and the filter Nsight Compute uses under --prof=ncu).

#include <string>

namespace cutelab {

void set_nvtx_enabled(bool on) noexcept;
[[nodiscard]] bool nvtx_enabled() noexcept;

// A scoped range in the "cutelab" domain; does nothing unless enabled.
class NvtxRange {
 public:
  explicit NvtxRange(const std::string& name);
  ~NvtxRange();
  NvtxRange(const NvtxRange&) = delete;
  NvtxRange& operator=(const NvtxRange&) = delete;

 private:
  bool active_;
};

}  // namespace cutelab
