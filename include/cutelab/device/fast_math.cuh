#pragma once
// Single-instruction approximations (MUFU) for kernels whose output is rounded to 16 bits
// anyway. Error bounds: PTX ISA, "Floating Point Instructions: ex2 / rcp"
// (https://docs.nvidia.com/cuda/parallel-thread-execution/#floating-point-instructions-ex2).

namespace cutelab::device {

// 2^x; max relative error 2^-22 over the normal range; subnormal results flush to 0.
// The ftz form avoids the range fix-up (FSETP + 2 FMUL) the non-ftz form costs.
__device__ __forceinline__ float ex2_approx_ftz(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

// 1/x; max relative error 2^-23 (ftz). rcp(+-inf) = +-0.
__device__ __forceinline__ float rcp_approx_ftz(float x) {
  float y;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

}  // namespace cutelab::device
