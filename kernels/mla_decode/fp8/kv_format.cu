#include "mla_decode/fp8/kv_format.hpp"

#include <cuda_bf16.h>
#include <cuda_fp8.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "cutelab/core/error.hpp"
#include "cutelab/core/math.hpp"
#include "mla_decode/common/problem.hpp"

namespace cutelab::mla {
namespace {

constexpr int kQuantizeThreads = 96;  // fp8_token: 64 latent lanes (16 per group), 8 RoPE lanes

__device__ __forceinline__ std::int64_t slot_of(const void* slots, bool i64, int row) {
  return i64 ? static_cast<const std::int64_t*>(slots)[row] : static_cast<const int*>(slots)[row];
}

// Eight bf16 values (one 16-byte load) as floats.
__device__ __forceinline__ void load8(const __nv_bfloat16* src, float (&v)[8]) {
  const uint4 raw = *reinterpret_cast<const uint4*>(src);
  const auto* h = reinterpret_cast<const __nv_bfloat162*>(&raw);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float2 f = __bfloat1622float2(h[i]);
    v[2 * i] = f.x;
    v[2 * i + 1] = f.y;
  }
}

// e4m3 of v / scale, eight at a time (round to nearest even, saturating; NaN stays NaN).
__device__ __forceinline__ uint2 to_e4m3(const float (&v)[8], float scale) {
  uint2 out;
  auto* bytes = reinterpret_cast<__nv_fp8_e4m3*>(&out);
#pragma unroll
  for (int i = 0; i < 8; ++i) bytes[i] = __nv_fp8_e4m3(__fdiv_rn(v[i], scale));
  return out;
}

// One block per (row, KV head): the entry of slot slots[row].
__global__ void __launch_bounds__(kQuantizeThreads)
    quantize_tensor_kernel(const __nv_bfloat16* rows, const void* slots, bool slots_i64, std::uint8_t* cache,
                           int h_kv, const float* scale_ptr) {
  const int row = blockIdx.x, head = blockIdx.y, t = threadIdx.x;
  const std::int64_t slot = slot_of(slots, slots_i64, row);
  if (slot < 0 || t >= kHeadDimQK / 8) return;
  const std::int64_t entry = slot * h_kv + head;
  float v[8];
  load8(rows + (static_cast<std::int64_t>(row) * h_kv + head) * kHeadDimQK + t * 8, v);
  *reinterpret_cast<uint2*>(cache + entry * kHeadDimQK + t * 8) = to_e4m3(v, *scale_ptr);
}

__global__ void __launch_bounds__(kQuantizeThreads)
    quantize_token_kernel(const __nv_bfloat16* rows, const void* slots, bool slots_i64, std::uint8_t* cache,
                          int h_kv) {
  const int row = blockIdx.x, head = blockIdx.y, t = threadIdx.x;
  const std::int64_t slot = slot_of(slots, slots_i64, row);
  if (slot < 0) return;
  std::uint8_t* entry = cache + (slot * h_kv + head) * kFp8TokenBytes;
  const __nv_bfloat16* src = rows + (static_cast<std::int64_t>(row) * h_kv + head) * kHeadDimQK;
  if (t < kFp8Groups * 16) {  // warps 0 and 1: a half-warp per group of 128 latent values
    const int group = t / 16, lane = t % 16;
    float v[8];
    load8(src + group * kFp8GroupCols + lane * 8, v);
    float amax = 0.f;
#pragma unroll
    for (int i = 0; i < 8; ++i)
      if (isfinite(v[i])) amax = fmaxf(amax, fabsf(v[i]));
#pragma unroll
    for (int o = 8; o > 0; o >>= 1) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, o));
    const float scale = amax > 0.f ? amax / kE4m3Max : 1.f;
    *reinterpret_cast<uint2*>(entry + group * kFp8GroupCols + lane * 8) = to_e4m3(v, scale);
    if (lane == 0) *reinterpret_cast<float*>(entry + kFp8ScaleOffset + group * 4) = scale;
  } else if (t < kFp8Groups * 16 + 8) {  // the RoPE values, as given
    const int i = t - kFp8Groups * 16;
    *reinterpret_cast<uint4*>(entry + kFp8RopeOffset + i * 16) =
        *reinterpret_cast<const uint4*>(src + kHeadDimV + i * 8);
  }
}

