#pragma once
// The MLA decode family: DeepSeek-style absorbed (MQA) attention over a paged KV cache.
// Semantics: the lab's design notes (shared/DESIGN.md, "MLA decode"). All designs of the family share this file.

#include <cstdint>
#include <vector>

#include "cutelab/core/dtype.hpp"
#include "cutelab/runtime/problem.hpp"
#include "mla_decode/fp8/kv_format.hpp"

namespace cutelab::mla {

inline constexpr int kHeadDimQK = 576;  // 512 latent (also V) + 64 RoPE
inline constexpr int kHeadDimV = 512;
inline constexpr int kPageSize = 64;    // tokens per KV-cache block

// What the family supports (checked by the problem, the host API and the test workspaces).
inline constexpr int kMaxBatch = 1024;
inline constexpr int kMaxQueryLen = 8;
inline constexpr int kMaxHeadsQ = 128;
inline constexpr int kMaxHeadsKV = 8;
inline constexpr int kMaxSeqlen = 131072;  // 128K tokens
inline constexpr int kMaxKvPool = 1 << 20;  // pages of MlaDecodeProblem::kv_pool

// What the CLI and suites describe: sizes and flags, with sequence lengths drawn from them
// or given one per request (`lens`, e.g. a trace of a serving engine's decode step).
struct MlaDecodeProblem {
  int b = 1;         // requests
  int s_q = 1;       // query tokens per request
  int t = 4096;      // sequence length (mean when varlen); unused when lens is given
  int h_q = 128;     // query heads
  int h_kv = 1;      // KV heads
  bool varlen = false;  // lengths ~ N(t, t/2), at least s_q
  bool causal = false;  // only meaningful for s_q > 1
  DType dtype = DType::bf16;
  // The KV cache's format (family param kv-dtype): bf16/f16 = the cache in `dtype` ("same"), or
  // an FP8 format of kv_format.hpp (dtype bf16 only).
  KvFormat kv_format = KvFormat::bf16;
  std::vector<int> lens;  // explicit length of each request (size b, 0 allowed); empty: from t / varlen
  // > 0 (family param kv-pool): every request's pages come in turn from this many pages, so the
  // KV cache a call reads fits in L2 (a kernel's time without its DRAM stream). 0: a page each.
  int kv_pool = 0;

  [[nodiscard]] static const Family& family();
  // Throws UsageError naming the parameter for sizes the family does not support.
  [[nodiscard]] static MlaDecodeProblem from(const Problem& p);
};

// One concrete instance: explicit lengths and block-table shape. Tests build these directly;
// the CLI builds one from a MlaDecodeProblem and a seed.
struct MlaDecodeCase {
  int b = 1;
  int s_q = 1;
  int h_q = 128;
  int h_kv = 1;
  bool causal = false;
  DType dtype = DType::bf16;
  // fp8_tensor / fp8_token: the workspace also quantises the cache into that format. bf16 or f16:
  // the cache in `dtype` (either value; the workspace sets it to dtype's).
  KvFormat kv_format = KvFormat::bf16;
  float softmax_scale = 0;        // 0: 1/sqrt(576)
  std::vector<int> seqlens;       // size b; 0 allowed
  int max_blocks_per_seq = 0;     // block-table width; 0: just enough for the longest request
  int spare_blocks = 2;           // pages no request owns (NaN-filled when nan_unowned)
  bool shuffle_blocks = true;     // block tables in random order
  int kv_pool_pages = 0;          // > 0: requests share a pool of this many pages (MlaDecodeProblem::kv_pool)
  bool nan_unowned = true;        // unowned pages and the tail of each last page hold NaN
  // The arithmetic of the kernel under test (not part of the problem): its outputs' tolerances.
  MlaArithmetic arithmetic = MlaArithmetic::q_precision;

  [[nodiscard]] static MlaDecodeCase from_problem(const MlaDecodeProblem& p, std::uint64_t seed);
  [[nodiscard]] float scale() const;  // softmax_scale or its default
  [[nodiscard]] double mean_seqlen() const;
  [[nodiscard]] int blocks_per_seq() const;  // max_blocks_per_seq or the computed minimum
};

// Cost model of DESIGN.md, on the mean sequence length. mla_bytes counts the KV cache at its
// format's bytes: kv_entry_bytes / 576 per element (2 for bf16/f16, 1 for fp8_tensor, 656/576
// for fp8_token: its scales and bf16 RoPE are read too).
[[nodiscard]] double mla_flops(const MlaDecodeCase& c);
[[nodiscard]] double mla_bytes(const MlaDecodeCase& c);

// Device bytes a problem's run needs at most (MlaDecodeProblem::from refuses more than 64 GiB):
// KV pages (lengths rounded up to pages, the varlen tail allowed for), q, out, lse, the fp32
// reference copies of out and lse and, for an FP8 cache, the FP8 copy next to the bf16 original
// plus the fp32 dequantised cache the reference reads.
[[nodiscard]] double estimated_device_bytes(const MlaDecodeProblem& p);

}  // namespace cutelab::mla
