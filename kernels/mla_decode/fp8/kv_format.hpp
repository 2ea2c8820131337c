#pragma once
// FP8 KV-cache formats of MLA decode, and the kernels that write and read them. A serving engine
// quantises each new token's bf16 KV row into its page slot (quantize_kv, as it appends tokens);
// references and tests read a cache back (dequantize_kv).
//
//   fp8_tensor: [num_blocks, 64, h_kv, 576] e4m3, one fp32 scale for the whole cache
//               (dequantised = scale * e4m3; TensorRT-LLM's and vLLM's FP8 KV).
//   fp8_token:  [num_blocks, 64, h_kv, 656] bytes per (token, KV head): 512 e4m3 latent values,
//               4 fp32 scales (one per 128 latent values: amax / 448), 64 bf16 RoPE values as
//               given (DeepSeek V3.2's layout, used by vLLM and SGLang).

#include <cuda_runtime_api.h>

#include <cstdint>
#include <optional>
#include <string_view>

#include "cutelab/runtime/tensor.hpp"

namespace cutelab::mla {

enum class KvFormat : std::uint8_t { bf16, f16, fp8_tensor, fp8_token };
[[nodiscard]] constexpr bool is_fp8(KvFormat f) noexcept {
  return f == KvFormat::fp8_tensor || f == KvFormat::fp8_token;
}
[[nodiscard]] std::string_view kv_format_name(KvFormat f) noexcept;
[[nodiscard]] std::optional<KvFormat> parse_kv_format(std::string_view name) noexcept;

// What a kernel rounds before its tensor cores, which sets its outputs' tolerances:
// q_precision: the cache's values (dequantised if FP8) in q's dtype, P in q's dtype;
// e4m3_q_and_p: FP8 tensor cores, so q (per-row scale) and P (times 256) rounded to e4m3 too.
// e4m3_requantised: that, and the cache's latent codes rounded to e4m3 a second time against one
// reference scale per page (fp8_token on FP8 tensor cores).
enum class MlaArithmetic : std::uint8_t { q_precision, e4m3_q_and_p, e4m3_requantised };

inline constexpr float kE4m3Max = 448.f;
inline constexpr int kFp8TokenBytes = 656;
inline constexpr int kFp8GroupCols = 128;  // latent values per fp8_token scale
inline constexpr int kFp8Groups = 4;
inline constexpr int kFp8ScaleOffset = 512;  // byte offset of the 4 fp32 scales in an entry
inline constexpr int kFp8RopeOffset = 528;   // byte offset of the 64 bf16 RoPE values

// Bytes of one (token, KV head) entry of the cache: bf16/f16 1152, fp8_tensor 576, fp8_token 656.
[[nodiscard]] int kv_entry_bytes(KvFormat f) noexcept;

struct QuantizeKvArgs {
  KvFormat format = KvFormat::fp8_tensor;
  TensorView rows;               // [n, h_kv, 576] bf16, contiguous: the new tokens' KV rows
  TensorView slots;              // [n] i32 or i64: page * 64 + offset of each row; negative: skipped
  TensorView cache;              // [num_blocks, 64, h_kv, 576 or 656] u8 (or e4m3 for fp8_tensor), contiguous
  const float* scale = nullptr;  // fp8_tensor: device fp32 scalar; unused for fp8_token
};

// Throws UsageError naming the argument (format, dtypes, ranks, shapes, contiguity, scale). With
// `checked`, also reads the slots back (a sync on `stream`) and rejects slots beyond the cache and
// two rows for one slot. Without it, nothing here touches the device.
void validate_quantize_kv(const QuantizeKvArgs& args, bool checked, cudaStream_t stream = nullptr);

// Quantises every row with a slot >= 0 into its entry; other entries are left as they are.
// e4m3 rounds to nearest even and saturates at +-448 (infinities too); NaN stays NaN and is left
// out of a group's amax. A group whose finite values are all 0 gets scale 1.
void quantize_kv(const QuantizeKvArgs& args, bool checked = false, cudaStream_t stream = nullptr);

// The cache as fp32 [num_blocks, 64, h_kv, 576]: scale * e4m3 for the latent (and, fp8_tensor,
// RoPE) columns, the stored bf16 RoPE values for fp8_token. `scale` as for quantize_kv.
void dequantize_kv(KvFormat format, const TensorView& cache, const float* scale, float* out,
                   cudaStream_t stream = nullptr);

// The largest finite |x| of a contiguous bf16 tensor (NaN and infinities are skipped; 0 when
// nothing is finite): amax / 448 is an fp8_tensor scale. Reads the result back (a sync on `stream`).
[[nodiscard]] float kv_amax(const TensorView& t, cudaStream_t stream = nullptr);

// An fp8_token scale that no kernel can divide by: NaN, infinite, zero or negative.
struct BadTokenScale {
  int request = 0, token = 0, head = 0, group = 0;  // token: position in the request
  float value = 0;
};
// Looks, on the device, at the 4 scales of every entry a request owns (its first seqlens[i]
// tokens, through block_table) and returns the first bad one, in (request, token, head, group)
// order, or nothing. Entries no request owns are not read: NaN there is legal. `cache`: an
// fp8_token cache (u8 [num_blocks, 64, h_kv, 656], any 16-byte-multiple strides); block_table
// [b, max_blocks] i32 and seqlens [b] i32 on the device, their values already checked (lengths
// within the table, block ids within the cache). Reads the result back (a sync on `stream`).
[[nodiscard]] std::optional<BadTokenScale> first_bad_token_scale(const TensorView& cache,
                                                                 const TensorView& block_table,
                                                                 const TensorView& seqlens,
                                                                 cudaStream_t stream = nullptr);

}  // namespace cutelab::mla
