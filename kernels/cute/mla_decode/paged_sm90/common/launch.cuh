#pragma once
// Host launch of a paged_sm90 design's main kernel: the shared-memory attribute (set when the
// Runner is made), the launch itself (grid from the Runner, programmatic dependent launch after
// whatever precedes it: the schedule kernel, or the previous layer).

#include <cuda.h>

#include <optional>

#include "cute/mla_decode/paged_sm90/common/main_kernel.hpp"
#include "cutelab/runtime/launch.hpp"

namespace cutelab::mla::paged_sm90 {

template <class Traits, auto kKernel>
void set_attributes() {
  set_dynamic_smem(kKernel, sizeof(typename Traits::SharedStorage));
}

// A main kernel takes (Params, kv map), (Params, kv map, second map): the FP8 designs' rope map,
// or the q map of a design that loads Q tiles by TMA (kQMap), or (Params, kv, rope, scale maps).
template <class... Args>
constexpr int map_count(void (*)(Params, Args...)) {
  return sizeof...(Args);
}

template <class Traits, auto kKernel, bool kQMap>
void launch_main(const Params& p, const KvMaps& maps, dim3 grid, cudaStream_t stream) {
  LaunchShape shape;
  shape.grid = grid;
  shape.block = dim3(Traits::kThreads, 1, 1);
  shape.dynamic_smem = sizeof(typename Traits::SharedStorage);
  shape.programmatic_dependent_launch = true;  // the kernel waits for the schedule itself
  if constexpr (map_count(kKernel) == 3)
    cutelab::launch(kKernel, shape, stream, p, maps.kv, maps.rope, maps.scales);
  else if constexpr (map_count(kKernel) == 2)
    cutelab::launch(kKernel, shape, stream, p, maps.kv, kQMap ? maps.q : maps.rope);
  else
    cutelab::launch(kKernel, shape, stream, p, maps.kv);
}

// `fp8_format`: the FP8 cache the kernel reads (none: q's dtype); `fp8_swizzled`, kQMap: MainKernel's
// fp8_swizzled and q_map.
template <class Traits, auto kKernel, bool kQMap = false>
[[nodiscard]] MainKernel make_main_kernel(const char* name, std::optional<KvFormat> fp8_format = {},
                                          bool fp8_swizzled = false,
                                          PartialFormat partials = PartialFormat::fp32) {
  return {name,
          reinterpret_cast<const void*>(kKernel),
          sizeof(typename Traits::SharedStorage),
          Traits::kThreads,
          &set_attributes<Traits, kKernel>,
          &launch_main<Traits, kKernel, kQMap>,
          fp8_format,
          fp8_swizzled,
          partials,
          kQMap,
          map_count(kKernel) == 3};
}

}  // namespace cutelab::mla::paged_sm90
