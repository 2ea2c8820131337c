// The FP8 designs' e4m3 -> bf16 conversion on the GPU, against the host's e4m3 decoding: every
// one of the 256 codes, unscaled and times fp32 scales (tiny, ordinary, and large enough that a
// multiply by scale * 2^120 would overflow).

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "cute/mla_decode/paged_sm90_fp8/common/dequant.cuh"
#include "cutelab/core/dtype.hpp"
#include "cutelab/core/error.hpp"
#include "cutelab/runtime/tensor.hpp"

namespace cutelab::mla {
namespace {

// Thread t converts codes 16t .. 16t + 15.
template <bool kScaled>
__global__ void dequant_all_codes(float scale, std::uint16_t* out) {
  const int t = threadIdx.x;
  std::uint32_t w[4];
  for (int i = 0; i < 4; ++i) {
    const std::uint32_t c = 16 * t + 4 * i;
    w[i] = c | (c + 1) << 8 | (c + 2) << 16 | (c + 3) << 24;
  }
  const uint4 codes = make_uint4(w[0], w[1], w[2], w[3]);
  uint4 vals[2];
  paged_sm90_fp8::dequant16<kScaled>(codes, scale, vals);
  auto* dst = reinterpret_cast<uint4*>(out + 16 * t);
  dst[0] = vals[0];
  dst[1] = vals[1];
}

std::vector<std::uint16_t> run(bool scaled, float scale) {
  DeviceBuffer out(256 * sizeof(std::uint16_t));
  if (scaled)
    dequant_all_codes<true><<<1, 16>>>(scale, static_cast<std::uint16_t*>(out.data()));
  else
    dequant_all_codes<false><<<1, 16>>>(scale, static_cast<std::uint16_t*>(out.data()));
  CUTELAB_CUDA_LAUNCH();
  std::vector<std::uint16_t> host(256);
  CUTELAB_CUDA(cudaMemcpy(host.data(), out.data(), 512, cudaMemcpyDeviceToHost));
  return host;
}

bool has_gpu() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

TEST(Fp8Dequant, EveryCodeExactUnscaled) {
  if (!has_gpu()) GTEST_SKIP() << "no CUDA device";
  const std::vector<std::uint16_t> got = run(false, 1.f);
  for (int code = 0; code < 256; ++code) {
    const float want = e4m3_bits_to_float(static_cast<std::uint8_t>(code));
    const float g = bf16_bits_to_float(got[code]);
    if (std::isnan(want))  // 0x7F / 0xFF: the bit pattern's value, documented in dequant.cuh
      EXPECT_EQ(g, (code & 0x80) ? -480.f : 480.f) << "code 0x" << std::hex << code;
    else
      EXPECT_EQ(g, want) << "code 0x" << std::hex << code;  // subnormal codes included
  }
}

TEST(Fp8Dequant, EveryCodeTimesFp32ScaleViaFp32ToBf16) {
  if (!has_gpu()) GTEST_SKIP() << "no CUDA device";
  for (float scale : {1.f / 448.f, 0.0123f, 3.7f, 300.f, 1.5e4f}) {
    const std::vector<std::uint16_t> got = run(true, scale);
    for (int code = 0; code < 256; ++code) {
      const float v = e4m3_bits_to_float(static_cast<std::uint8_t>(code));
      if (std::isnan(v)) continue;
      // The kernel's path: the product rounded to fp32, then to bf16.
      const float want = bf16_bits_to_float(float_to_bf16_bits(static_cast<float>(double(v) * scale)));
      EXPECT_EQ(bf16_bits_to_float(got[code]), want) << "code 0x" << std::hex << code << " scale " << scale;
    }
  }
}

}  // namespace
}  // namespace cutelab::mla
