#include "baseline/mla_decode/flashinfer_sm90_fp8kv/flashinfer_sm90_fp8kv_v1/workspace.hpp"

#include <cuda_bf16.h>
#include <cuda_fp8.h>

#include <algorithm>
#include <cmath>

#include "cutelab/core/error.hpp"
#include "mla_decode/fp8/kv_format.hpp"

namespace cutelab::mla::flashinfer_sm90_fp8kv_v1 {
namespace {

constexpr int kThreads = 256;

int blocks_for(std::int64_t n) {
  return static_cast<int>(std::clamp<std::int64_t>((n + kThreads - 1) / kThreads, 1, 4096));
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
  auto* kv = kv_cache.view().as<__nv_bfloat16>();
  const float amax_value = kv_amax(kv_cache.view());  // NaN pages and tails skipped
  kv_scale = scale_for_amax(amax_value);
  quantise_kernel<<<blocks_for(n), kThreads>>>(kv, static_cast<__nv_fp8_e4m3*>(kv_e4m3.data()), n, kv_scale);
  CUTELAB_CUDA_LAUNCH();
  CUTELAB_CUDA(cudaDeviceSynchronize());
}

}  // namespace cutelab::mla::flashinfer_sm90_fp8kv_v1
