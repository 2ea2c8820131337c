#pragma once
// Host launcher of cute/elementwise/gelu_affine/v1: picks the vector path when both pointers
// are 16-byte aligned, sizes the grid, reads the compiled function's resources.

#include <algorithm>
#include <climits>
#include <string>

#include "cute/elementwise/gelu_affine/gelu_affine_v1/kernel.cuh"
#include "cute/elementwise/gelu_affine/gelu_affine_v1/launch.hpp"
#include "cutelab/core/error.hpp"
#include "cutelab/core/math.hpp"
#include "cutelab/runtime/launch.hpp"

namespace cutelab::elementwise::gelu_affine_v1 {

template <int Threads, int Vecs>
PlannedLaunch plan_launch(const Args& args, GridMode grid, const DeviceInfo& dev) {
  using Cfg = KernelConfig<Threads, Vecs>;
  using Kernel = GeluAffineKernel<Cfg>;
  using Element = typename Kernel::Element;
  auto* const fn = &gelu_affine_kernel<Kernel>;

  CUTELAB_REQUIRE(args.n >= 1, "gelu_affine: n must be >= 1, got ", args.n);
  const bool vector_ok = is_aligned(args.x, 16) && is_aligned(args.y, 16);
  typename Kernel::Params p{static_cast<const Element*>(args.x), static_cast<Element*>(args.y), args.n,
                            vector_ok ? args.n / Cfg::kTileElems : 0};
  const std::int64_t tail = args.n - p.num_tiles * Cfg::kTileElems;

  // Enough blocks for one tile each, or one element per thread of the tail, whichever is more.
  std::int64_t blocks = std::max<std::int64_t>(p.num_tiles, ceil_div<std::int64_t>(tail, Threads));
  if (grid == GridMode::persistent) {
    int per_sm = 0;
    CUTELAB_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, fn, Threads, 0));
    if (per_sm < 1) throw Error(concat("gelu_affine t", Threads, "_v", Vecs, ": no block fits on an SM"));
    blocks = std::min<std::int64_t>(blocks, static_cast<std::int64_t>(per_sm) * dev.sm_count);
  }
  // Both loops stride by the grid, so capping the grid never drops work.
  blocks = std::clamp<std::int64_t>(blocks, 1, INT_MAX);

  LaunchShape shape;
  shape.grid = dim3(static_cast<unsigned>(blocks));
  shape.block = dim3(Threads);

  PlannedLaunch out;
  out.resources = read_resources(reinterpret_cast<const void*>(fn),
                                 concat("gelu_affine_kernel<t", Threads, "_v", Vecs, ">"), Threads, 0);
  out.launch = [fn, shape, p](cudaStream_t stream) { cutelab::launch(fn, shape, stream, p); };
  return out;
}

}  // namespace cutelab::elementwise::gelu_affine_v1
