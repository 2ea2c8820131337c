// The only translation unit that includes FlashInfer (see flashinfer_api.hpp). Explicit
// instantiations: bf16 and f16 (q, KV, out of one type) and bf16 q with an e4m3 KV cache, each
// without and with the causal mask.

#include "baseline/mla_decode/flashinfer_sm90/common/flashinfer_api.hpp"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <flashinfer/allocator.h>
#include <flashinfer/attention/mla_hopper.cuh>
#include <flashinfer/attention/scheduler.cuh>

#include <stdexcept>

namespace cutelab::mla::flashinfer_sm90 {
namespace {

namespace fi = ::flashinfer;

constexpr int kHeadDimCkv = 512;
constexpr int kHeadDimKpe = 64;
// What BatchMLAPageAttentionHopper instantiates (mla_hopper.cuh of the pinned wheel): two
// stages, 64-row q tiles and 64-token KV tiles. kernel_info() names the same kernel.
constexpr int kStages = 2;
constexpr int kTileQ = 64;
constexpr int kTileKv = 64;
// MLAPlan's fixed bound on work items (its `max_total_num_works`).
constexpr int kMaxWorks = 16384;

template <class Q, class KV, bool kCausal>
struct Instance {
  using Params = fi::MLAParams<Q, KV, Q, int>;
  using KTraits = fi::mla::hopper::HopperKernelTraits<kCausal, kStages, kHeadDimCkv, kHeadDimKpe, kTileQ,
                                                      kTileKv, Q, KV, Q, int>;
  static constexpr fi::MaskMode kMask = kCausal ? fi::MaskMode::kCausal : fi::MaskMode::kNone;

  static cudaError_t run(const Views& v, const Schedule& s, void* float_ws, void* int_ws,
                         cudaStream_t stream) {
    fi::MLAPlanInfo info;
    info.FromVector(s.info);
    const auto ints = [&](std::int64_t offset) { return fi::GetPtrFromBaseOffset<int>(int_ws, offset); };
    Params p{};
    p.q_nope = static_cast<Q*>(const_cast<void*>(v.q_nope));
    p.q_pe = static_cast<Q*>(const_cast<void*>(v.q_pe));
    p.ckv = static_cast<KV*>(const_cast<void*>(v.ckv));
    p.kpe = static_cast<KV*>(const_cast<void*>(v.kpe));
    p.partial_o = fi::GetPtrFromBaseOffset<Q>(float_ws, info.partial_o_offset);
    p.partial_lse = fi::GetPtrFromBaseOffset<float>(float_ws, info.partial_lse_offset);
    p.final_o = static_cast<Q*>(v.out);
    p.final_lse = v.lse;
    p.q_indptr = ints(info.q_indptr_offset);
    p.kv_indptr = ints(info.kv_indptr_offset);
    p.partial_indptr = ints(info.partial_indptr_offset);
    p.merge_packed_offset_start = ints(info.merge_packed_offset_start_offset);
    p.merge_packed_offset_end = ints(info.merge_packed_offset_end_offset);
    p.merge_partial_packed_offset_start = ints(info.merge_partial_packed_offset_start_offset);
    p.merge_partial_packed_offset_end = ints(info.merge_partial_packed_offset_end_offset);
    p.merge_partial_stride = ints(info.merge_partial_stride_offset);
    p.kv_indices = const_cast<int*>(v.kv_indices);
    p.q_len = ints(info.q_len_offset);
    p.kv_len = ints(info.kv_len_offset);
    p.q_start = ints(info.q_start_offset);
    p.kv_start = ints(info.kv_start_offset);
    p.kv_end = ints(info.kv_end_offset);
    p.work_indptr = ints(info.work_indptr_offset);
    p.block_size = fi::uint_fastdiv(static_cast<std::uint32_t>(v.page_size));
    p.num_heads = fi::uint_fastdiv(static_cast<std::uint32_t>(v.num_heads));
    p.q_nope_stride_n = p.q_pe_stride_n = v.q_stride_n;
    p.q_nope_stride_h = p.q_pe_stride_h = v.q_stride_h;
    p.ckv_stride_page = p.kpe_stride_page = v.kv_stride_page;
    p.ckv_stride_n = p.kpe_stride_n = v.kv_stride_n;
    p.o_stride_n = v.out_stride_n;
    p.o_stride_h = v.out_stride_h;
    p.sm_scale = v.sm_scale;
    p.ckv_scale = p.kpe_scale = v.kv_scale;
    p.ckv_scale_arr = nullptr;
    p.return_lse_base_on_e = true;
    return fi::mla::BatchMLAPageAttentionHopper<kMask, kHeadDimCkv, kHeadDimKpe>(
        p, static_cast<std::uint32_t>(info.num_blks_x), static_cast<std::uint32_t>(info.num_blks_y), stream);
  }