__global__ void dequantize_kernel(KvFormat format, const std::uint8_t* cache, const float* scale_ptr,
                                  float* out) {
  const std::int64_t entry = blockIdx.x;
  float* dst = out + entry * kHeadDimQK;
  if (format == KvFormat::fp8_tensor) {
    const float scale = *scale_ptr;
    const auto* src = reinterpret_cast<const __nv_fp8_e4m3*>(cache + entry * kHeadDimQK);
    for (int c = threadIdx.x; c < kHeadDimQK; c += blockDim.x) dst[c] = static_cast<float>(src[c]) * scale;
    return;
  }
  const std::uint8_t* src = cache + entry * kFp8TokenBytes;
  const auto* scales = reinterpret_cast<const float*>(src + kFp8ScaleOffset);
  const auto* rope = reinterpret_cast<const __nv_bfloat16*>(src + kFp8RopeOffset);
  for (int c = threadIdx.x; c < kHeadDimQK; c += blockDim.x)
    dst[c] = c < kHeadDimV ? static_cast<float>(reinterpret_cast<const __nv_fp8_e4m3*>(src)[c]) *
                                 scales[c / kFp8GroupCols]
                           : __bfloat162float(rope[c - kHeadDimV]);
}

constexpr int kAmaxThreads = 256;

// Largest finite |x|, as float bits: non-negative floats order like their bit patterns, so one
// atomicMax on the bits per warp. Eight values per 16-byte load, the last n % 8 one by one.
__global__ void __launch_bounds__(kAmaxThreads)
    amax_kernel(const __nv_bfloat16* x, std::int64_t n, unsigned* amax_bits) {
  const std::int64_t stride = std::int64_t{gridDim.x} * kAmaxThreads;
  const std::int64_t first = blockIdx.x * std::int64_t{kAmaxThreads} + threadIdx.x;
  float m = 0.f;
  for (std::int64_t i = first; i < n / 8; i += stride) {
    float v[8];
    load8(x + i * 8, v);
#pragma unroll
    for (int k = 0; k < 8; ++k)
      if (isfinite(v[k])) m = fmaxf(m, fabsf(v[k]));
  }
  for (std::int64_t i = n / 8 * 8 + first; i < n; i += stride) {
    const float v = __bfloat162float(x[i]);
    if (isfinite(v)) m = fmaxf(m, fabsf(v));
  }
  for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
  if (threadIdx.x % 32 == 0) atomicMax(amax_bits, __float_as_uint(m));
}

constexpr int kScaleCheckThreads = 256;
constexpr int kScaleCheckBlocksPerRequest = 32;

struct ScaleCheckParams {
  const std::uint8_t* cache;
  std::int64_t block_stride, token_stride, head_stride;  // bytes
  const int* block_table;
  std::int64_t table_stride;  // row of the block table
  const int* seqlens;
  int h_kv;
};

// One grid row per request, its owned (token, head, group) scales spread over the row's blocks.
// A bad scale's (request, token, head, group), at most 1024 x 131072 x 8 x 4 = 2^32 values, goes
// into the high word and its bits into the low one: the smallest word is the first bad scale.
__global__ void __launch_bounds__(kScaleCheckThreads)
    bad_token_scale_kernel(ScaleCheckParams p, unsigned long long* first) {
  const int req = blockIdx.x;
  const int per_token = p.h_kv * kFp8Groups;
  const std::int64_t n = static_cast<std::int64_t>(p.seqlens[req]) * per_token;
  const int* table = p.block_table + req * p.table_stride;
  for (std::int64_t i = blockIdx.y * std::int64_t{kScaleCheckThreads} + threadIdx.x; i < n;
       i += std::int64_t{gridDim.y} * kScaleCheckThreads) {
    const int token = static_cast<int>(i / per_token);
    const int head = static_cast<int>(i % per_token) / kFp8Groups;
    const int group = static_cast<int>(i % kFp8Groups);
    const std::int64_t page = table[token / kPageSize];
    const float scale = *reinterpret_cast<const float*>(p.cache + page * p.block_stride +
                                                        (token % kPageSize) * p.token_stride +
                                                        head * p.head_stride + kFp8ScaleOffset + 4 * group);
    if (isfinite(scale) && scale > 0.f) continue;
    const unsigned long long key =
        ((static_cast<unsigned long long>(req) * kMaxSeqlen + token) * kMaxHeadsKV + head) * kFp8Groups +
        group;
    // NaN as the canonical quiet NaN: a word of all ones stays "none found".
    atomicMin(first, key << 32 | (isnan(scale) ? 0x7FC00000u : __float_as_uint(scale)));
  }
}

std::string shape_text(const TensorView& t) { return t.describe(); }

std::vector<std::int64_t> strides_or_contiguous(const TensorView& t) {
  return t.stride.empty() ? contiguous_strides(t.shape) : t.stride;
}

