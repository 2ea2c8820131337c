#pragma once
// paged_sm90_fp8 v12 device code: v3's kernel (../paged_sm90_fp8_v3/kernel.cuh) with v11's Traits and
// kGuessFirstRequest, under its own name so that profiles tell the versions apart.

#include <cuda.h>

#include "cute/mla_decode/paged_sm90_fp8/paged_sm90_fp8_v12/config.hpp"
#include "cute/mla_decode/paged_sm90_fp8/paged_sm90_fp8_v3/kernel.cuh"

namespace cutelab::mla::paged_sm90_fp8_v12 {

template <class T>
__global__ void __launch_bounds__(T::kThreads, 1)
    paged_sm90_fp8_v12_kernel(const __grid_constant__ paged_sm90::Params params,
                              const __grid_constant__ CUtensorMap kv_map,
                              const __grid_constant__ CUtensorMap rope_map) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  static_assert(T::kSpreadRows && T::kTransposeOneRound && T::kPRegisterImage && T::kTransposeAhead &&
                T::kGuessFirstRequest);
  paged_sm90_fp8_v3::Kernel<T>::run(params, &kv_map, &rope_map);
#endif
}

}  // namespace cutelab::mla::paged_sm90_fp8_v12
