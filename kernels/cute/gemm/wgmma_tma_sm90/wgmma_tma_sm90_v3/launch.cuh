#pragma once
// cute/gemm/wgmma_tma_sm90/v3 host launcher: multicast TMA descriptors, cluster-tile order,
// a persistent grid of as many clusters as can be resident at once.

#include <algorithm>
#include <string>

#include "cute/gemm/wgmma_tma_sm90/wgmma_tma_sm90_v3/config.hpp"
#include "cute/gemm/wgmma_tma_sm90/wgmma_tma_sm90_v3/kernel.cuh"
#include "cutelab/core/math.hpp"
#include "cutelab/runtime/launch.hpp"

namespace cutelab::gemm::wgmma_tma_sm90_v3 {

template <class T>
Kernel build_kernel(const GemmOperands& ops, const Config& c, const DeviceInfo& dev) {
  using namespace cute;
  using G = GemmSm90<T>;
  using Element = typename G::Element;
  CUTELAB_REQUIRE(is_aligned(ops.a, 16) && is_aligned(ops.b, 16) && is_aligned(ops.c, 4),
                  "wgmma_tma_sm90: A and B must be 16-byte aligned (TMA) and C 4-byte aligned");
  CUTELAB_REQUIRE(ops.k % 8 == 0, "wgmma_tma_sm90: k (", ops.k, ") must be a multiple of 8 for TMA");
  CUTELAB_REQUIRE(dev.sm_count > 0, "wgmma_tma_sm90/v3: the device reports no SMs");
  const auto* a = static_cast<const Element*>(ops.a);
  const auto* b = static_cast<const Element*>(ops.b);
  Tensor mA = make_tensor(a, make_shape(ops.m, ops.k), make_stride(int64_t(ops.k), _1{}));  // (M,K)
  Tensor mB = make_tensor(b, make_shape(ops.n, ops.k), make_stride(int64_t(ops.k), _1{}));  // (N,K)

  TileOrder order;  // in cluster tiles
  order.tiles_m = ceil_div(ceil_div(ops.m, T::BM), T::CM);
  order.tiles_n = ceil_div(ceil_div(ops.n, T::BN), T::CN);
  order.band = c.band;
  order.raster = c.raster;

  typename G::Params p{make_tma_atom(typename G::TmaOpA{}, mA, typename G::SmemLayoutA{}(_, _, 0),
                                     make_shape(Int<T::BM>{}, Int<T::BK>{}), Int<T::CN>{}),
                       make_tma_atom(typename G::TmaOpB{}, mB, typename G::SmemLayoutB{}(_, _, 0),
                                     make_shape(Int<T::BN>{}, Int<T::BK>{}), Int<T::CM>{}),
                       static_cast<Element*>(ops.c),
                       static_cast<const __nv_bfloat16*>(ops.bias),
                       ops.m,
                       ops.n,
                       ops.k,
                       ops.epilogue == Epilogue::bias_gelu,
                       order};

  auto* fn = &gemm_sm90_v3_kernel<T>;
  const std::size_t smem = sizeof(typename G::SharedStorage);
  set_dynamic_smem(fn, smem);
  LaunchShape shape;
  shape.block = dim3(kThreads);
  shape.cluster = dim3(T::kClusterSize);
  shape.dynamic_smem = smem;

  // How many clusters fit at once depends on how SMs group into GPCs, not just on sm_count.
  cudaLaunchConfig_t query{};
  query.gridDim = dim3(T::kClusterSize * std::max(1, dev.sm_count / T::kClusterSize));
  query.blockDim = shape.block;
  query.dynamicSmemBytes = smem;
  cudaLaunchAttribute attr{};
  attr.id = cudaLaunchAttributeClusterDimension;
  attr.val.clusterDim.x = T::kClusterSize;
  attr.val.clusterDim.y = 1;
  attr.val.clusterDim.z = 1;
  query.attrs = &attr;
  query.numAttrs = 1;
  int max_clusters = 0;
  if (cudaOccupancyMaxActiveClusters(&max_clusters, fn, &query) != cudaSuccess || max_clusters <= 0) {
    (void)cudaGetLastError();
    max_clusters = std::max(1, dev.sm_count / T::kClusterSize);
  }
  shape.grid = dim3(T::kClusterSize * std::min(order.num_tiles(), max_clusters));

  Kernel k;
  k.launch = [fn, shape, p](cudaStream_t stream) { launch(fn, shape, stream, p); };
  k.resources.push_back(
      read_resources(reinterpret_cast<const void*>(fn), "gemm_sm90_v3_kernel<" + T::name() + ">", kThreads, smem));
  return k;
}

}  // namespace cutelab::gemm::wgmma_tma_sm90_v3
