#pragma once
// Host launcher of cute/rmsnorm/rowwise/v1: picks the vector path when cols is a multiple of 8
// and x, w, y are 16-byte aligned; one block per RowsPerCta rows.

#include "cute/rmsnorm/rowwise/rowwise_v1/kernel.cuh"
#include "cute/rmsnorm/rowwise/rowwise_v1/launch.hpp"
#include "cutelab/core/error.hpp"
#include "cutelab/core/math.hpp"
#include "cutelab/runtime/launch.hpp"

namespace cutelab::rmsnorm::rowwise_v1 {

template <int ThreadsPerRow, int Vecs, int RowsPerCta>
PlannedLaunch plan_launch(const Args& args) {
  using Cfg = KernelConfig<ThreadsPerRow, Vecs, RowsPerCta>;
  using Kernel = RowwiseKernel<Cfg>;
  using Element = typename Kernel::Element;
  auto* const fn = &rmsnorm_rowwise_kernel<Kernel>;

  CUTELAB_REQUIRE(args.rows >= 1, "rmsnorm rowwise: rows must be >= 1, got ", args.rows);
  CUTELAB_REQUIRE(args.cols >= 1 && args.cols <= Cfg::kRowTile, "rmsnorm rowwise t", ThreadsPerRow, "_v",
                  Vecs, ": cols must be in [1, ", Cfg::kRowTile, "], got ", args.cols);
  const std::int64_t blocks = ceil_div<std::int64_t>(args.rows, RowsPerCta);
  CUTELAB_REQUIRE(blocks <= 2147483647LL, "rmsnorm rowwise: rows=", args.rows,
                  " needs more than 2^31-1 blocks");

  const bool vectorized = args.cols % kVecElems == 0 && is_aligned(args.x, 16) && is_aligned(args.w, 16) &&
                          is_aligned(args.y, 16);
  typename Kernel::Params p{static_cast<const Element*>(args.x),
                            static_cast<const Element*>(args.w),
                            static_cast<Element*>(args.y),
                            args.rows,
                            args.cols,
                            args.eps,
                            vectorized};

  LaunchShape shape;
  shape.grid = dim3(static_cast<unsigned>(blocks));
  shape.block = dim3(Cfg::kThreads);

  PlannedLaunch out;
  out.resources = read_resources(
      reinterpret_cast<const void*>(fn),
      concat("rmsnorm_rowwise_kernel<t", ThreadsPerRow, "_v", Vecs, "_r", RowsPerCta, ">"), Cfg::kThreads, 0);
  out.launch = [fn, shape, p](cudaStream_t stream) { cutelab::launch(fn, shape, stream, p); };
  return out;
}

}  // namespace cutelab::rmsnorm::rowwise_v1
