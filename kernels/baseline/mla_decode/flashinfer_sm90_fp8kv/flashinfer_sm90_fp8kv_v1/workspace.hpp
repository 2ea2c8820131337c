#pragma once
// The MLA workspace of the FP8-KV baseline: the family's bf16 case, plus an e4m3 copy of the KV
// cache with one scale for the whole cache (the per-tensor form of TensorRT-LLM and vLLM). The
// bf16 cache is then overwritten with the dequantised values, so the family's reference (and
// validate_args) see exactly what the FP8 kernel reads: the check measures the kernel's
// arithmetic error, not the quantisation error.

#include <cstdint>

#include "cutelab/runtime/tensor.hpp"
#include "mla_decode/common/workspace.hpp"

namespace cutelab::mla::flashinfer_sm90_fp8kv_v1 {

class Fp8KvWorkspace final : public MlaDecodeWorkspace {
 public:
  Fp8KvWorkspace(MlaDecodeCase c, std::uint64_t seed);

  DeviceBuffer
      kv_e4m3;  // [num_blocks, 64, h_kv, 576] e4m3, NaN where the bf16 cache has NaN; empty unless bf16
  float kv_scale = 1;  // dequantised = kv_scale * e4m3 value; a bf16 value, as FlashInfer multiplies in bf16
};

// What quantise() computes, for the host tests: the scale for a cache whose largest finite
// magnitude is `amax` (amax / 448 rounded to bf16; 1 for an all-zero cache).
[[nodiscard]] float scale_for_amax(float amax);

}  // namespace cutelab::mla::flashinfer_sm90_fp8kv_v1