void require_fp8(KvFormat f) {
  CUTELAB_REQUIRE(f == KvFormat::fp8_tensor || f == KvFormat::fp8_token,
                  "format: expected fp8_tensor or fp8_token, got ", kv_format_name(f));
}

void require_cache(KvFormat f, const TensorView& cache, std::int64_t h_kv) {
  CUTELAB_REQUIRE(cache.dtype == DType::u8 || (f == KvFormat::fp8_tensor && cache.dtype == DType::e4m3),
                  "cache: expected dtype u8", f == KvFormat::fp8_tensor ? " or e4m3" : "", ", got ",
                  dtype_name(cache.dtype));
  const std::int64_t bytes = kv_entry_bytes(f);
  CUTELAB_REQUIRE(cache.rank() == 4 && cache.shape[1] == kPageSize && cache.shape[3] == bytes &&
                      (h_kv < 0 || cache.shape[2] == h_kv),
                  "cache: expected shape [num_blocks, ", kPageSize, ", ",
                  h_kv < 0 ? std::string("h_kv") : std::to_string(h_kv), ", ", bytes, "] for ",
                  kv_format_name(f), ", got ", shape_text(cache));
  CUTELAB_REQUIRE(cache.shape[0] >= 1, "cache: expected at least one block, got ", shape_text(cache));
  CUTELAB_REQUIRE(cache.shape[2] >= 1 && cache.shape[2] <= kMaxHeadsKV, "cache: h_kv = ", cache.shape[2],
                  " is outside 1..", kMaxHeadsKV);
  CUTELAB_REQUIRE(cache.contiguous(), "cache: must be contiguous, got strides of ", shape_text(cache));
  CUTELAB_REQUIRE(cache.data && is_aligned(cache.data, 16), "cache: pointer must be 16-byte aligned");
}

}  // namespace

std::string_view kv_format_name(KvFormat f) noexcept {
  switch (f) {
    case KvFormat::bf16:
      return "bf16";
    case KvFormat::f16:
      return "f16";
    case KvFormat::fp8_tensor:
      return "fp8_tensor";
    case KvFormat::fp8_token:
      return "fp8_token";
  }
  return "?";
}

std::optional<KvFormat> parse_kv_format(std::string_view name) noexcept {
  for (KvFormat f : {KvFormat::bf16, KvFormat::f16, KvFormat::fp8_tensor, KvFormat::fp8_token})
    if (kv_format_name(f) == name) return f;
  return std::nullopt;
}

int kv_entry_bytes(KvFormat f) noexcept {
  switch (f) {
    case KvFormat::bf16:
    case KvFormat::f16:
      return 2 * kHeadDimQK;
    case KvFormat::fp8_tensor:
      return kHeadDimQK;
    case KvFormat::fp8_token:
      return kFp8TokenBytes;
  }
  return 0;
}

