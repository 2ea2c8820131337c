#pragma once
// The host API of every MLA decode kernel: device tensors in, out and lse written.

#include <cuda_runtime_api.h>

#include "cutelab/core/dtype.hpp"
#include "cutelab/runtime/tensor.hpp"
#include "mla_decode/fp8/kv_format.hpp"

namespace cutelab::mla {

struct MlaDecodeArgs {
  TensorView q;            // [b, s_q, h_q, 576]               bf16 | f16
  TensorView kv_cache;     // [num_blocks, 64, h_kv, 576]      same dtype as q, or an FP8 format:
                           //   e4m3 (or u8) [.., 576]: fp8_tensor (needs kv_scale)
                           //   u8 [.., 656]: fp8_token (q bf16; kv_format.hpp has the layout)
  TensorView block_table;  // [b, max_blocks]                  i32
  TensorView seqlens;      // [b]                              i32, >= 0
  TensorView out;          // [b, s_q, h_q, 512]               same dtype as q
  TensorView lse;          // [b, h_q, s_q]                    f32, natural log
  float softmax_scale = 0;  // 0: 1/sqrt(576)
  bool causal = false;      // query i of a request sees the first seqlen - s_q + i + 1 keys
  const float* kv_scale = nullptr;  // fp8_tensor: device fp32, dequantised = kv_scale * e4m3
};

// Sizes read off validated arguments.
struct MlaDecodeDims {
  int b = 0, s_q = 0, h_q = 0, h_kv = 0, num_blocks = 0, max_blocks = 0;
  DType dtype = DType::bf16;            // of q and out
  KvFormat kv_format = KvFormat::bf16;  // read off kv_cache's dtype and last dimension
  float scale = 0;  // the softmax scale actually used
};

// The KV-cache formats a caller serves. The default, a cache in q's dtype, is what every
// bf16/f16 kernel reads; an FP8 cache given to a caller that does not list it is refused.
struct KvFormats {
  bool same_as_q = true;
  bool fp8_tensor = false;
  bool fp8_token = false;
  [[nodiscard]] static constexpr KvFormats fp8_only() { return {false, true, true}; }
  [[nodiscard]] static constexpr KvFormats all() { return {true, true, true}; }
};

// Checks every argument before anything is launched; throws UsageError naming the argument
// (dtype, rank, shape, contiguity of the last dim, 16-byte alignment, h_q % h_kv, head dims,
// page size). With `checked`, also copies seqlens and block_table to the host (a sync on
// `stream`) and rejects negative lengths, lengths beyond max_blocks * 64 and block ids outside
// [0, num_blocks) for the pages a request uses; for an FP8 cache it also reads fp8_tensor's scale
// and checks, on the device, every fp8_token scale of every token a request owns (finite, > 0;
// unowned slots may hold anything). Without it, nothing here touches the device.
// `formats`: the KV formats accepted (another one is refused naming the cache's format and the
// accepted ones).
[[nodiscard]] MlaDecodeDims validate_args(const MlaDecodeArgs& args, bool checked,
                                          cudaStream_t stream = nullptr, KvFormats formats = {});

}  // namespace cutelab::mla
