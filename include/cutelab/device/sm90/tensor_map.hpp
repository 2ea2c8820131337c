#pragma once
// Host: TMA tensor maps (CUtensorMap) without linking the driver library. The entry point is
// fetched through the runtime, so binaries still load on machines without a GPU driver.

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <array>
#include <cstdint>

#include "cutelab/core/error.hpp"

namespace cutelab::sm90 {

// cudaTypedefs.h's PFN_ types are unusable here: CUTLASS includes that header inside its namespace.
using TensorMapEncoder = decltype(&::cuTensorMapEncodeTiled);

[[nodiscard]] inline TensorMapEncoder tensor_map_encoder() {
  static TensorMapEncoder fn = [] {
    void* pfn = nullptr;
    cudaDriverEntryPointQueryResult status{};
    CUTELAB_CUDA(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &pfn, 12000, cudaEnableDefault, &status));
    if (status != cudaDriverEntryPointSuccess || pfn == nullptr)
      throw Error("cuTensorMapEncodeTiled is not available from this driver");
    return reinterpret_cast<TensorMapEncoder>(pfn);
  }();
  return fn;
}

// A tiled map of rank R: dims[0] is the contiguous one; strides_bytes[i] is the byte stride of
// dims[i + 1]; box[i] elements per copy along dims[i].
template <int R>
[[nodiscard]] CUtensorMap make_tiled_tensor_map(CUtensorMapDataType type, const void* base,
                                                const std::array<std::uint64_t, R>& dims,
                                                const std::array<std::uint64_t, R - 1>& strides_bytes,
                                                const std::array<std::uint32_t, R>& box, CUtensorMapSwizzle swizzle,
                                                CUtensorMapL2promotion promotion = CU_TENSOR_MAP_L2_PROMOTION_L2_256B) {
  CUtensorMap map{};
  std::array<std::uint32_t, R> element_strides;
  element_strides.fill(1);
  const CUresult r = tensor_map_encoder()(&map, type, R, const_cast<void*>(base), dims.data(), strides_bytes.data(),
                                          box.data(), element_strides.data(), CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle,
                                          promotion, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS)
    throw Error(concat("cuTensorMapEncodeTiled failed (CUresult ", static_cast<int>(r), ") for a rank-", R,
                       " map at ", base, "; dims[0] = ", dims[0], ", box[0] = ", box[0]));
  return map;
}

}  // namespace cutelab::sm90
