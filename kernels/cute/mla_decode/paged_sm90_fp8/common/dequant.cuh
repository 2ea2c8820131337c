#pragma once
// e4m3 -> bf16 in registers, for the FP8 designs that dequantise KV pages into bf16 tiles.

#include <cstdint>

#include <cuda_bf16.h>

#include "cute/mla_decode/paged_sm90_fp8/common/shared_io.cuh"

namespace cutelab::mla::paged_sm90_fp8 {

// Four e4m3 codes (the bytes of x, lowest first) as four bf16 values scaled by 2^-120, exactly:
// each code's sign goes to bit 15 and its 7 exponent and mantissa bits to bits 10..4, so the
// e4m3 exponent (bias 7) sits in the bf16 exponent (bias 127). Integer ops only (the conversion
// unit's cvt runs at a fraction of their rate). Subnormal codes land on bf16 subnormals.
__device__ __forceinline__ void e4m3x4_to_bf16x4_shifted(std::uint32_t x, std::uint32_t& lo,
                                                         std::uint32_t& hi) {
  const std::uint32_t a = __byte_perm(x, 0u, 0x1404);  // code 1 in bits 31..24, code 0 in 15..8
  const std::uint32_t b = __byte_perm(x, 0u, 0x3424);  // codes 3 and 2 likewise
  lo = (a & 0x80008000u) | ((a & 0x7F007F00u) >> 4);
  hi = (b & 0x80008000u) | ((b & 0x7F007F00u) >> 4);
}

__device__ __forceinline__ __nv_bfloat162 as_bf162(std::uint32_t bits) {
  return *reinterpret_cast<const __nv_bfloat162*>(&bits);
}
__device__ __forceinline__ std::uint32_t as_bits(__nv_bfloat162 v) {
  return *reinterpret_cast<const std::uint32_t*>(&v);
}

// 2^120 in both halves: undoes the shift above. bf16 multiplies keep subnormal inputs, so every
// finite code comes out exact; the NaN codes (0x7F, 0xFF) come out as +-480.
__device__ __forceinline__ __nv_bfloat162 pow2_120x2() { return as_bf162(0x7B807B80u); }

// Sixteen codes (one 16-byte shared-memory load) -> sixteen bf16 values: out[0] codes 0-7,
// out[1] codes 8-15. Unscaled (kScaled false): exact. Scaled: code * scale in fp32 (code * 2^-120
// * 2^120 is exact, the scale's multiply rounds at 2^-24), then rounded to bf16: no bf16 rounding
// of the scale itself, which a group's 128 values would share.
template <bool kScaled>
__device__ __forceinline__ void dequant16(const uint4& codes, float scale, uint4 (&out)[2]) {
  const std::uint32_t words[4] = {codes.x, codes.y, codes.z, codes.w};
  std::uint32_t res[8];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    std::uint32_t lo, hi;
    e4m3x4_to_bf16x4_shifted(words[i], lo, hi);
    if constexpr (kScaled) {
      const float f[4] = {__uint_as_float(lo << 16), __uint_as_float(lo & 0xFFFF0000u),
                          __uint_as_float(hi << 16), __uint_as_float(hi & 0xFFFF0000u)};
      float g[4];
#pragma unroll
      for (int j = 0; j < 4; ++j) g[j] = f[j] * 0x1p120f * scale;
      res[2 * i] = as_bits(__floats2bfloat162_rn(g[0], g[1]));
      res[2 * i + 1] = as_bits(__floats2bfloat162_rn(g[2], g[3]));
    } else {
      res[2 * i] = as_bits(__hmul2(as_bf162(lo), pow2_120x2()));
      res[2 * i + 1] = as_bits(__hmul2(as_bf162(hi), pow2_120x2()));
    }
  }
  out[0] = make_uint4(res[0], res[1], res[2], res[3]);
  out[1] = make_uint4(res[4], res[5], res[6], res[7]);
}

}  // namespace cutelab::mla::paged_sm90_fp8
