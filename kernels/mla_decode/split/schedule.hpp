#pragma once
// Split-KV schedule for MLA decode, computed on the GPU from seqlens (no host round trip, so a
// decode step can be captured in a CUDA graph), and the combine step that merges split pieces.
//
// The work of all requests is laid on one line: request i costs n_i KV blocks plus a fixed
// overhead F (its Q load, its epilogue), requests of length 0 cost nothing. The line is cut into
// `num_parts` equal parts; part p processes the blocks whose position falls in
// [p*P, (p+1)*P). A request cut by a part boundary is "split": each of its pieces writes fp32
// partial output + lse into a slot, and the combine kernel merges them. Unsplit requests are
// written directly by the main kernel. Pieces of split requests number at most 2 * num_parts.
// When there are no more requests than parts and the longest request costs at most a part plus
// F, each request gets a part of its own instead and nothing is split (b = 128 at s_k 4096 on
// 132 parts: no partials, no combine work). With more requests than parts, the cuts move to
// the nearest request boundaries when no part then costs more than a part plus F (whole
// requests again: b = 128, h_q = 128 at s_k 4096 on 66 parts puts two requests in each part;
// measured 6% faster than splitting there once the output stores were sector-complete).
//
// Source of the idea: FlashMLA's get_mla_metadata (deepseek-ai/FlashMLA), which balances the same
// cost line with a fixed per-request overhead; this implementation (block scans, a binary search
// per part, closed-form split counts) is the lab's own.

#include <cuda_runtime_api.h>

#include <cstdint>

#include <vector>

#include "cutelab/core/dtype.hpp"
#include "cutelab/runtime/kernel.hpp"
#include "mla_decode/common/problem.hpp"

namespace cutelab::mla {

struct PartInfo {
  int begin_req, begin_blk;  // first block of the part
  int end_req, end_blk;      // first block after it
};

struct RequestSplit {
  int num_splits;    // pieces; 0 for an empty request, 1 when unsplit
  int split_offset;  // first partial slot of a split request
  int first_part;    // part that holds block 0
  int num_blocks;    // ceil(seqlen / 64)
};

// Device pointers of one schedule (scratch owned by the caller).
struct SplitSchedule {
  PartInfo* parts = nullptr;         // [num_parts]
  RequestSplit* requests = nullptr;  // [b]
  int num_parts = 0;
  int fixed_overhead_blocks = 0;
  int min_blocks_per_part = 1;  // fewer, longer parts: less partial traffic for small batches
  // 0: parts of equal cost. w >= 1: the last part costs 1/w of the others. For a grid whose last
  // row of parts cannot start at once: with u columns and h < u SMs left beside the full rows, that
  // row runs in w = ceil(u / h) waves on those SMs, and every SM finishes with the full rows (b64
  // s_q 4 h_q 128: 8 columns of 16 parts + 4 SMs; a last row of half parts in two waves).
  int tail_waves = 0;
  // Cleared by the schedule kernel; set to 1 by a later kernel that meets a request whose length
  // now needs another page count than the one planned (its outputs are then written as NaN).
  int* reuse_error = nullptr;
};

// Pages of a request of `len` tokens, as the schedule counts them.
__host__ __device__ inline int planned_pages(int len) { return len > 0 ? (len + kPageSize - 1) / kPageSize : 0; }

// Maximum batch the schedule kernel handles in one block.
inline constexpr int kScheduleMaxBatch = 1024;

void launch_split_schedule(const int* seqlens, int b, const SplitSchedule& s, cudaStream_t stream);

// What a split piece writes as its partial row: fp32, or out's dtype. Each row is normalised by
// its own sum, so in out's dtype its values are out's values: half the bytes written and read
// back (the partial rows outweigh the KV of a small batch at h_q 128), one more rounding of a
// split row. A tuning choice of the designs that write both.
enum class PartialFormat : int { fp32, out_dtype };

// Partial results: slot-major, then kv head, then packed query row (rows_per_head rows), then
// 512 columns in `format`. Natural-log lse in fp32; -inf for a piece in which a row saw no key.
struct SplitPartials {
  void* out = nullptr;   // [2 * num_parts slots, h_kv, rows_per_head, 512]
  float* lse = nullptr;  // [2 * num_parts slots, h_kv, rows_per_head]
  int rows_per_head = 0;
  PartialFormat format = PartialFormat::fp32;
};

struct CombineArgs {
  void* out = nullptr;  // [b, s_q, h_q, 512] of dtype
  float* lse = nullptr;  // [b, h_q, s_q]
  const RequestSplit* requests = nullptr;
  const int* seqlens = nullptr;  // the call's lengths, checked against the planned page counts
  int* reuse_error = nullptr;
  SplitPartials partials;
  int b = 0, s_q = 0, h_q = 0, h_kv = 0;
  int pieces_hint = 1;  // pieces a split request may have (combine_pieces_hint): picks the launch shape
  DType dtype = DType::bf16;
};

// How many pieces a split request of a schedule may have, roughly: the parts a request gets on
// average (plus the cut one shares), at most its pages in parts of min_blocks_per_part. Only a
// launch-shape choice rests on it: any value gives a correct result (the order of the sums, not its
// accuracy, depends on it).
inline int combine_pieces_hint(int b, int num_parts, int max_blocks, int min_blocks_per_part) {
  const int shortest = min_blocks_per_part > 1 ? min_blocks_per_part : 1;  // as the schedule reads it
  const int by_parts = (num_parts + b - 1) / b + 1;
  const int by_pages = (max_blocks + shortest - 1) / shortest;
  return by_parts < by_pages ? by_parts : by_pages;
}

// Merges split requests and writes empty requests (out 0, lse +inf); leaves unsplit ones alone.
// A request whose length no longer matches its planned page count gets NaN (and reuse_error).
// Launched as a programmatic dependent of the main kernel (it waits for it on the device).
void launch_split_combine(const CombineArgs& a, cudaStream_t stream);

// The schedule and combine kernels as launched for a batch of b requests, for reports.
[[nodiscard]] std::vector<FunctionResources> split_kernel_resources(
    DType dtype, int b, int s_q, int h_q, int pieces_hint, PartialFormat format = PartialFormat::fp32);

}  // namespace cutelab::mla
