#include <cstdint>

#include <cute/arch/copy_sm90_tma.hpp>
#include <cutlass/arch/barrier.h>

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

// Chunks b, b + grid, ... of this CTA stream through the stages; each stage's barrier counts its bytes, and
// a stage is refilled once its barrier says its copy landed. Nothing reads the stages: the copies are the read.
__global__ void __launch_bounds__(32) bulk_read_kernel(const char* __restrict__ src, std::size_t bytes, int chunk) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  using Barrier = cutlass::arch::ClusterTransactionBarrier;
  extern __shared__ __align__(128) char stage_buf[];
  __shared__ Barrier::ValueType full[kBulkStages];
  if (threadIdx.x != 0) return;
  const std::size_t chunks = (bytes + chunk - 1) / chunk;
  for (int s = 0; s < kBulkStages; ++s) Barrier::init(&full[s], 1);
  cutlass::arch::fence_barrier_init();
  const auto issue = [&](int s, std::size_t c) {
    const auto size = static_cast<std::uint32_t>(min(static_cast<std::size_t>(chunk), bytes - c * chunk));
    Barrier::arrive_and_expect_tx(&full[s], size);
    cute::SM90_BULK_COPY_G2S::copy(src + c * chunk, &full[s], stage_buf + static_cast<std::size_t>(s) * chunk,
                                   static_cast<std::int32_t>(size));
  };
  const std::size_t first = blockIdx.x, step = gridDim.x;
  for (int s = 0; s < kBulkStages && first + s * step < chunks; ++s) issue(s, first + s * step);
  for (std::size_t k = 0; first + k * step < chunks; ++k) {
    const int s = static_cast<int>(k % kBulkStages);
    Barrier::wait(&full[s], static_cast<std::uint32_t>(k / kBulkStages) & 1u);
    if (first + (k + kBulkStages) * step < chunks) issue(s, first + (k + kBulkStages) * step);
  }
#else
  __trap();  // the host launches it only on sm_90 and later
#endif
}

}  // namespace

void prepare_bulk_read(int chunk) {
  CUTELAB_CUDA(cudaFuncSetAttribute(bulk_read_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kBulkStages * chunk));
}

void launch_bulk_read(const void* src, std::size_t bytes, int chunk, int ctas, cudaStream_t stream) {
  bulk_read_kernel<<<ctas, 32, static_cast<std::size_t>(kBulkStages) * chunk, stream>>>(static_cast<const char*>(src),
                                                                                        bytes, chunk);
  CUTELAB_CUDA_LAUNCH();
}

void launch_copy_ceiling(const void* src, void* dst, std::size_t bytes, int grid, cudaStream_t stream) {
  copy_kernel<<<grid, kCeilingBlock, 0, stream>>>(static_cast<const uint4*>(src), static_cast<uint4*>(dst), bytes / 16);
  CUTELAB_CUDA_LAUNCH();
}

void launch_read_ceiling(const void* src, std::size_t bytes, unsigned long long* sum, int grid, cudaStream_t stream) {
  read_kernel<<<grid, kCeilingBlock, 0, stream>>>(static_cast<const uint4*>(src), bytes / 16, sum);
  CUTELAB_CUDA_LAUNCH();
}

}  // namespace cutelab::detail
