#pragma once
// Host launcher of the naive MLA decode baseline: parameters from validated arguments, grid
// (KV head x head tile, query row, request), launch.

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "cutelab/core/math.hpp"
#include "cutelab/runtime/kernel.hpp"
#include "cutelab/runtime/launch.hpp"
#include "mla_decode/common/args.hpp"
#include "baseline/mla_decode/naive/naive_v1/kernel.cuh"

namespace cutelab::mla::naive_v1 {

inline NaiveParams make_params(const MlaDecodeArgs& a, const MlaDecodeDims& d, int heads_per_cta) {
  const auto strides = [](const TensorView& t) { return t.stride.empty() ? contiguous_strides(t.shape) : t.stride; };
  const std::vector<std::int64_t> qs = strides(a.q), ks = strides(a.kv_cache), os = strides(a.out),
                                   ls = strides(a.lse), bs = strides(a.block_table);
  NaiveParams p{};
  p.q = a.q.data;
  p.kv = a.kv_cache.data;
  p.block_table = a.block_table.as<const int>();
  p.seqlens = a.seqlens.as<const int>();
  p.out = a.out.data;
  p.lse = a.lse.as<float>();
  for (int i = 0; i < 3; ++i) {
    p.q_stride[i] = qs[i];
    p.kv_stride[i] = ks[i];
    p.out_stride[i] = os[i];
    p.lse_stride[i] = ls[i];
  }
  p.bt_stride = bs[0];
  p.s_q = d.s_q;
  p.h_q = d.h_q;
  p.group = d.h_q / d.h_kv;
  p.head_tiles = ceil_div(p.group, heads_per_cta);
  p.scale = d.scale;
  p.causal = a.causal;
  return p;
}

template <class T, int kThreads, int kHeads>
struct NaiveLauncher {
  static LaunchShape shape(const MlaDecodeDims& d);
  static void run(const NaiveParams& p, const MlaDecodeDims& d, cudaStream_t stream);
  static FunctionResources resources();
};

// Out of the class body, so that the extern declarations below keep every translation unit
// but the instantiation files from compiling the kernels (in-class members are inline, and
// `extern template` does not stop inline functions from being instantiated).
template <class T, int kThreads, int kHeads>
LaunchShape NaiveLauncher<T, kThreads, kHeads>::shape(const MlaDecodeDims& d) {
  LaunchShape s;
  s.grid = dim3(static_cast<unsigned>(d.h_kv * ceil_div(d.h_q / d.h_kv, kHeads)), static_cast<unsigned>(d.s_q),
                static_cast<unsigned>(d.b));
  s.block = dim3(kThreads);
  return s;
}

template <class T, int kThreads, int kHeads>
void NaiveLauncher<T, kThreads, kHeads>::run(const NaiveParams& p, const MlaDecodeDims& d, cudaStream_t stream) {
  launch(naive_mla_decode_kernel<T, kThreads, kHeads>, shape(d), stream, p);
}

template <class T, int kThreads, int kHeads>
FunctionResources NaiveLauncher<T, kThreads, kHeads>::resources() {
  return read_resources(reinterpret_cast<const void*>(&naive_mla_decode_kernel<T, kThreads, kHeads>),
                        "naive_mla_decode_kernel", kThreads, 0);
}

// Compiled once each, in instantiations/*.cu; kConfigs (config.hpp) lists the same set.
extern template struct NaiveLauncher<__nv_bfloat16, 128, 4>;
extern template struct NaiveLauncher<__nv_bfloat16, 256, 8>;
extern template struct NaiveLauncher<__nv_bfloat16, 256, 16>;
extern template struct NaiveLauncher<__half, 128, 4>;
extern template struct NaiveLauncher<__half, 256, 8>;
extern template struct NaiveLauncher<__half, 256, 16>;

}  // namespace cutelab::mla::naive_v1
