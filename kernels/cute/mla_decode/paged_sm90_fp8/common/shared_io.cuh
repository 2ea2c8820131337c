#pragma once
// Shared-memory loads and stores at byte addresses (LDS/STS, not generic accesses), for the FP8
// designs' conversions and transposes.

#include <cstdint>

#include <cuda_runtime.h>

namespace cutelab::mla::paged_sm90_fp8 {

__device__ __forceinline__ uint4 ld_shared_128(std::uint32_t addr) {
  uint4 v;
  asm volatile("ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "r"(addr));
  return v;
}

__device__ __forceinline__ std::uint32_t ld_shared_32(std::uint32_t addr) {
  std::uint32_t v;
  asm volatile("ld.shared.b32 %0, [%1];\n" : "=r"(v) : "r"(addr));
  return v;
}

__device__ __forceinline__ void st_shared_128(std::uint32_t addr, const uint4& v) {
  asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};\n" ::"r"(addr), "r"(v.x), "r"(v.y), "r"(v.z),
               "r"(v.w)
               : "memory");
}

__device__ __forceinline__ void st_shared_64(std::uint32_t addr, std::uint32_t lo, std::uint32_t hi) {
  asm volatile("st.shared.v2.b32 [%0], {%1, %2};\n" ::"r"(addr), "r"(lo), "r"(hi) : "memory");
}

}  // namespace cutelab::mla::paged_sm90_fp8
