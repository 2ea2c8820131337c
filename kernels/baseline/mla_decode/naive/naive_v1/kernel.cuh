#pragma once
// Device code of the naive MLA decode baseline: online softmax in fp32, no tensor cores.
// Per 64-token page: each warp takes keys in turn and reduces their logits against the tile's
// q rows (held scaled in shared memory); one warp per head updates the running max and sum;
// then every thread adds p * V for its output columns of every head.

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "mla_decode/common/problem.hpp"

namespace cutelab::mla::naive_v1 {

struct NaiveParams {
  const void* q;
  const void* kv;
  const int* block_table;
  const int* seqlens;
  void* out;
  float* lse;
  std::int64_t q_stride[3];    // b, s_q, h_q (elements)
  std::int64_t kv_stride[3];   // block, token, h_kv
  std::int64_t out_stride[3];  // b, s_q, h_q
  std::int64_t lse_stride[3];  // b, h_q, s_q
  std::int64_t bt_stride;      // row of the block table
  int s_q, h_q, group, head_tiles;  // group = h_q / h_kv; head_tiles = ceil(group / heads)
  float scale;
  bool causal;
};

template <class T>
__device__ float2 load_pair(const T* p) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>) return __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(p));
  else return __half22float2(*reinterpret_cast<const __half2*>(p));
}

template <class T>
__device__ T from_float(float v) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>) return __float2bfloat16_rn(v);
  else return __float2half_rn(v);
}

__device__ inline float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

__device__ inline float warp_max(float v) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

template <class T, int kThreads, int kHeads>
__global__ void __launch_bounds__(kThreads) naive_mla_decode_kernel(NaiveParams p) {
  static_assert(kThreads % 32 == 0 && kHeadDimV % kThreads == 0, "threads must split the 512 columns");
  static_assert(kHeadDimQK % 64 == 0, "a lane holds whole bf16x2 pairs of a key row");
  constexpr int kWarps = kThreads / 32;
  constexpr int kCols = kHeadDimV / kThreads;        // output columns per thread
  constexpr int kPairs = kHeadDimQK / 64;            // bf16x2 pairs of a key row per lane
  __shared__ float s_q[kHeads][kHeadDimQK];          // scaled q rows of the tile
  __shared__ float s_p[kHeads][kPageSize];           // logits, then probabilities, of one page
  __shared__ float s_max[kHeads], s_sum[kHeads], s_alpha[kHeads];

  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int kv_head = blockIdx.x / p.head_tiles;
  const int tile_head0 = (blockIdx.x % p.head_tiles) * kHeads;
  const int heads = min(kHeads, p.group - tile_head0);
  const int head0 = kv_head * p.group + tile_head0;  // first query head of this CTA
  const int row = blockIdx.y, req = blockIdx.z;
  const int len = p.seqlens[req];
  const int visible = p.causal ? max(0, min(len, len - p.s_q + row + 1)) : len;

  const T* q = static_cast<const T*>(p.q) + req * p.q_stride[0] + row * p.q_stride[1];
  for (int i = tid; i < kHeads * kHeadDimQK; i += kThreads) {
    const int h = i / kHeadDimQK, c = i % kHeadDimQK;
    s_q[h][c] = h < heads ? static_cast<float>(q[(head0 + h) * p.q_stride[2] + c]) * p.scale : 0.0f;
  }
  for (int i = tid; i < kHeads * kPageSize; i += kThreads) s_p[i / kPageSize][i % kPageSize] = 0.0f;
  if (tid < kHeads) {
    s_max[tid] = -INFINITY;
    s_sum[tid] = 0.0f;
    s_alpha[tid] = 1.0f;
  }
  float acc[kHeads][kCols] = {};
  __syncthreads();

  const int* table = p.block_table + req * p.bt_stride;
  for (int base = 0; base < visible; base += kPageSize) {
    const int n = min(kPageSize, visible - base);  // keys of this page the row sees
    const T* page = static_cast<const T*>(p.kv) + table[base / kPageSize] * p.kv_stride[0] + kv_head * p.kv_stride[2];

    for (int j = warp; j < n; j += kWarps) {
      const T* key = page + j * p.kv_stride[1];
      float2 k[kPairs];
      for (int c = 0; c < kPairs; ++c) k[c] = load_pair(key + 2 * (lane + 32 * c));
      for (int h = 0; h < heads; ++h) {
        float dot = 0.0f;
        for (int c = 0; c < kPairs; ++c) {
          const int col = 2 * (lane + 32 * c);
          dot += k[c].x * s_q[h][col] + k[c].y * s_q[h][col + 1];
        }
        dot = warp_sum(dot);
        if (lane == 0) s_p[h][j] = dot;
      }
    }
    __syncthreads();

    for (int h = warp; h < heads; h += kWarps) {
      const float a = lane < n ? s_p[h][lane] : -INFINITY;
      const float b = lane + 32 < n ? s_p[h][lane + 32] : -INFINITY;
      const float m_old = s_max[h];
      const float m_new = fmaxf(m_old, warp_max(fmaxf(a, b)));  // finite: n >= 1
      const float pa = lane < n ? expf(a - m_new) : 0.0f;
      const float pb = lane + 32 < n ? expf(b - m_new) : 0.0f;
      s_p[h][lane] = pa;
      s_p[h][lane + 32] = pb;
      const float page_sum = warp_sum(pa + pb);
      __syncwarp();  // every lane has read s_max[h] before lane 0 replaces it
      if (lane == 0) {
        const float alpha = expf(m_old - m_new);  // 0 on the first page (m_old = -inf)
        s_alpha[h] = alpha;
        s_sum[h] = s_sum[h] * alpha + page_sum;
        s_max[h] = m_new;
      }
    }
    __syncthreads();

    for (int h = 0; h < kHeads; ++h)
      for (int e = 0; e < kCols; ++e) acc[h][e] *= s_alpha[h];
    // Only the n keys the row sees: the rest of the page may hold NaN.
    for (int j = 0; j < n; ++j) {
      const T* v = page + j * p.kv_stride[1];
      for (int e = 0; e < kCols; ++e) {
        const float x = static_cast<float>(v[tid + e * kThreads]);
        for (int h = 0; h < kHeads; ++h) acc[h][e] += s_p[h][j] * x;
      }
    }
    __syncthreads();  // s_p and s_alpha are rewritten by the next page
  }

  T* out = static_cast<T*>(p.out) + req * p.out_stride[0] + row * p.out_stride[1];
  for (int h = 0; h < heads; ++h) {
    const int head = head0 + h;
    const float inv = visible > 0 ? 1.0f / s_sum[h] : 0.0f;  // length 0: out = 0
    for (int e = 0; e < kCols; ++e) out[head * p.out_stride[2] + tid + e * kThreads] = from_float<T>(acc[h][e] * inv);
    if (tid == 0)
      p.lse[req * p.lse_stride[0] + head * p.lse_stride[1] + row * p.lse_stride[2]] =
          visible > 0 ? s_max[h] + logf(s_sum[h]) : INFINITY;
  }
}

}  // namespace cutelab::mla::naive_v1
