#pragma once
// References the checker trusts: a plain fp32 GPU kernel (one query row per block, two-pass
// softmax) and an fp64 CPU loop for small cases. Both follow args.hpp's semantics exactly,
// including length-0 requests (out 0, lse +inf) and causal masking.

#include <cuda_runtime_api.h>

#include <cstdint>
#include <vector>

#include "mla_decode/common/args.hpp"

namespace cutelab::mla {

// out_f32: [b, s_q, h_q, 512], lse_f32: [b, h_q, s_q], both device fp32. Every KV format: an FP8
// cache is dequantised (dequantize_kv) into a temporary fp32 copy of the whole cache, 4 bytes per
// element, allocated and freed in `stream`'s order, and read from there.
void reference_gpu(const MlaDecodeArgs& args, float* out_f32, float* lse_f32, cudaStream_t stream = nullptr);

// Host inputs as raw element bits of `args`' dtype; results in fp64 rounded to float. A cache in
// q's dtype only: both refuse FP8 caches (UsageError).
struct HostMlaInputs {
  std::vector<std::uint16_t> q, kv_cache;  // bf16 or f16 bits
  std::vector<int> block_table, seqlens;
};
[[nodiscard]] HostMlaInputs download_inputs(const MlaDecodeArgs& args);
void reference_cpu(const MlaDecodeArgs& args, const HostMlaInputs& in, std::vector<float>& out,
                   std::vector<float>& lse);

}  // namespace cutelab::mla
