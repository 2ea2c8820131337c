#pragma once
// The bandwidth kernels behind measure_ceilings (private to src/runtime).

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace cutelab::detail {

// dst[i] = src[i] over `bytes` (a multiple of 16, 16-byte aligned pointers), 16-byte accesses.
void launch_copy_ceiling(const void* src, void* dst, std::size_t bytes, int grid, cudaStream_t stream);
// *sum += the 32-bit words of src (wrapping), reading `bytes` once with 16-byte loads.
void launch_read_ceiling(const void* src, std::size_t bytes, unsigned long long* sum, int grid, cudaStream_t stream);

constexpr int kCeilingBlock = 256;

}  // namespace cutelab::detail
