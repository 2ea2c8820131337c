#pragma once
// baseline/mla_decode/flashinfer_sm90/v1: the one configuration of FlashInfer's SM90 MLA decode.
// FlashInfer exposes no kernel knob: its host planner picks one or two 64-row CTAs per q tile
// and the KV split; the kernel is fixed at 256 threads, 64-token KV tiles, two stages.

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "baseline/mla_decode/flashinfer_sm90/common/flashinfer_api.hpp"
#include "baseline/mla_decode/flashinfer_sm90/common/runner.hpp"
#include "cutelab/core/error.hpp"
#include "cutelab/runtime/device.hpp"
#include "mla_decode/common/problem.hpp"

namespace cutelab::mla::flashinfer_sm90_v1 {

struct FlashInferConfig {
  [[nodiscard]] std::string name() const { return "planner"; }
  [[nodiscard]] nlohmann::json to_json() const {
    return {{"schedule", "FlashInfer MLAPlan (host)"},
            {"tile_q", 64},
            {"tile_kv", 64},
            {"stages", 2},
            {"threads", 256}};
  }
  [[nodiscard]] std::optional<std::string> validate(const MlaDecodeProblem& p, const DeviceInfo& dev) const {
    if (p.dtype != DType::bf16 && p.dtype != DType::f16)
      return concat("dtype ", dtype_name(p.dtype), " is not supported (bf16, f16)");
    if (is_fp8(p.kv_format))
      return concat(
          "kv-dtype ", kv_format_name(p.kv_format),
          ": this baseline reads a KV cache in q's dtype (baseline/mla_decode/flashinfer_sm90_fp8kv "
          "reads fp8_tensor)");
    if (auto why = flashinfer_sm90::unsupported(p)) return why;
    const flashinfer_sm90::KernelInfo k = flashinfer_sm90::kernel_info(
        p.dtype == DType::bf16 ? flashinfer_sm90::Types::bf16 : flashinfer_sm90::Types::f16,
        p.causal && p.s_q > 1);
    if (k.dynamic_smem > dev.smem_per_block_optin)
      return concat("needs ", k.dynamic_smem, " B of shared memory per block, the device allows ",
                    dev.smem_per_block_optin);
    return std::nullopt;
  }
};

}  // namespace cutelab::mla::flashinfer_sm90_v1
