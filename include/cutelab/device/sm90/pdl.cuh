#pragma once
// Programmatic dependent launch (PTX griddepcontrol, sm_90+; no-ops on older targets).
// A kernel launched with LaunchShape::programmatic_dependent_launch may start while the
// previous kernel in the stream still runs: it must call wait_for_prior_grid() before it reads
// anything that kernel writes. See the PTX ISA, "griddepcontrol".

namespace cutelab::sm90 {

// Blocks until the prior grid has completed and its memory operations are visible.
__device__ __forceinline__ void wait_for_prior_grid() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

// Lets the dependent grid start launching (its wait still waits for this grid to finish).
__device__ __forceinline__ void allow_dependent_launch() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

}  // namespace cutelab::sm90