  static KernelInfo info() {
    return {
        reinterpret_cast<const void*>(&fi::mla::hopper::BatchMLAPageAttentionHopperKernel<KTraits, Params>),
        static_cast<int>(KTraits::NUM_THREADS), sizeof(typename KTraits::SharedStorage),
        kCausal ? "flashinfer::mla::hopper::BatchMLAPageAttentionHopperKernel<causal>"
                : "flashinfer::mla::hopper::BatchMLAPageAttentionHopperKernel"};
  }
};

template <template <class, class, bool> class F, class... A>
auto dispatch(Types types, bool causal, A&&... a) {
  switch (types) {
    case Types::bf16:
      return causal ? F<__nv_bfloat16, __nv_bfloat16, true>{}(a...)
                    : F<__nv_bfloat16, __nv_bfloat16, false>{}(a...);
    case Types::f16:
      return causal ? F<__half, __half, true>{}(a...) : F<__half, __half, false>{}(a...);
    case Types::bf16_q_e4m3_kv:
      return causal ? F<__nv_bfloat16, __nv_fp8_e4m3, true>{}(a...)
                    : F<__nv_bfloat16, __nv_fp8_e4m3, false>{}(a...);
  }
  throw std::logic_error("flashinfer_sm90: unknown element types");
}

template <class Q, class KV, bool kCausal>
struct RunOp {
  cudaError_t operator()(const Views& v, const Schedule& s, void* f, void* i, cudaStream_t st) const {
    return Instance<Q, KV, kCausal>::run(v, s, f, i, st);
  }
};
template <class Q, class KV, bool kCausal>
struct InfoOp {
  KernelInfo operator()() const { return Instance<Q, KV, kCausal>::info(); }
};

}  // namespace

std::size_t float_workspace_bytes(int sm_count) {
  // MLAPlan: partial_o (2 bytes per value) and partial_lse for two rows of 64-row tiles per SM.
  const std::size_t rows = 2 * static_cast<std::size_t>(sm_count) * kTileQ;
  return rows * kHeadDimCkv * 2 + rows * sizeof(float) + 256;
}

// Nine arrays of kMaxWorks ints and five of one int per SM (a generous 4096 SMs), each aligned
// to 16 bytes.
std::size_t int_workspace_bytes() { return (9 * std::size_t{kMaxWorks} + 5 * 4096) * sizeof(int) + 14 * 16; }

int max_works() { return kMaxWorks; }

Schedule plan(void* float_ws, std::size_t float_bytes, void* int_ws, std::size_t int_bytes, void* staged_int,
              const int* qo_indptr, const int* kv_indptr, const int* kv_len, int b, int num_heads,
              bool causal) {
  fi::MLAPlanInfo info;
  std::size_t staged = 0;
  // Host work only: the device buffers set the offsets' alignment and are never touched; the
  // arrays to upload land in `staged_int` at the same offsets.
  const cudaError_t err = fi::MLAPlan<int>(
      float_ws, float_bytes, int_ws, staged_int, int_bytes, info, staged, const_cast<int*>(qo_indptr),
      const_cast<int*>(kv_indptr), const_cast<int*>(kv_len), static_cast<std::uint32_t>(b),
      static_cast<std::uint32_t>(num_heads), kHeadDimCkv, causal, nullptr);
  if (err != cudaSuccess)
    throw std::runtime_error(std::string("FlashInfer MLAPlan: ") + cudaGetErrorString(err));
  Schedule s;
  s.info = info.ToVector();
  s.staged_int_bytes = staged;
  s.works = fi::GetPtrFromBaseOffset<int>(staged_int, info.work_indptr_offset)[info.num_blks_y];
  return s;
}

cudaError_t run(Types types, const Views& v, const Schedule& s, void* float_ws, void* int_ws,
                cudaStream_t stream) {
  return dispatch<RunOp>(types, v.causal, v, s, float_ws, int_ws, stream);
}

KernelInfo kernel_info(Types types, bool causal) { return dispatch<InfoOp>(types, causal); }

}  // namespace cutelab::mla::flashinfer_sm90
