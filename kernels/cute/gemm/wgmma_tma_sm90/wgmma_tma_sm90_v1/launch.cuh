#pragma once
// cute/gemm/wgmma_tma_sm90/v1 host launcher: TMA descriptors, grid, shared-memory attribute.

#include <string>

#include "cute/gemm/wgmma_tma_sm90/wgmma_tma_sm90_v1/config.hpp"
#include "cute/gemm/wgmma_tma_sm90/wgmma_tma_sm90_v1/kernel.cuh"
#include "cutelab/core/math.hpp"
#include "cutelab/runtime/launch.hpp"

namespace cutelab::gemm::wgmma_tma_sm90_v1 {

template <class T>
Kernel build_kernel(const GemmOperands& ops, const DeviceInfo& dev) {
  using namespace cute;
  using G = GemmSm90<T>;
  using Element = typename G::Element;
  (void)dev;
  CUTELAB_REQUIRE(is_aligned(ops.a, 16) && is_aligned(ops.b, 16) && is_aligned(ops.c, 4),
                  "wgmma_tma_sm90: A and B must be 16-byte aligned (TMA) and C 4-byte aligned");
  CUTELAB_REQUIRE(ops.k % 8 == 0, "wgmma_tma_sm90: k (", ops.k, ") must be a multiple of 8 for TMA");
  const auto* a = static_cast<const Element*>(ops.a);
  const auto* b = static_cast<const Element*>(ops.b);
  Tensor mA = make_tensor(a, make_shape(ops.m, ops.k), make_stride(int64_t(ops.k), _1{}));  // (M,K)
  Tensor mB = make_tensor(b, make_shape(ops.n, ops.k), make_stride(int64_t(ops.k), _1{}));  // (N,K)

  typename G::Params p{
      make_tma_atom(SM90_TMA_LOAD{}, mA, typename G::SmemLayoutA{}(_, _, 0), make_shape(Int<T::BM>{}, Int<T::BK>{})),
      make_tma_atom(SM90_TMA_LOAD{}, mB, typename G::SmemLayoutB{}(_, _, 0), make_shape(Int<T::BN>{}, Int<T::BK>{})),
      static_cast<Element*>(ops.c),
      static_cast<const __nv_bfloat16*>(ops.bias),
      ops.m,
      ops.n,
      ops.k,
      ops.epilogue == Epilogue::bias_gelu};

  auto* fn = &gemm_sm90_v1_kernel<T>;
  const std::size_t smem = sizeof(typename G::SharedStorage);
  set_dynamic_smem(fn, smem);
  LaunchShape shape;
  shape.grid = dim3(ceil_div(ops.m, T::BM), ceil_div(ops.n, T::BN));
  shape.block = dim3(T::kThreads);
  shape.dynamic_smem = smem;

  Kernel k;
  k.launch = [fn, shape, p](cudaStream_t stream) { launch(fn, shape, stream, p); };
  k.resources.push_back(
      read_resources(reinterpret_cast<const void*>(fn), "gemm_sm90_v1_kernel<" + T::name() + ">", T::kThreads, smem));
  return k;
}

}  // namespace cutelab::gemm::wgmma_tma_sm90_v1
