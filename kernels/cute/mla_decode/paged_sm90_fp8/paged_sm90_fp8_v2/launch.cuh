#pragma once
// paged_sm90_fp8 v2: the main kernel as the shared Runner launches it.

#include "cute/mla_decode/paged_sm90/common/launch.cuh"
#include "cute/mla_decode/paged_sm90_fp8/paged_sm90_fp8_v2/api.hpp"
#include "cute/mla_decode/paged_sm90_fp8/paged_sm90_fp8_v2/kernel.cuh"

namespace cutelab::mla::paged_sm90_fp8_v2 {

inline void launch(const paged_sm90::Params& p, const paged_sm90::KvMaps& maps, dim3 grid,
                   cudaStream_t stream) {
  LaunchShape shape;
  shape.grid = grid;
  shape.block = dim3(Traits::kThreads, 1, 1);
  shape.dynamic_smem = sizeof(typename Traits::SharedStorage);
  shape.programmatic_dependent_launch = true;  // the kernel waits for the schedule itself
  cutelab::launch(&paged_sm90_fp8_v2_kernel<Traits>, shape, stream, p, maps.kv, maps.rope);
}

inline paged_sm90::MainKernel make_main_kernel() {
  constexpr auto kernel = &paged_sm90_fp8_v2_kernel<Traits>;
  return {"paged_sm90_fp8_v2<fp8_tensor>",
          reinterpret_cast<const void*>(kernel),
          sizeof(typename Traits::SharedStorage),
          Traits::kThreads,
          &paged_sm90::set_attributes<Traits, kernel>,
          &launch,
          KvFormat::fp8_tensor,
          /*fp8_swizzled=*/true};  // the tensor cores read the staged boxes
}

}  // namespace cutelab::mla::paged_sm90_fp8_v2