void validate_quantize_kv(const QuantizeKvArgs& a, bool checked, cudaStream_t stream) {
  require_fp8(a.format);
  CUTELAB_REQUIRE(a.rows.dtype == DType::bf16, "rows: expected dtype bf16, got ", dtype_name(a.rows.dtype));
  CUTELAB_REQUIRE(a.rows.rank() == 3 && a.rows.shape[2] == kHeadDimQK, "rows: expected shape [n, h_kv, ",
                  kHeadDimQK, "], got ", shape_text(a.rows));
  CUTELAB_REQUIRE(a.rows.contiguous(), "rows: must be contiguous, got ", shape_text(a.rows));
  CUTELAB_REQUIRE(a.slots.dtype == DType::i32 || a.slots.dtype == DType::i64,
                  "slots: expected dtype i32 or i64, got ", dtype_name(a.slots.dtype));
  CUTELAB_REQUIRE(a.slots.rank() == 1 && a.slots.shape[0] == a.rows.shape[0], "slots: expected shape [",
                  a.rows.shape[0], "] (one per row), got ", shape_text(a.slots));
  CUTELAB_REQUIRE(a.slots.contiguous(), "slots: must be contiguous, got ", shape_text(a.slots));
  require_cache(a.format, a.cache, a.rows.shape[1]);
  CUTELAB_REQUIRE(a.rows.shape[0] <= INT32_MAX, "rows: n = ", a.rows.shape[0],
                  " is more than one launch covers");
  const std::int64_t n = a.rows.shape[0];
  if (n > 0) {
    CUTELAB_REQUIRE(a.rows.data && is_aligned(a.rows.data, 16), "rows: pointer must be 16-byte aligned");
    CUTELAB_REQUIRE(a.slots.data, "slots: pointer is null");
  }
  if (a.format == KvFormat::fp8_tensor)
    CUTELAB_REQUIRE(a.scale && is_aligned(a.scale, 4), "scale: fp8_tensor needs a device fp32 scale, got ",
                    a.scale ? "a misaligned pointer" : "null");
  if (!checked || n == 0) return;
  std::vector<std::int64_t> slots(static_cast<std::size_t>(n));
  if (a.slots.dtype == DType::i64) {
    CUTELAB_CUDA(cudaMemcpyAsync(slots.data(), a.slots.data, n * sizeof(std::int64_t), cudaMemcpyDeviceToHost,
                                 stream));
    CUTELAB_CUDA(cudaStreamSynchronize(stream));
  } else {
    std::vector<int> s32(static_cast<std::size_t>(n));
    CUTELAB_CUDA(cudaMemcpyAsync(s32.data(), a.slots.data, n * sizeof(int), cudaMemcpyDeviceToHost, stream));
    CUTELAB_CUDA(cudaStreamSynchronize(stream));
    std::copy(s32.begin(), s32.end(), slots.begin());
  }
  const std::int64_t capacity = a.cache.shape[0] * kPageSize;
  std::vector<std::int64_t> seen;
  for (std::int64_t i = 0; i < n; ++i) {
    CUTELAB_REQUIRE(slots[i] < capacity, "slots[", i, "] = ", slots[i], " is beyond the cache's ", capacity,
                    " slots (", a.cache.shape[0], " blocks of ", kPageSize, ")");
    if (slots[i] >= 0) seen.push_back(slots[i]);
  }
  std::sort(seen.begin(), seen.end());
  const auto dup = std::adjacent_find(seen.begin(), seen.end());
  CUTELAB_REQUIRE(dup == seen.end(), "slots: slot ", dup == seen.end() ? 0 : *dup,
                  " is given to more than one row (which one lands would be unspecified)");
}

void quantize_kv(const QuantizeKvArgs& a, bool checked, cudaStream_t stream) {
  validate_quantize_kv(a, checked, stream);
  const int n = static_cast<int>(a.rows.shape[0]);
  if (n == 0) return;
  const dim3 grid(n, static_cast<unsigned>(a.rows.shape[1]));
  const int h_kv = static_cast<int>(a.rows.shape[1]);
  const bool i64 = a.slots.dtype == DType::i64;
  auto* cache = static_cast<std::uint8_t*>(a.cache.data);
  const auto* rows = a.rows.as<const __nv_bfloat16>();
  if (a.format == KvFormat::fp8_tensor)
    quantize_tensor_kernel<<<grid, kQuantizeThreads, 0, stream>>>(rows, a.slots.data, i64, cache, h_kv,
                                                                  a.scale);
  else
    quantize_token_kernel<<<grid, kQuantizeThreads, 0, stream>>>(rows, a.slots.data, i64, cache, h_kv);
  CUTELAB_CUDA_LAUNCH();
}

void dequantize_kv(KvFormat format, const TensorView& cache, const float* scale, float* out,
                   cudaStream_t stream) {
  require_fp8(format);
  require_cache(format, cache, -1);
  if (format == KvFormat::fp8_tensor)
    CUTELAB_REQUIRE(scale, "scale: fp8_tensor needs a device fp32 scale, got null");
  CUTELAB_REQUIRE(out, "out: pointer is null");
  const std::int64_t entries = cache.shape[0] * kPageSize * cache.shape[2];
  CUTELAB_REQUIRE(entries <= INT32_MAX, "cache: ", entries, " entries are more than one launch covers");
  dequantize_kernel<<<static_cast<unsigned>(entries), 128, 0, stream>>>(
      format, static_cast<const std::uint8_t*>(cache.data), scale, out);
  CUTELAB_CUDA_LAUNCH();
}

