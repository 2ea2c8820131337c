#include <cstdint>

#include "ceilings_kernels.hpp"
#include "cutelab/core/error.hpp"

namespace cutelab::detail {
namespace {

constexpr int kUnroll = 4;  // independent 16-byte accesses in flight per thread

__global__ void __launch_bounds__(kCeilingBlock) copy_kernel(const uint4* __restrict__ src, uint4* __restrict__ dst,
                                                             std::size_t n) {
  const std::size_t threads = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  const std::size_t tid = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  std::size_t i = tid;
  for (; i + (kUnroll - 1) * threads < n; i += kUnroll * threads) {
    uint4 v[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) v[u] = src[i + u * threads];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) dst[i + u * threads] = v[u];
  }
  for (; i < n; i += threads) dst[i] = src[i];
}

__global__ void __launch_bounds__(kCeilingBlock) read_kernel(const uint4* __restrict__ src, std::size_t n,
                                                             unsigned long long* sum) {
  const std::size_t threads = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  const std::size_t tid = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  unsigned acc = 0;
  std::size_t i = tid;
  for (; i + (kUnroll - 1) * threads < n; i += kUnroll * threads) {
    uint4 v[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) v[u] = src[i + u * threads];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) acc += v[u].x + v[u].y + v[u].z + v[u].w;
  }
  for (; i < n; i += threads) acc += src[i].x + src[i].y + src[i].z + src[i].w;
  // The sum keeps the loads alive; one atomic per warp is noise next to the stream.
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2) acc += __shfl_xor_sync(0xffffffffu, acc, offset);
  if ((threadIdx.x & 31) == 0) atomicAdd(sum, static_cast<unsigned long long>(acc));
}

}  // namespace

void launch_copy_ceiling(const void* src, void* dst, std::size_t bytes, int grid, cudaStream_t stream) {
  copy_kernel<<<grid, kCeilingBlock, 0, stream>>>(static_cast<const uint4*>(src), static_cast<uint4*>(dst), bytes / 16);
  CUTELAB_CUDA_LAUNCH();
}

void launch_read_ceiling(const void* src, std::size_t bytes, unsigned long long* sum, int grid, cudaStream_t stream) {
  read_kernel<<<grid, kCeilingBlock, 0, stream>>>(static_cast<const uint4*>(src), bytes / 16, sum);
  CUTELAB_CUDA_LAUNCH();
}

}  // namespace cutelab::detail
