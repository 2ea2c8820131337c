#pragma once
// Host launch of a paged_sm90 design's main kernel: the shared-memory attribute (set when the
// Runner is made), the launch itself (grid from the Runner, programmatic dependent launch after
// whatever precedes it: the schedule kernel, or the previous layer).

#include <cuda.h>

#include "cute/mla_decode/paged_sm90/common/host.hpp"
#include "cutelab/runtime/launch.hpp"

namespace cutelab::mla::paged_sm90 {

template <class Traits, auto kKernel>
void set_attributes() {
  set_dynamic_smem(kKernel, sizeof(typename Traits::SharedStorage));
}

template <class Traits, auto kKernel>
void launch_main(const Params& p, const KvMaps& maps, dim3 grid, cudaStream_t stream) {
  LaunchShape shape;
  shape.grid = grid;
  shape.block = dim3(Traits::kThreads, 1, 1);
  shape.dynamic_smem = sizeof(typename Traits::SharedStorage);
  shape.programmatic_dependent_launch = true;  // the kernel waits for the schedule itself
  cutelab::launch(kKernel, shape, stream, p, maps.kv);
}

template <class Traits, auto kKernel>
[[nodiscard]] MainKernel make_main_kernel(const char* name) {
  return {name, reinterpret_cast<const void*>(kKernel), sizeof(typename Traits::SharedStorage), Traits::kThreads,
          &set_attributes<Traits, kKernel>, &launch_main<Traits, kKernel>};
}

}  // namespace cutelab::mla::paged_sm90
