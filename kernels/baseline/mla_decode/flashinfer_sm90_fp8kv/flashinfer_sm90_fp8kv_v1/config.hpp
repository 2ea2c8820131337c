#pragma once
// baseline/mla_decode/flashinfer_sm90_fp8kv/v1: FlashInfer's SM90 MLA decode on an e4m3 KV cache
// with one scale (bf16 q and out). Its one configuration: FlashInfer exposes no kernel knob.

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "baseline/mla_decode/flashinfer_sm90/common/flashinfer_api.hpp"
#include "baseline/mla_decode/flashinfer_sm90/common/runner.hpp"
#include "cutelab/core/error.hpp"
#include "cutelab/runtime/device.hpp"
#include "mla_decode/common/problem.hpp"

namespace cutelab::mla::flashinfer_sm90_fp8kv_v1 {

struct FlashInferFp8KvConfig {
  [[nodiscard]] std::string name() const { return "planner_e4m3_tensor"; }
  [[nodiscard]] nlohmann::json to_json() const {
    return {{"schedule", "FlashInfer MLAPlan (host)"},
            {"kv", "e4m3, one fp32 scale (bf16-exact)"},
            {"tile_q", 64},
            {"tile_kv", 64},
            {"stages", 2},
            {"threads", 256}};
  }
  [[nodiscard]] std::optional<std::string> validate(const MlaDecodeProblem& p, const DeviceInfo& dev) const {
    if (p.dtype != DType::bf16)
      return concat("dtype ", dtype_name(p.dtype), ": the e4m3 KV path runs bf16 q and out only");
    // kv-dtype same and fp8_tensor both run its own per-tensor e4m3 cache (Fp8KvWorkspace).
    if (p.kv_format == KvFormat::fp8_token)
      return "kv-dtype fp8_token: FlashInfer's MLA reads an e4m3 cache with one scale (fp8_tensor), "
             "not per-token scales";
    if (auto why = flashinfer_sm90::unsupported(p)) return why;
    const flashinfer_sm90::KernelInfo k =
        flashinfer_sm90::kernel_info(flashinfer_sm90::Types::bf16_q_e4m3_kv, p.causal && p.s_q > 1);
    if (k.dynamic_smem > dev.smem_per_block_optin)
      return concat("needs ", k.dynamic_smem, " B of shared memory per block, the device allows ",
                    dev.smem_per_block_optin);
    return std::nullopt;
  }
};

}  // namespace cutelab::mla::flashinfer_sm90_fp8kv_v1
