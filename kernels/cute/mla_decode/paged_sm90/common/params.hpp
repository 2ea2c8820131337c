#pragma once
// Kernel parameters of the paged_sm90 designs (the KV tensor map travels beside them, __grid_constant__).

#include <cstdint>

#include "mla_decode/split/schedule.hpp"

namespace cutelab::mla::paged_sm90 {

struct Params {
  const void* q = nullptr;          // [b, s_q, h_q, 576]
  void* out = nullptr;              // [b, s_q, h_q, 512]
  float* lse = nullptr;             // [b, h_q, s_q]
  const int* block_table = nullptr; // [b, max_blocks]
  const int* seqlens = nullptr;     // [b]
  const void* kv_cache = nullptr;   // the cache as given (FP8 designs read per-token scales from it)
  const float* kv_scale = nullptr;  // fp8_tensor: device fp32 scale of the cache
  int b = 0, s_q = 0, h_q = 0, h_kv = 0, max_blocks = 0;
  int heads_per_kv = 0;   // h_q / h_kv
  int rows_per_head = 0;  // s_q * heads_per_kv packed query rows per KV head
  int m_tiles = 0;        // ceil(rows_per_head / 64)
  float scale_log2 = 0;   // softmax scale * log2(e)
  bool causal = false;
  std::uint64_t kv_cache_hint = 0;
  SplitSchedule schedule;
  SplitPartials partials;
};

}  // namespace cutelab::mla::paged_sm90
