#include "baseline/mla_decode/flashinfer_sm90/common/runner.hpp"

#include <algorithm>
#include <cstdint>
#include <exception>
#include <utility>

#include "cutelab/core/error.hpp"

namespace cutelab::mla::flashinfer_sm90 {
namespace {

constexpr int kLseThreads = 256;

// FlashInfer writes lse per packed row, [b * s_q, h_q]; the lab's lse is [b, h_q, s_q].
__global__ void __launch_bounds__(kLseThreads)
    lse_rows_to_heads(const float* rows, float* lse, int b, int s_q, int h_q) {
  const int total = b * s_q * h_q;
  for (int i = blockIdx.x * kLseThreads + threadIdx.x; i < total; i += gridDim.x * kLseThreads) {
    const int h = i % h_q, s = (i / h_q) % s_q, r = i / (h_q * s_q);
    lse[(static_cast<std::int64_t>(r) * h_q + h) * s_q + s] = rows[i];
  }
}

int lse_blocks(const MlaDecodeDims& d) {
  return std::max(1, std::min(1024, (d.b * d.s_q * d.h_q + kLseThreads - 1) / kLseThreads));
}

// q and out are [b, s_q, h_q, d]: FlashInfer indexes rows n = b * s_q + s, which needs the b and
// s_q strides to collapse into one.
std::int64_t row_stride(const TensorView& t, const char* name) {
  if (t.stride[0] != t.shape[1] * t.stride[1])
    throw UsageError(concat("flashinfer_sm90: ", name, " ", t.describe(),
                            ": its batch and query-token strides must collapse into one row stride"));
  return t.stride[1];
}

std::uint32_t u32(std::int64_t v, const char* what) {
  if (v < 0 || v > 0xFFFFFFFFll)
    throw UsageError(concat("flashinfer_sm90: ", what, " ", v, " does not fit in 32 bits"));
  return static_cast<std::uint32_t>(v);
}

}  // namespace

std::optional<std::string> unsupported(const MlaDecodeProblem& p) {
  if (p.h_kv != 1) return concat("h_kv = ", p.h_kv, ": FlashInfer's MLA kernel has one KV head");
  for (std::size_t i = 0; i < p.lens.size(); ++i) {
    if (p.lens[i] == 0)
      return concat("lens[", i,
                    "] = 0: FlashInfer writes lse = -inf for an empty request (the lab's lse is +inf)");
    if (p.causal && p.lens[i] < p.s_q)
      return concat(
          "lens[", i, "] = ", p.lens[i], " < s = ", p.s_q,
          " with causal: rows that see no key get lse = -inf from FlashInfer (the lab's lse is +inf)");
  }
  if (p.lens.empty() && (p.t == 0 || (p.causal && p.t < p.s_q)))
    return concat("t = ", p.t,
                  ": rows that see no key get lse = -inf from FlashInfer (the lab's lse is +inf)");
  return std::nullopt;
}

Runner::Runner(const MlaDecodeArgs& args, const MlaDecodeDims& dims, KvSource kv, const DeviceInfo& dev)
    : args_(args), dims_(dims), kv_(kv) {
  if (dims.h_kv != 1)
    throw UsageError(concat("flashinfer_sm90: h_kv = ", dims.h_kv, ", FlashInfer's MLA kernel has one"));
  const std::int64_t q_row = row_stride(args.q, "q"), out_row = row_stride(args.out, "out");
  const auto elements = [](const TensorView& t) { return static_cast<const char*>(t.data); };
  views_.q_nope = args.q.data;
  views_.q_pe = elements(args.q) + kHeadDimV * dtype_size(args.q.dtype);
  views_.q_stride_n = u32(q_row, "q row stride");
  views_.q_stride_h = u32(args.q.stride[2], "q head stride");
  // The cache is [blocks, 64, 1, 576]: the latent part and the RoPE part as two views of it.
  const std::size_t kv_elem = kv.types == Types::bf16_q_e4m3_kv ? 1 : dtype_size(args.kv_cache.dtype);
  views_.ckv = kv.data;
  views_.kpe = static_cast<const char*>(kv.data) + kHeadDimV * kv_elem;
  views_.kv_stride_page = u32(args.kv_cache.stride[0], "KV page stride");
  views_.kv_stride_n = u32(args.kv_cache.stride[1], "KV token stride");
  views_.kv_indices = args.block_table.as<const int>();
  views_.out = args.out.data;
  views_.out_stride_n = u32(out_row, "out row stride");
  views_.out_stride_h = u32(args.out.stride[2], "out head stride");
  views_.num_heads = dims.h_q;
  views_.page_size = kPageSize;
  views_.sm_scale = dims.scale;
  views_.kv_scale = kv.scale;
  views_.causal = args.causal && dims.s_q > 1;
  if (!args.lse.contiguous())
    throw UsageError(concat("flashinfer_sm90: lse ", args.lse.describe(),
                            " must be contiguous (FlashInfer writes it densely)"));
  if (dims.s_q > 1) {
    lse_rows_ = DeviceBuffer(static_cast<std::size_t>(dims.b) * dims.s_q * dims.h_q * sizeof(float));
    views_.lse = static_cast<float*>(lse_rows_.data());
  } else {
    views_.lse = args.lse.as<float>();  // [b, h_q, 1] is [b, h_q]
  }

  float_ws_ = DeviceBuffer(float_workspace_bytes(dev.sm_count));
  int_ws_ = DeviceBuffer(int_workspace_bytes());
  CUTELAB_CUDA(cudaMallocHost(&staged_, 2 * int_workspace_bytes()));  // see plan(): room to overrun
  CUTELAB_CUDA(cudaMallocHost(reinterpret_cast<void**>(&host_lens_), std::max(1, dims.b) * sizeof(int)));
  // Request i's pages are row i of the block table: FlashInfer's kv_indices is the table itself,
  // row i starting at kv_indptr[i] (the row stride, padded or not).
  const int table_row = static_cast<int>(args.block_table.stride[0]);
  qo_indptr_.resize(dims.b + 1);
  kv_indptr_.resize(dims.b + 1);
  kv_len_.resize(dims.b);
  for (int i = 0; i <= dims.b; ++i) {
    qo_indptr_[i] = i * dims.s_q;
    kv_indptr_[i] = i * table_row;
  }
}

Runner::~Runner() {
  CUTELAB_CUDA_NOEXCEPT(cudaFreeHost(staged_));
  CUTELAB_CUDA_NOEXCEPT(cudaFreeHost(host_lens_));
}

void Runner::plan_step(cudaStream_t stream) {
  // The sync also retires the previous upload from `staged_` before it is rewritten.
  CUTELAB_CUDA(
      cudaMemcpyAsync(host_lens_, args_.seqlens.data, dims_.b * sizeof(int), cudaMemcpyDeviceToHost, stream));
  CUTELAB_CUDA(cudaStreamSynchronize(stream));
  const int capacity = dims_.max_blocks * kPageSize;
  for (int i = 0; i < dims_.b; ++i) {
    const int len = host_lens_[i];
    if (len < 0 || len > capacity)
      throw UsageError(concat("flashinfer_sm90: seqlens[", i, "] = ", len, " outside [0, ", capacity,
                              "] (block_table has ", dims_.max_blocks, " pages per request)"));
    if (len == 0 || (views_.causal && len < dims_.s_q))
      throw UsageError(
          concat("flashinfer_sm90: seqlens[", i, "] = ", len,
                 ": rows that see no key get lse = -inf from FlashInfer (the lab's lse is +inf)"));
    kv_len_[i] = len;
  }
  Schedule s;
  try {
    s = plan(float_ws_.data(), float_ws_.bytes(), int_ws_.data(), int_ws_.bytes(), staged_, qo_indptr_.data(),
             kv_indptr_.data(), kv_len_.data(), dims_.b, dims_.h_q, views_.causal);
  } catch (const std::exception& e) {
    throw Error(concat("flashinfer_sm90: FlashInfer's planner refused: ", e.what()));
  }
  if (s.works > max_works())
    throw Error(concat("flashinfer_sm90: FlashInfer's schedule has ", s.works, " work items, its bound is ",
                       max_works()));
  CUTELAB_CUDA(cudaMemcpyAsync(int_ws_.data(), staged_, s.staged_int_bytes, cudaMemcpyHostToDevice, stream));
  schedule_ = std::move(s);
  planned_ = true;
}

void Runner::run(cudaStream_t stream) const {
  if (!planned_) throw Error("flashinfer_sm90: run before plan_step");
  CUTELAB_CUDA(flashinfer_sm90::run(kv_.types, views_, schedule_, float_ws_.data(), int_ws_.data(), stream));
  if (dims_.s_q > 1) {
    lse_rows_to_heads<<<lse_blocks(dims_), kLseThreads, 0, stream>>>(
        static_cast<const float*>(lse_rows_.data()), args_.lse.as<float>(), dims_.b, dims_.s_q, dims_.h_q);
    CUTELAB_CUDA_LAUNCH();
  }
}

std::vector<FunctionResources> Runner::resources() const {
  const KernelInfo k = kernel_info(kv_.types, views_.causal);
  std::vector<FunctionResources> out{read_resources(k.function, k.name, k.threads, k.dynamic_smem)};
  if (dims_.s_q > 1)
    out.push_back(read_resources(reinterpret_cast<const void*>(&lse_rows_to_heads), "lse_rows_to_heads",
                                 kLseThreads, 0));
  return out;
}

Kernel make_kernel(std::shared_ptr<Runner> runner) {
  Kernel k;
  k.resources = runner->resources();
  k.setup = [runner](cudaStream_t s) { runner->plan_step(s); };
  k.launch_reusing_setup = [runner](cudaStream_t s) { runner->run(s); };
  k.launch = [runner](cudaStream_t s) {
    runner->plan_step(s);
    runner->run(s);
  };
  k.launch_syncs_host = true;
  return k;
}

}  // namespace cutelab::mla::flashinfer_sm90
