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

// The same read by bulk copies (cp.async.bulk, the TMA engine's 1D form) into kBulkStages shared
// buffers of `chunk` bytes a CTA, one thread of each of `ctas` CTAs issuing them; sm_90 and later.
// `bytes` and `chunk` multiples of 16. prepare_bulk_read() first (outside any graph capture).
constexpr int kBulkStages = 4;
void prepare_bulk_read(int chunk);
void launch_bulk_read(const void* src, std::size_t bytes, int chunk, int ctas, cudaStream_t stream);

}  // namespace cutelab::detail
