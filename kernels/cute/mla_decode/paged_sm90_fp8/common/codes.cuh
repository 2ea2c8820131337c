#pragma once
// e4m3 codes for the FP8 designs whose tensor cores read them: fp32 -> e4m3 packing and the
// 4 x 4 byte transpose that makes a K-major V^T of a page (the swizzled offsets of their
// shared-memory tiles: swizzle.hpp; the token order of P: token_order.hpp).

#include <cstdint>

#include "cute/mla_decode/paged_sm90_fp8/common/shared_io.cuh"
#include "cute/mla_decode/paged_sm90_fp8/common/swizzle.hpp"
#include "cute/mla_decode/paged_sm90_fp8/common/token_order.hpp"

namespace cutelab::mla::paged_sm90_fp8 {

// Four fp32 values -> four e4m3 codes (round to nearest even, saturating to +-448), a in the
// lowest byte. cvt's first source lands in the upper byte of each pair.
__device__ __forceinline__ std::uint32_t pack_e4m3x4(float a, float b, float c, float d) {
  std::uint32_t out;
  asm("{\n"
      ".reg .b16 lo, hi;\n"
      "cvt.rn.satfinite.e4m3x2.f32 lo, %2, %1;\n"
      "cvt.rn.satfinite.e4m3x2.f32 hi, %4, %3;\n"
      "mov.b32 %0, {lo, hi};\n"
      "}"
      : "=r"(out)
      : "f"(a), "f"(b), "f"(c), "f"(d));
  return out;
}

// Four e4m3 codes (a in the lowest byte) times r, through f16 (`r2` = f16x2 {r, r}; e4m3 values
// are exact in f16), rounded back to e4m3 (nearest even, saturating): each code stays in its byte.
// NaN codes stay NaN.
__device__ __forceinline__ std::uint32_t scale_e4m3x4(std::uint32_t codes, std::uint32_t r2) {
  std::uint32_t out;
  asm("{\n"
      ".reg .b16 lo, hi;\n"
      ".reg .b32 flo, fhi;\n"
      "mov.b32 {lo, hi}, %1;\n"
      "cvt.rn.f16x2.e4m3x2 flo, lo;\n"
      "cvt.rn.f16x2.e4m3x2 fhi, hi;\n"
      "mul.rn.f16x2 flo, flo, %2;\n"
      "mul.rn.f16x2 fhi, fhi, %2;\n"
      "cvt.rn.satfinite.e4m3x2.f16x2 lo, flo;\n"
      "cvt.rn.satfinite.e4m3x2.f16x2 hi, fhi;\n"
      "mov.b32 %0, {lo, hi};\n"
      "}"
      : "=r"(out)
      : "r"(codes), "r"(r2));
  return out;
}

// Two bf16 values (a in the low half) times f in fp32, rounded back to bf16 (nearest even).
__device__ __forceinline__ std::uint32_t scale_bf16x2(std::uint32_t pair, float f) {
  const float a = __uint_as_float(pair << 16) * f, b = __uint_as_float(pair & 0xFFFF0000u) * f;
  std::uint32_t out;
  asm("cvt.rn.bf16x2.f32 %0, %2, %1;\n" : "=r"(out) : "f"(a), "f"(b));
  return out;
}

// The selector of the first step of a 4 x 4 byte transpose: __byte_perm(w0, w1, sel) gathers
// byte d0 of w0 and w1, then byte d1 of both.
__host__ __device__ __forceinline__ constexpr std::uint32_t pair_selector(std::uint32_t d0,
                                                                          std::uint32_t d1) {
  return d0 | ((4u + d0) << 4) | (d1 << 8) | ((4u + d1) << 12);
}

// Rows w0..w3 (4 bytes each) -> columns: out[j] holds byte dims[j] of w0, w1, w2, w3 (lowest
// first), where sel_a gathers dims[0], dims[1] and sel_b dims[2], dims[3] (pair_selector).
__device__ __forceinline__ void transpose4x4(std::uint32_t w0, std::uint32_t w1, std::uint32_t w2,
                                             std::uint32_t w3, std::uint32_t sel_a, std::uint32_t sel_b,
                                             std::uint32_t (&out)[4]) {
  const std::uint32_t t0 = __byte_perm(w0, w1, sel_a), t1 = __byte_perm(w2, w3, sel_a);
  const std::uint32_t t2 = __byte_perm(w0, w1, sel_b), t3 = __byte_perm(w2, w3, sel_b);
  out[0] = __byte_perm(t0, t1, 0x5410);
  out[1] = __byte_perm(t0, t1, 0x7632);
  out[2] = __byte_perm(t2, t3, 0x5410);
  out[3] = __byte_perm(t2, t3, 0x7632);
}

}  // namespace cutelab::mla::paged_sm90_fp8
