#pragma once
// opaque(ptr), opaque(int): the same value, hidden from the compiler's loop optimizations.
//
// A CuTe shared-memory operand fragment (make_fragment_A/B of a smem tensor) is one 64-bit wgmma
// descriptor per k-step. Built from a loop-invariant address, the compiler hoists all of them
// (36 per 64 x 576 K tile) out of the page loop and, short of registers, spills them to local
// memory. Built from opaque(address) inside the loop, each is a shift and an add next to its
// wgmma. Measured on paged_sm90 v2 (ptxas, sm_90a): 372 B of spills -> none.

namespace cutelab::sm90 {

template <class E>
__device__ __forceinline__ E* opaque(E* ptr) {
  asm volatile("" : "+l"(ptr));
  return ptr;
}

// The same for a per-thread index that addresses are computed from (e.g. a swizzled store).
__device__ __forceinline__ int opaque(int value) {
  asm volatile("" : "+r"(value));
  return value;
}

}  // namespace cutelab::sm90
