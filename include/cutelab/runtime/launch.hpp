#pragma once
// The one launch helper every kernel uses: cudaLaunchKernelEx with optional cluster shape and
// programmatic dependent launch; the dynamic shared-memory attribute raised when needed.

#include <cuda_runtime.h>

#include <cstddef>

#include "cutelab/core/error.hpp"

namespace cutelab {

struct LaunchShape {
  dim3 grid{1, 1, 1};
  dim3 block{1, 1, 1};
  dim3 cluster{1, 1, 1};
  std::size_t dynamic_smem = 0;
  bool programmatic_dependent_launch = false;  // may start before the previous kernel ends
};

// Raises the function's dynamic shared-memory limit; call once per function at plan time.
template <class... Args>
void set_dynamic_smem(void (*kernel)(Args...), std::size_t bytes) {
  if (bytes > 48 * 1024)
    CUTELAB_CUDA(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)));
}

template <class... Params, class... Args>
void launch(void (*kernel)(Params...), const LaunchShape& shape, cudaStream_t stream, Args&&... args) {
  cudaLaunchConfig_t config{};
  config.gridDim = shape.grid;
  config.blockDim = shape.block;
  config.dynamicSmemBytes = shape.dynamic_smem;
  config.stream = stream;
  cudaLaunchAttribute attrs[2];
  unsigned n = 0;
  if (shape.cluster.x * shape.cluster.y * shape.cluster.z > 1) {
    attrs[n].id = cudaLaunchAttributeClusterDimension;
    attrs[n].val.clusterDim.x = shape.cluster.x;
    attrs[n].val.clusterDim.y = shape.cluster.y;
    attrs[n].val.clusterDim.z = shape.cluster.z;
    ++n;
  }
  if (shape.programmatic_dependent_launch) {
    attrs[n].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attrs[n].val.programmaticStreamSerializationAllowed = 1;
    ++n;
  }
  config.attrs = attrs;
  config.numAttrs = n;
  CUTELAB_CUDA(cudaLaunchKernelEx(&config, kernel, std::forward<Args>(args)...));
}

}  // namespace cutelab
