#include "mla_decode/common/args.hpp"

#include <cmath>
#include <cstdint>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "cutelab/core/error.hpp"
#include "cutelab/core/math.hpp"
#include "mla_decode/common/problem.hpp"

namespace cutelab::mla {

namespace {

std::string shape_str(const std::vector<std::int64_t>& shape) {
  std::ostringstream out;
  out << '[';
  for (std::size_t i = 0; i < shape.size(); ++i) out << (i ? ", " : "") << shape[i];
  out << ']';
  return out.str();
}

std::string ptr_str(const void* p) {
  std::ostringstream out;
  out << "0x" << std::hex << reinterpret_cast<std::uintptr_t>(p);
  return out.str();
}

// Strides as given, or row-major ones when the view leaves them empty.
std::vector<std::int64_t> strides_of(const TensorView& t, const char* name) {
  if (t.stride.empty()) return contiguous_strides(t.shape);
  CUTELAB_REQUIRE(t.stride.size() == t.shape.size(), name, ": has ", t.stride.size(), " strides for rank ",
                  t.rank(), ", expected one stride per dimension");
  return t.stride;
}

void require_dtype(const TensorView& t, const char* name, DType want, const char* why = "") {
  CUTELAB_REQUIRE(t.dtype == want, name, ": expected dtype ", dtype_name(want), why, ", got ", dtype_name(t.dtype));
}

void require_rank(const TensorView& t, const char* name, int rank, const char* layout) {
  CUTELAB_REQUIRE(t.rank() == rank, name, ": expected rank ", rank, " ", layout, ", got rank ", t.rank(), " ",
                  shape_str(t.shape));
}

void require_shape(const TensorView& t, const char* name, const std::vector<std::int64_t>& want,
                   const char* layout) {
  CUTELAB_REQUIRE(t.shape == want, name, ": expected shape ", shape_str(want), " ", layout, ", got ",
                  shape_str(t.shape));
}

// Last dimension unit-stride, the others (of size > 1) positive; `row_align` bytes for the outer strides of
// tensors read or written in 16-byte vectors (and by TMA, whose global strides must be
// multiples of 16 bytes).
void require_layout(const TensorView& t, const char* name, std::size_t row_align) {
  const std::vector<std::int64_t> st = strides_of(t, name);
  const int last = t.rank() - 1;
  CUTELAB_REQUIRE(st[last] == 1 || t.shape[last] == 1, name, ": last dimension must be contiguous (stride 1), got stride ", st[last]);
  const std::int64_t elem = static_cast<std::int64_t>(dtype_size(t.dtype));
  for (int d = 0; d < last; ++d) {
    if (t.shape[d] == 1) continue;  // never stepped over: any stride is fine
    CUTELAB_REQUIRE(st[d] >= 1, name, ": stride of dim ", d, " must be positive, got ", st[d]);
    CUTELAB_REQUIRE((st[d] * elem) % static_cast<std::int64_t>(row_align) == 0, name, ": stride of dim ", d,
                    " is ", st[d], " elements (", st[d] * elem, " bytes), expected a multiple of ", row_align,
                    " bytes");
  }
}

void require_pointer(const TensorView& t, const char* name, std::size_t align) {
  CUTELAB_REQUIRE(t.data != nullptr, name, ": pointer is null");
  CUTELAB_REQUIRE(is_aligned(t.data, align), name, ": pointer ", ptr_str(t.data), " is not ", align,
                  "-byte aligned");
}

void require_range(std::int64_t v, const char* what, std::int64_t lo, std::int64_t hi) {
  CUTELAB_REQUIRE(v >= lo && v <= hi, what, " = ", v, " is unsupported, expected ", lo, "..", hi);
}

// What the cache's dtype and last dimension say it holds; nothing when no format matches.
std::optional<KvFormat> format_of(const TensorView& kv, DType q_dtype) {
  if (kv.dtype == q_dtype) return q_dtype == DType::f16 ? KvFormat::f16 : KvFormat::bf16;
  if (kv.dtype == DType::e4m3) return KvFormat::fp8_tensor;
  if (kv.dtype == DType::u8 && kv.rank() >= 1) {
    if (kv.shape.back() == kHeadDimQK) return KvFormat::fp8_tensor;
    if (kv.shape.back() == kFp8TokenBytes) return KvFormat::fp8_token;
  }
  return std::nullopt;
}

bool accepts(KvFormats formats, KvFormat f) {
  switch (f) {
    case KvFormat::fp8_tensor:
      return formats.fp8_tensor;
    case KvFormat::fp8_token:
      return formats.fp8_token;
    default:
      return formats.same_as_q;
  }
}

// "bf16 (same as q), fp8_tensor (e4m3 or u8 [.., 576]) or ...": what `formats` reads.
std::string accepted_text(KvFormats formats, DType q_dtype) {
  std::vector<std::string> parts;
  if (formats.same_as_q) parts.push_back(concat(dtype_name(q_dtype), " (same as q)"));
  if (formats.fp8_tensor) parts.push_back(concat("fp8_tensor (e4m3 or u8 [.., ", kHeadDimQK, "])"));
  if (formats.fp8_token) parts.push_back(concat("fp8_token (u8 [.., ", kFp8TokenBytes, "])"));
  std::string out;
  for (std::size_t i = 0; i < parts.size(); ++i)
    out += (i == 0 ? "" : i + 1 == parts.size() ? " or " : ", ") + parts[i];
  return out.empty() ? "no KV cache" : out;
}

// "a bf16 cache (same as q)", "an fp8_token cache (u8 [.., 656])".
std::string cache_text(KvFormat f, const TensorView& kv) {
  const std::string_view name = kv_format_name(f);
  const char* article = name.front() == 'f' ? "an " : "a ";  // f16, fp8_*: "an eff..."
  if (!is_fp8(f)) return concat(article, name, " cache (same as q)");
  return concat(article, name, " cache (", dtype_name(kv.dtype), " [.., ", kv_entry_bytes(f), "])");
}

// The KV cache's format, refused when `formats` does not list it.
KvFormat check_format(const MlaDecodeArgs& a, DType q_dtype, KvFormats formats) {
  const std::optional<KvFormat> f = format_of(a.kv_cache, q_dtype);
  if (!f) {
    const bool fp8_accepted = formats.fp8_tensor || formats.fp8_token;
    CUTELAB_REQUIRE(!(fp8_accepted && a.kv_cache.dtype == DType::u8),
                    "kv_cache: a u8 cache holds fp8_tensor (last dim ", kHeadDimQK,
                    ") or fp8_token (last dim ", kFp8TokenBytes, ") entries, got shape ",
                    shape_str(a.kv_cache.shape));
    throw UsageError(concat("kv_cache: expected dtype ", accepted_text(formats, q_dtype), ", got ",
                            dtype_name(a.kv_cache.dtype)));
  }
  CUTELAB_REQUIRE(accepts(formats, *f), "kv_cache: ", cache_text(*f, a.kv_cache), "; this kernel reads ",
                  accepted_text(formats, q_dtype));
  CUTELAB_REQUIRE(!is_fp8(*f) || q_dtype == DType::bf16, "q: expected dtype bf16 with ",
                  cache_text(*f, a.kv_cache), ", got ", dtype_name(q_dtype));
  return *f;
}

// fp8_tensor's scale: a device fp32 scalar; no other format takes one.
void check_kv_scale(const MlaDecodeArgs& a, KvFormat f) {
  if (f != KvFormat::fp8_tensor) {
    CUTELAB_REQUIRE(a.kv_scale == nullptr, "kv_scale: given for ", cache_text(f, a.kv_cache),
                    "; only fp8_tensor takes one");
    return;
  }
  CUTELAB_REQUIRE(a.kv_scale != nullptr,
                  "kv_scale: an fp8_tensor cache needs its device fp32 scale, got null");
  CUTELAB_REQUIRE(is_aligned(a.kv_scale, sizeof(float)), "kv_scale: pointer ", ptr_str(a.kv_scale),
                  " is not 4-byte aligned");
}

// Checked mode's look at the FP8 scales (after the lengths and block ids, which it relies on).
void check_fp8_scales(const MlaDecodeArgs& a, KvFormat f, cudaStream_t stream) {
  if (f == KvFormat::fp8_tensor) {
    float scale = 0;
    CUTELAB_CUDA(cudaMemcpyAsync(&scale, a.kv_scale, sizeof(float), cudaMemcpyDeviceToHost, stream));
    CUTELAB_CUDA(cudaStreamSynchronize(stream));
    CUTELAB_REQUIRE(std::isfinite(scale) && scale > 0, "kv_scale: expected a finite value > 0, got ", scale);
  } else if (f == KvFormat::fp8_token) {
    const std::optional<BadTokenScale> bad =
        first_bad_token_scale(a.kv_cache, a.block_table, a.seqlens, stream);
    CUTELAB_REQUIRE(!bad, "kv_cache: the scale of request ", bad->request, ", token ", bad->token,
                    ", KV head ", bad->head, ", group ", bad->group, " (latent columns ",
                    bad->group * kFp8GroupCols, "..", (bad->group + 1) * kFp8GroupCols - 1, ") is ",
                    bad->value, "; fp8_token scales of owned tokens must be finite and > 0");
  }
}

// The device-value checks of checked mode, on host copies.
void check_device_values(const MlaDecodeArgs& a, const MlaDecodeDims& d, cudaStream_t stream) {
  const std::vector<std::int64_t> bt_stride = strides_of(a.block_table, "block_table");
  std::vector<int> lens(static_cast<std::size_t>(d.b));
  std::vector<int> table(static_cast<std::size_t>(d.b) * d.max_blocks);
  CUTELAB_CUDA(cudaMemcpyAsync(lens.data(), a.seqlens.data, lens.size() * sizeof(int), cudaMemcpyDeviceToHost,
                               stream));
  // One row needs no pitch (and its stride may be anything).
  const std::int64_t pitch = d.b > 1 ? bt_stride[0] : d.max_blocks;
  CUTELAB_CUDA(cudaMemcpy2DAsync(table.data(), d.max_blocks * sizeof(int), a.block_table.data, pitch * sizeof(int),
                                 d.max_blocks * sizeof(int), d.b, cudaMemcpyDeviceToHost, stream));
  CUTELAB_CUDA(cudaStreamSynchronize(stream));

  const std::int64_t capacity = static_cast<std::int64_t>(d.max_blocks) * kPageSize;
  for (int i = 0; i < d.b; ++i) {
    const int len = lens[i];
    CUTELAB_REQUIRE(len >= 0, "seqlens[", i, "] = ", len, " is negative");
    CUTELAB_REQUIRE(len <= capacity, "seqlens[", i, "] = ", len, " exceeds max_blocks * ", kPageSize, " = ",
                    capacity);
    CUTELAB_REQUIRE(len <= kMaxSeqlen, "seqlens[", i, "] = ", len, " is unsupported, expected at most ",
                    kMaxSeqlen);
    // Only the pages a request uses must hold valid ids; the rest of its row is never read.
    const int pages = ceil_div(len, kPageSize);
    for (int j = 0; j < pages; ++j) {
      const int id = table[static_cast<std::size_t>(i) * d.max_blocks + j];
      CUTELAB_REQUIRE(id >= 0 && id < d.num_blocks, "block_table[", i, "][", j, "] = ", id, " is outside [0, ",
                      d.num_blocks, ")");
    }
  }
}

}  // namespace

MlaDecodeDims validate_args(const MlaDecodeArgs& a, bool checked, cudaStream_t stream, KvFormats formats) {
  MlaDecodeDims d;

  // q decides the dtype and the sizes everything else is checked against.
  CUTELAB_REQUIRE(a.q.dtype == DType::bf16 || a.q.dtype == DType::f16, "q: expected dtype bf16 or f16, got ",
                  dtype_name(a.q.dtype));
  d.dtype = a.q.dtype;
  require_rank(a.q, "q", 4, "[b, s_q, h_q, 576]");
  CUTELAB_REQUIRE(a.q.shape[3] == kHeadDimQK, "q: unsupported head dim ", a.q.shape[3], ", expected ", kHeadDimQK,
                  " (512 latent + 64 RoPE)");
  require_range(a.q.shape[0], "b (q dim 0)", 1, kMaxBatch);
  require_range(a.q.shape[1], "s_q (q dim 1)", 1, kMaxQueryLen);
  require_range(a.q.shape[2], "h_q (q dim 2)", 1, kMaxHeadsQ);
  d.b = static_cast<int>(a.q.shape[0]);
  d.s_q = static_cast<int>(a.q.shape[1]);
  d.h_q = static_cast<int>(a.q.shape[2]);

  d.kv_format = check_format(a, d.dtype, formats);
  const bool token_format = d.kv_format == KvFormat::fp8_token;
  require_rank(a.kv_cache, "kv_cache", 4,
               token_format ? "[num_blocks, 64, h_kv, 656]" : "[num_blocks, 64, h_kv, 576]");
  CUTELAB_REQUIRE(a.kv_cache.shape[1] == kPageSize, "kv_cache: expected ", kPageSize, " tokens per page, got ",
                  a.kv_cache.shape[1]);
  if (!token_format)  // fp8_token's 656 bytes were what told it apart
    CUTELAB_REQUIRE(a.kv_cache.shape[3] == kHeadDimQK, "kv_cache: unsupported head dim ", a.kv_cache.shape[3],
                    ", expected ", kHeadDimQK, " (512 latent + 64 RoPE)");
  require_range(a.kv_cache.shape[2], "h_kv (kv_cache dim 2)", 1, kMaxHeadsKV);
  CUTELAB_REQUIRE(a.kv_cache.shape[0] >= 1 && a.kv_cache.shape[0] <= INT32_MAX,
                  "kv_cache: expected 1..", INT32_MAX, " blocks (dim 0), got ", a.kv_cache.shape[0]);
  d.h_kv = static_cast<int>(a.kv_cache.shape[2]);
  d.num_blocks = static_cast<int>(a.kv_cache.shape[0]);
  CUTELAB_REQUIRE(d.h_q % d.h_kv == 0, "h_q (", d.h_q, ") must be a multiple of h_kv (", d.h_kv, ")");

  require_dtype(a.block_table, "block_table", DType::i32);
  require_rank(a.block_table, "block_table", 2, "[b, max_blocks]");
  CUTELAB_REQUIRE(a.block_table.shape[0] == d.b, "block_table: expected ", d.b, " rows (b from q), got shape ",
                  shape_str(a.block_table.shape));
  CUTELAB_REQUIRE(a.block_table.shape[1] >= 1 && a.block_table.shape[1] <= INT32_MAX / kPageSize,
                  "block_table: expected 1..", INT32_MAX / kPageSize, " columns (max_blocks), got ",
                  a.block_table.shape[1]);
  d.max_blocks = static_cast<int>(a.block_table.shape[1]);
  if (d.b > 1) {
    const std::int64_t row_stride = strides_of(a.block_table, "block_table")[0];
    CUTELAB_REQUIRE(row_stride >= d.max_blocks, "block_table: row stride ", row_stride,
                    " is smaller than a row (max_blocks = ", d.max_blocks, "): rows would overlap");
  }

  require_dtype(a.seqlens, "seqlens", DType::i32);
  require_shape(a.seqlens, "seqlens", {d.b}, "[b]");

  require_dtype(a.out, "out", d.dtype, " (same as q)");
  require_rank(a.out, "out", 4, "[b, s_q, h_q, 512]");
  require_shape(a.out, "out", {d.b, d.s_q, d.h_q, kHeadDimV}, "[b, s_q, h_q, 512]");

  require_dtype(a.lse, "lse", DType::f32);
  require_rank(a.lse, "lse", 3, "[b, h_q, s_q]");
  require_shape(a.lse, "lse", {d.b, d.h_q, d.s_q}, "[b, h_q, s_q]");

  require_layout(a.q, "q", 16);
  require_layout(a.kv_cache, "kv_cache", 16);
  require_layout(a.out, "out", 16);
  require_layout(a.block_table, "block_table", sizeof(int));
  require_layout(a.seqlens, "seqlens", sizeof(int));
  require_layout(a.lse, "lse", sizeof(float));

  require_pointer(a.q, "q", 16);
  require_pointer(a.kv_cache, "kv_cache", 16);
  require_pointer(a.out, "out", 16);
  require_pointer(a.block_table, "block_table", sizeof(int));
  require_pointer(a.seqlens, "seqlens", sizeof(int));
  require_pointer(a.lse, "lse", sizeof(float));
  check_kv_scale(a, d.kv_format);

  CUTELAB_REQUIRE(std::isfinite(a.softmax_scale) && a.softmax_scale >= 0,
                  "softmax_scale: expected a finite value > 0 (or 0 for 1/sqrt(576)), got ", a.softmax_scale);
  d.scale = a.softmax_scale != 0 ? a.softmax_scale : 1.0f / std::sqrt(static_cast<float>(kHeadDimQK));

  if (checked) {
    check_device_values(a, d, stream);
    check_fp8_scales(a, d.kv_format, stream);
  }
  return d;
}

}  // namespace cutelab::mla
