#pragma once
// FlashInfer's SM90 MLA paged decode (mla_hopper.cuh, flashinfer-python wheel, PyPI) behind a
// plain interface. No FlashInfer, CUTLASS or CCCL type appears here: flashinfer_api.cu is the only
// translation unit that includes FlashInfer, with the CUTLASS and CCCL its wheel ships (newer
// than the lab's), so the two never meet in one translation unit.

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace cutelab::mla::flashinfer_sm90 {

// Element types of one instantiation: q and out are bf16 or f16; the KV cache is the same type,
// or e4m3 with one scale for the whole cache (q and out bf16 then).
enum class Types { bf16, f16, bf16_q_e4m3_kv };

// FlashInfer's split schedule of one decode step, computed on the host (MLAPlan): the CTA grid,
// the offsets of its arrays in the int workspace, and the bytes of that workspace to upload.
struct Schedule {
  std::vector<std::int64_t> info;  // MLAPlanInfo::ToVector()
  std::size_t staged_int_bytes = 0;
  int works = 0;  // work items over all CTAs
};

// Workspace sizes for a device of `sm_count` SMs (FlashInfer's planner caps the work list).
[[nodiscard]] std::size_t float_workspace_bytes(int sm_count);
[[nodiscard]] std::size_t int_workspace_bytes();
[[nodiscard]] int max_works();

// Runs FlashInfer's planner (host only) on host arrays: qo_indptr and kv_indptr [b + 1], kv_len
// [b]. The device workspaces only set the offsets' alignment; the int arrays to upload are written
// into `staged_int` (host, page-locked, int_bytes long, as aligned as int_ws). Throws
// std::exception with FlashInfer's message when it refuses. A schedule with more than
// max_works() works has written past its arrays (up to twice int_bytes): give the staged buffer
// that room and refuse such a schedule.
[[nodiscard]] Schedule plan(void* float_ws, std::size_t float_bytes, void* int_ws, std::size_t int_bytes,
                            void* staged_int, const int* qo_indptr, const int* kv_indptr, const int* kv_len,
                            int b, int num_heads, bool causal);

// Device views of one layer, in FlashInfer's terms: q [n, heads, 512 | 64], ckv/kpe [pages,
// page_size, 512 | 64] with strides in elements, kv_indices[kv_indptr[i] + j] = page j of request i.
struct Views {
  const void* q_nope = nullptr;
  const void* q_pe = nullptr;
  std::uint32_t q_stride_n = 0, q_stride_h = 0;
  const void* ckv = nullptr;
  const void* kpe = nullptr;
  std::uint32_t kv_stride_page = 0, kv_stride_n = 0;
  const int* kv_indices = nullptr;
  void* out = nullptr;  // [n, heads, 512]
  std::uint32_t out_stride_n = 0, out_stride_h = 0;
  float* lse = nullptr;  // [n, heads], natural log
  int num_heads = 0;
  int page_size = 0;
  float sm_scale = 0;
  float kv_scale = 1;  // e4m3 KV only: dequantised = kv_scale * value
  bool causal = false;
};

// Launches the main kernel (one cooperative launch: attention, then the merge of split rows)
// with a schedule uploaded to `int_ws`. Returns the CUDA error of the launch.
[[nodiscard]] cudaError_t run(Types types, const Views& v, const Schedule& s, void* float_ws, void* int_ws,
                              cudaStream_t stream);

// The compiled kernel of one instantiation, for its resources (registers, shared memory).
struct KernelInfo {
  const void* function = nullptr;
  int threads = 0;
  std::size_t dynamic_smem = 0;
  std::string name;
};
[[nodiscard]] KernelInfo kernel_info(Types types, bool causal);

}  // namespace cutelab::mla::flashinfer_sm90
