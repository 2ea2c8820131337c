#pragma once
// Kernel parameters of the paged_sm90 designs (the KV tensor map travels beside them, __grid_constant__).

#include <cstdint>

#include "mla_decode/split/schedule.hpp"

namespace cutelab::mla::paged_sm90 {

// A Q tile loaded by TMA (v3) is one box of the q map (576 columns, heads of one KV head, KV heads,
// query tokens of the batch): `heads` consecutive heads of `tokens` consecutive query tokens, packed
// rows in the kernels' order (token-major), no more tokens than a request has (a tile of fewer rows
// leaves the rest of the 64 unread: those rows' results are never stored). Which shapes that
// covers: q_tile_refusal (host.hpp).
struct QBox {
  int heads, tokens;
};
__host__ __device__ inline QBox q_box(int heads_per_kv, int s_q) {
  if (heads_per_kv >= 64) return QBox{64, 1};
  const int tokens = 64 / heads_per_kv;
  return QBox{heads_per_kv, tokens < s_q ? tokens : s_q};
}

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
