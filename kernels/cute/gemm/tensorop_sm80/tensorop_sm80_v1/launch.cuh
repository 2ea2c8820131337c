#pragma once
// cute/gemm/tensorop_sm80/v1 host launcher: grid, shared-memory attribute, launch closure.

#include <string>

#include "cute/gemm/tensorop_sm80/tensorop_sm80_v1/config.hpp"
#include "cute/gemm/tensorop_sm80/tensorop_sm80_v1/kernel.cuh"
#include "cutelab/core/math.hpp"
#include "cutelab/runtime/launch.hpp"

namespace cutelab::gemm::tensorop_sm80_v1 {

template <class T>
Kernel build_kernel(const GemmOperands& ops, const DeviceInfo& dev) {
  using G = GemmSm80<T>;
  (void)dev;
  CUTELAB_REQUIRE(is_aligned(ops.a, 16) && is_aligned(ops.b, 16) && is_aligned(ops.c, 4),
                  "tensorop_sm80: A and B must be 16-byte aligned and C 4-byte aligned");
  typename G::Params p{};
  p.a = static_cast<const typename G::Element*>(ops.a);
  p.b = static_cast<const typename G::Element*>(ops.b);
  p.bias = static_cast<const __nv_bfloat16*>(ops.bias);
  p.c = static_cast<typename G::Element*>(ops.c);
  p.m = ops.m;
  p.n = ops.n;
  p.k = ops.k;
  p.bias_gelu = ops.epilogue == Epilogue::bias_gelu;

  auto* fn = &gemm_sm80_kernel<T>;
  const std::size_t smem = sizeof(typename G::SharedStorage);
  set_dynamic_smem(fn, smem);
  LaunchShape shape;
  shape.grid = dim3(ceil_div(ops.m, T::BM), ceil_div(ops.n, T::BN));
  shape.block = dim3(T::kThreads);
  shape.dynamic_smem = smem;

  Kernel k;
  k.launch = [fn, shape, p](cudaStream_t stream) { launch(fn, shape, stream, p); };
  k.resources.push_back(
      read_resources(reinterpret_cast<const void*>(fn), "gemm_sm80_kernel<" + T::name() + ">", T::kThreads, smem));
  return k;
}

}  // namespace cutelab::gemm::tensorop_sm80_v1
