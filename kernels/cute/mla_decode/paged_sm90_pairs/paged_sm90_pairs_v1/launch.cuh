#pragma once
// Host launcher of paged_sm90_pairs v1's main kernel: shared-memory attribute and launch. The
// schedule, the tensor map and the combine are paged_sm90::Runner's.

#include "cute/mla_decode/paged_sm90_pairs/paged_sm90_pairs_v1/api.hpp"
#include "cute/mla_decode/paged_sm90_pairs/paged_sm90_pairs_v1/config.hpp"
#include "cute/mla_decode/paged_sm90_pairs/paged_sm90_pairs_v1/kernel.cuh"
#include "cutelab/runtime/launch.hpp"

namespace cutelab::mla::paged_sm90_pairs_v1 {

template <class Element>
void launch_main(const Params& p, const CUtensorMap& kv_map, dim3 grid, cudaStream_t stream) {
  using T = Traits<Element>;
  static const bool smem_attribute_set = [] {
    set_dynamic_smem(paged_sm90_pairs_v1_kernel<T>, sizeof(typename T::SharedStorage));
    return true;
  }();
  (void)smem_attribute_set;
  LaunchShape shape;
  shape.grid = grid;
  shape.block = dim3(T::kThreads, 1, 1);
  shape.dynamic_smem = sizeof(typename T::SharedStorage);
  shape.programmatic_dependent_launch = true;  // the kernel waits for the schedule itself
  cutelab::launch(paged_sm90_pairs_v1_kernel<T>, shape, stream, p, kv_map);
}

template <class Element>
paged_sm90::MainKernel main_kernel() {
  using T = Traits<Element>;
  return {"paged_sm90_pairs_v1", reinterpret_cast<const void*>(&paged_sm90_pairs_v1_kernel<T>), sizeof(typename T::SharedStorage),
          &launch_main<Element>};
}

}  // namespace cutelab::mla::paged_sm90_pairs_v1
