#pragma once
// The host API of every MLA decode kernel: device tensors in, out and lse written.

#include <cuda_runtime_api.h>

#include "cutelab/core/dtype.hpp"
#include "cutelab/runtime/tensor.hpp"

namespace cutelab::mla {

struct MlaDecodeArgs {
  TensorView q;            // [b, s_q, h_q, 576]               bf16 | f16
  TensorView kv_cache;     // [num_blocks, 64, h_kv, 576]      same dtype as q
  TensorView block_table;  // [b, max_blocks]                  i32
  TensorView seqlens;      // [b]                              i32, >= 0
  TensorView out;          // [b, s_q, h_q, 512]               same dtype as q
  TensorView lse;          // [b, h_q, s_q]                    f32, natural log
  float softmax_scale = 0;  // 0: 1/sqrt(576)
  bool causal = false;      // query i of a request sees the first seqlen - s_q + i + 1 keys
};

// Sizes read off validated arguments.
struct MlaDecodeDims {
  int b = 0, s_q = 0, h_q = 0, h_kv = 0, num_blocks = 0, max_blocks = 0;
  DType dtype = DType::bf16;
  float scale = 0;  // the softmax scale actually used
};

// Checks every argument before anything is launched; throws UsageError naming the argument
// (dtype, rank, shape, contiguity of the last dim, 16-byte alignment, h_q % h_kv, head dims,
// page size). With `checked`, also copies seqlens and block_table to the host (a sync on
// `stream`) and rejects negative lengths, lengths beyond max_blocks * 64 and block ids outside
// [0, num_blocks) for the pages a request uses. Without it, nothing here touches the device.
[[nodiscard]] MlaDecodeDims validate_args(const MlaDecodeArgs& args, bool checked, cudaStream_t stream = nullptr);

}  // namespace cutelab::mla
