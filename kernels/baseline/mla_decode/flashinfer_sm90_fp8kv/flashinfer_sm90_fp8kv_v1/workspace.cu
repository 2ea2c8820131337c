#include "baseline/mla_decode/flashinfer_sm90_fp8kv/flashinfer_sm90_fp8kv_v1/workspace.hpp"

#include <cuda_bf16.h>
#include <cuda_fp8.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "cutelab/core/error.hpp"

namespace cutelab::mla::flashinfer_sm90_fp8kv_v1 {
namespace {

constexpr int kThreads = 256;
constexpr float kE4m3Max = 448.f;

int blocks_for(std::int64_t n) {
  return static_cast<int>(std::clamp<std::int64_t>((n + kThreads - 1) / kThreads, 1, 4096));
}

// Largest finite |x| (NaN pages and tails are skipped), as float bits: non-negative floats
// order like their bit patterns.
__global__ void amax_kernel(const __nv_bfloat16* kv, std::int64_t n, unsigned* amax_bits) {
  float m = 0.f;
  for (std::int64_t i = blockIdx.x * std::int64_t{kThreads} + threadIdx.x; i < n;
       i += std::int64_t{gridDim.x} * kThreads) {
    const float v = fabsf(__bfloat162float(kv[i]));
    if (isfinite(v)) m = fmaxf(m, v);
  }
  for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
  if (threadIdx.x % 32 == 0) atomicMax(amax_bits, __float_as_uint(m));
}

// e4m3 = round(x / scale) (saturating; NaN stays NaN), and x = bf16(e4m3 * scale): the product
// is exact in fp32 (4 x 8 significant bits), so its one rounding to bf16 is the rounding of
// FlashInfer's bf16 multiply.
__global__ void quantise_kernel(__nv_bfloat16* kv, __nv_fp8_e4m3* out, std::int64_t n, float scale) {
  const float inv = 1.f / scale;
  for (std::int64_t i = blockIdx.x * std::int64_t{kThreads} + threadIdx.x; i < n;
       i += std::int64_t{gridDim.x} * kThreads) {
    const float x = __bfloat162float(kv[i]);
    const __nv_fp8_e4m3 q(x * inv);  // __NV_SATFINITE, round to nearest even
    out[i] = q;
    kv[i] = __float2bfloat16_rn(static_cast<float>(q) * scale);
  }
}

}  // namespace

float scale_for_amax(float amax) {
  if (!(amax > 0.f) || !std::isfinite(amax)) return 1.f;
  return __bfloat162float(__float2bfloat16_rn(amax / kE4m3Max));
}

Fp8KvWorkspace::Fp8KvWorkspace(MlaDecodeCase c, std::uint64_t seed) : MlaDecodeWorkspace(std::move(c), seed) {
  // Only a bf16 cache is quantised; the config refuses other dtypes before anything runs.
  if (spec().dtype != DType::bf16) return;
  const std::int64_t n = kv_cache.view().numel();
  kv_e4m3 = DeviceBuffer(static_cast<std::size_t>(n));
  DeviceBuffer amax(sizeof(unsigned));
  CUTELAB_CUDA(cudaMemset(amax.data(), 0, sizeof(unsigned)));
  auto* kv = kv_cache.view().as<__nv_bfloat16>();
  amax_kernel<<<blocks_for(n), kThreads>>>(kv, n, static_cast<unsigned*>(amax.data()));
  CUTELAB_CUDA_LAUNCH();
  unsigned bits = 0;
  CUTELAB_CUDA(cudaMemcpy(&bits, amax.data(), sizeof(bits), cudaMemcpyDeviceToHost));
  float amax_value = 0;
  std::memcpy(&amax_value, &bits, sizeof(bits));
  kv_scale = scale_for_amax(amax_value);
  quantise_kernel<<<blocks_for(n), kThreads>>>(kv, static_cast<__nv_fp8_e4m3*>(kv_e4m3.data()), n, kv_scale);
  CUTELAB_CUDA_LAUNCH();
  CUTELAB_CUDA(cudaDeviceSynchronize());
}

}  // namespace cutelab::mla::flashinfer_sm90_fp8kv_v1