float kv_amax(const TensorView& t, cudaStream_t stream) {
  CUTELAB_REQUIRE(t.dtype == DType::bf16, "kv_amax: expected dtype bf16, got ", dtype_name(t.dtype));
  CUTELAB_REQUIRE(t.stride.empty() || t.contiguous(),
                  "kv_amax: expected a contiguous tensor, got strides of ", shape_text(t));
  const std::int64_t n = t.numel();
  if (n == 0) return 0.f;
  CUTELAB_REQUIRE(t.data && is_aligned(t.data, 16), "kv_amax: pointer must be 16-byte aligned");
  DeviceBuffer bits(sizeof(unsigned));
  CUTELAB_CUDA(cudaMemsetAsync(bits.data(), 0, sizeof(unsigned), stream));
  const int blocks =
      static_cast<int>(std::clamp<std::int64_t>(ceil_div<std::int64_t>(n / 8 + 1, kAmaxThreads), 1, 4096));
  amax_kernel<<<blocks, kAmaxThreads, 0, stream>>>(t.as<const __nv_bfloat16>(), n,
                                                   static_cast<unsigned*>(bits.data()));
  CUTELAB_CUDA_LAUNCH();
  unsigned host_bits = 0;
  CUTELAB_CUDA(cudaMemcpyAsync(&host_bits, bits.data(), sizeof(unsigned), cudaMemcpyDeviceToHost, stream));
  CUTELAB_CUDA(cudaStreamSynchronize(stream));
  float amax = 0.f;
  std::memcpy(&amax, &host_bits, sizeof(amax));
  return amax;
}

std::optional<BadTokenScale> first_bad_token_scale(const TensorView& cache, const TensorView& block_table,
                                                   const TensorView& seqlens, cudaStream_t stream) {
  CUTELAB_REQUIRE(cache.dtype == DType::u8 && cache.rank() == 4 && cache.shape[1] == kPageSize &&
                      cache.shape[3] == kFp8TokenBytes,
                  "cache: expected an fp8_token cache u8 [num_blocks, ", kPageSize, ", h_kv, ",
                  kFp8TokenBytes, "], got ", shape_text(cache));
  CUTELAB_REQUIRE(cache.shape[2] >= 1 && cache.shape[2] <= kMaxHeadsKV, "cache: h_kv = ", cache.shape[2],
                  " is outside 1..", kMaxHeadsKV);
  CUTELAB_REQUIRE(seqlens.dtype == DType::i32 && seqlens.rank() == 1 && seqlens.shape[0] >= 1 &&
                      seqlens.shape[0] <= kMaxBatch,
                  "seqlens: expected i32 [b] with b in 1..", kMaxBatch, ", got ", shape_text(seqlens));
  CUTELAB_REQUIRE(
      block_table.dtype == DType::i32 && block_table.rank() == 2 && block_table.shape[0] == seqlens.shape[0],
      "block_table: expected i32 [", seqlens.shape[0], ", max_blocks], got ", shape_text(block_table));
  const std::vector<std::int64_t> cs = strides_or_contiguous(cache);
  CUTELAB_REQUIRE(cs[3] == 1 && cs[0] % 16 == 0 && cs[1] % 16 == 0 && cs[2] % 16 == 0,
                  "cache: expected unit-stride entries and 16-byte-multiple outer strides, got ",
                  shape_text(cache));
  const ScaleCheckParams p{static_cast<const std::uint8_t*>(cache.data),
                           cs[0],
                           cs[1],
                           cs[2],
                           block_table.as<const int>(),
                           strides_or_contiguous(block_table)[0],
                           seqlens.as<const int>(),
                           static_cast<int>(cache.shape[2])};
  constexpr unsigned long long kNone = ~0ull;
  DeviceBuffer first(sizeof(kNone));
  CUTELAB_CUDA(cudaMemsetAsync(first.data(), 0xFF, sizeof(kNone), stream));
  const dim3 grid(
      static_cast<unsigned>(seqlens.shape[0]),
      static_cast<unsigned>(std::min<std::int64_t>(block_table.shape[1], kScaleCheckBlocksPerRequest)));
  bad_token_scale_kernel<<<grid, kScaleCheckThreads, 0, stream>>>(
      p, static_cast<unsigned long long*>(first.data()));
  CUTELAB_CUDA_LAUNCH();
  unsigned long long word = kNone;
  CUTELAB_CUDA(cudaMemcpyAsync(&word, first.data(), sizeof(word), cudaMemcpyDeviceToHost, stream));
  CUTELAB_CUDA(cudaStreamSynchronize(stream));
  if (word == kNone) return std::nullopt;
  const unsigned long long key = word >> 32;
  const auto value_bits = static_cast<std::uint32_t>(word & 0xFFFFFFFFull);
  BadTokenScale bad;
  bad.group = static_cast<int>(key % kFp8Groups);
  bad.head = static_cast<int>(key / kFp8Groups % kMaxHeadsKV);
  bad.token = static_cast<int>(key / kFp8Groups / kMaxHeadsKV % kMaxSeqlen);
  bad.request = static_cast<int>(key / kFp8Groups / kMaxHeadsKV / kMaxSeqlen);
  std::memcpy(&bad.value, &value_bits, sizeof(bad.value));
  return bad;
}

}  // namespace cutelab::mla
