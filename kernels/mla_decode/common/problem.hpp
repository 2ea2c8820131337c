#pragma once
// The MLA decode family: DeepSeek-style absorbed (MQA) attention over a paged KV cache.
// Semantics: the lab's design notes (shared/DESIGN.md, "MLA decode"). All designs of the family share this file.

#include <cstdint>
#include <vector>

#include "cutelab/core/dtype.hpp"
#include "cutelab/runtime/problem.hpp"

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
  std::vector<int> lens;  // explicit length of each request (size b, 0 allowed); empty: from t / varlen

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
  float softmax_scale = 0;        // 0: 1/sqrt(576)
  std::vector<int> seqlens;       // size b; 0 allowed
  int max_blocks_per_seq = 0;     // block-table width; 0: just enough for the longest request
  int spare_blocks = 2;           // pages no request owns (NaN-filled when nan_unowned)
  bool shuffle_blocks = true;     // block tables in random order
  bool nan_unowned = true;        // unowned pages and the tail of each last page hold NaN

  [[nodiscard]] static MlaDecodeCase from_problem(const MlaDecodeProblem& p, std::uint64_t seed);
  [[nodiscard]] float scale() const;  // softmax_scale or its default
  [[nodiscard]] double mean_seqlen() const;
  [[nodiscard]] int blocks_per_seq() const;  // max_blocks_per_seq or the computed minimum
};

// Cost model of DESIGN.md, on the mean sequence length.
[[nodiscard]] double mla_flops(const MlaDecodeCase& c);
[[nodiscard]] double mla_bytes(const MlaDecodeCase& c);

}  // namespace cutelab::mla
