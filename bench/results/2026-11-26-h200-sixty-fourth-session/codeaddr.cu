// Does a __global__ function's address, taken in device code, point at its code as global memory?
#include <cstdint>
#include <cstdio>
__global__ void k(uint64_t* out) {
  uint64_t a;
  asm volatile("mov.b64 %0, %1;" : "=l"(a) : "l"(reinterpret_cast<uint64_t>(&k)));
  const auto* code = reinterpret_cast<const uint64_t*>(a);
  out[0] = reinterpret_cast<uint64_t>(code);
  for (int i = 0; i < 6; ++i) out[1 + i] = code[i];
  asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(code), "r"(4096u) : "memory");
}
int main() {
  uint64_t* d; cudaMalloc(&d, 64); cudaMemset(d, 0, 64);
  k<<<1, 1>>>(d);
  cudaError_t e = cudaDeviceSynchronize();
  uint64_t h[8] = {};
  cudaMemcpy(h, d, 64, cudaMemcpyDeviceToHost);
  std::printf("sync: %s\naddr 0x%llx\n", cudaGetErrorString(e), (unsigned long long)h[0]);
  for (int i = 1; i < 7; ++i) std::printf("word %d: 0x%016llx\n", i - 1, (unsigned long long)h[i]);
  return 0;
}
