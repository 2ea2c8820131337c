#pragma once
// paged_sm90_fp8 v1: the main kernel as the shared Runner launches it (both KV maps).

#include "cute/mla_decode/paged_sm90/common/launch.cuh"
#include "cute/mla_decode/paged_sm90_fp8/paged_sm90_fp8_v1/api.hpp"
#include "cute/mla_decode/paged_sm90_fp8/paged_sm90_fp8_v1/kernel.cuh"

namespace cutelab::mla::paged_sm90_fp8_v1 {

template <class T>
void launch(const paged_sm90::Params& p, const paged_sm90::KvMaps& maps, dim3 grid, cudaStream_t stream) {
  LaunchShape shape;
  shape.grid = grid;
  shape.block = dim3(T::kThreads, 1, 1);
  shape.dynamic_smem = sizeof(typename T::SharedStorage);
  shape.programmatic_dependent_launch = true;  // the kernel waits for the schedule itself
  cutelab::launch(&paged_sm90_fp8_v1_kernel<T>, shape, stream, p, maps.kv, maps.rope);
}

template <KvFormat kFormat>
paged_sm90::MainKernel main_kernel() {
  using T = Traits<kFormat>;
  constexpr auto kernel = &paged_sm90_fp8_v1_kernel<T>;
  return {kFormat == KvFormat::fp8_tensor ? "paged_sm90_fp8_v1<fp8_tensor>" : "paged_sm90_fp8_v1<fp8_token>",
          reinterpret_cast<const void*>(kernel),
          sizeof(typename T::SharedStorage),
          T::kThreads,
          &paged_sm90::set_attributes<T, kernel>,
          &launch<T>,
          kFormat};
}

}  // namespace cutelab::mla::paged_sm90_fp8_v1
