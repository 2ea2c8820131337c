// The fp32 GPU reference and the fp64 CPU reference of MLA decode.
//
// GPU: one block per (request, query row, head), four warps. A warp owns one key at a time;
// each lane holds 18 of the 576 q values and reads the matching 18 values of the key row, so a
// warp reduction gives the logit in every lane. Two passes over the visible keys: the first
// finds the row maximum, the second recomputes each logit, weights the key's first 512 values
// (V) by exp(logit - max) and sums. No tiling, no online rescaling, no shared scratch that grows
// with the sequence: easy to check by reading.

#include "mla_decode/reference/reference.hpp"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <type_traits>
#include <utility>

#include "cutelab/core/error.hpp"
#include "cutelab/core/math.hpp"
#include "cutelab/runtime/launch.hpp"
#include "mla_decode/common/problem.hpp"
#include "mla_decode/fp8/kv_format.hpp"

namespace cutelab::mla {

namespace {

constexpr int kWarps = 4;
constexpr int kLanePairs = kHeadDimQK / 2 / 32;  // 9 bf16x2 pairs of q/k per lane
constexpr int kLaneVPairs = kHeadDimV / 2 / 32;  // the first 8 of them are V

struct RefParams {
  const void* q;
  const void* kv;
  const int* block_table;
  const int* seqlens;
  float* out;  // [b, s_q, h_q, 512] contiguous
  float* lse;  // [b, h_q, s_q] contiguous
  std::int64_t q_stride[3];   // b, s_q, h_q (elements)
  std::int64_t kv_stride[3];  // block, token, h_kv
  std::int64_t bt_stride;     // row of the block table
  int s_q, h_q, group;        // group = h_q / h_kv
  float scale;
  bool causal;
};

template <class T>
__device__ float2 load_pair(const T* p) {
  if constexpr (std::is_same_v<T, float>) {
    return *reinterpret_cast<const float2*>(p);  // a dequantised FP8 cache: read as stored
  } else if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    return __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(p));
  } else {
    return __half22float2(*reinterpret_cast<const __half2*>(p));
  }
}

__device__ float warp_sum(float v) {
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

// Dimension pair k of lane `lane` covers q/k columns 2 * (lane + 32 * k) and the next one.
__device__ int pair_col(int lane, int k) { return 2 * (lane + 32 * k); }

// Q: q's element type; KV: the cache's (bf16/f16 as q, or fp32 for a dequantised FP8 cache).
template <class Q, class KV>
__global__ void __launch_bounds__(kWarps * 32) reference_kernel(RefParams p) {
  __shared__ float s_max[kWarps];
  __shared__ float s_sum[kWarps];
  __shared__ float s_acc[kWarps][kHeadDimV];

  const int head = blockIdx.x % p.h_q;
  const int row = (blockIdx.x / p.h_q) % p.s_q;
  const int req = blockIdx.x / p.h_q / p.s_q;
  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  const int kv_head = head / p.group;

  const int len = p.seqlens[req];
  const int visible = p.causal ? max(0, min(len, len - p.s_q + row + 1)) : len;
  float* out = p.out + ((static_cast<std::int64_t>(req) * p.s_q + row) * p.h_q + head) * kHeadDimV;
  float* lse = p.lse + (static_cast<std::int64_t>(req) * p.h_q + head) * p.s_q + row;
  if (visible == 0) {  // no key: the empty sum
    for (int d = threadIdx.x; d < kHeadDimV; d += blockDim.x) out[d] = 0.0f;
    if (threadIdx.x == 0) *lse = INFINITY;
    return;
  }

  const Q* q = static_cast<const Q*>(p.q) + req * p.q_stride[0] + row * p.q_stride[1] + head * p.q_stride[2];
  float2 qv[kLanePairs];
  for (int k = 0; k < kLanePairs; ++k) qv[k] = load_pair(q + pair_col(lane, k));

  const int* table = p.block_table + req * p.bt_stride;
  const auto key_row = [&](int j) {
    const std::int64_t page = table[j / kPageSize];
    return static_cast<const KV*>(p.kv) + page * p.kv_stride[0] + (j % kPageSize) * p.kv_stride[1] +
           kv_head * p.kv_stride[2];
  };

  // Pass 1: the row maximum of the scaled logits.
  float row_max = -INFINITY;
  for (int j = warp; j < visible; j += kWarps) {
    const KV* k = key_row(j);
    float dot = 0.0f;
    for (int c = 0; c < kLanePairs; ++c) {
      const float2 kv = load_pair(k + pair_col(lane, c));
      dot += qv[c].x * kv.x + qv[c].y * kv.y;
    }
    row_max = fmaxf(row_max, warp_sum(dot) * p.scale);
  }
  if (lane == 0) s_max[warp] = row_max;
  __syncthreads();
  row_max = s_max[0];
  for (int w = 1; w < kWarps; ++w) row_max = fmaxf(row_max, s_max[w]);

  // Pass 2: the same logits again, exponentiated against the maximum, weighting V.
  float sum = 0.0f;
  float2 acc[kLaneVPairs] = {};
  for (int j = warp; j < visible; j += kWarps) {
    const KV* k = key_row(j);
    float2 kv[kLanePairs];
    float dot = 0.0f;
    for (int c = 0; c < kLanePairs; ++c) {
      kv[c] = load_pair(k + pair_col(lane, c));
      dot += qv[c].x * kv[c].x + qv[c].y * kv[c].y;
    }
    const float w = expf(warp_sum(dot) * p.scale - row_max);
    sum += w;
    for (int c = 0; c < kLaneVPairs; ++c) {
      acc[c].x += w * kv[c].x;
      acc[c].y += w * kv[c].y;
    }
  }
  for (int c = 0; c < kLaneVPairs; ++c) {
    s_acc[warp][pair_col(lane, c)] = acc[c].x;
    s_acc[warp][pair_col(lane, c) + 1] = acc[c].y;
  }
  if (lane == 0) s_sum[warp] = sum;
  __syncthreads();
  float total = 0.0f;
  for (int w = 0; w < kWarps; ++w) total += s_sum[w];
  for (int d = threadIdx.x; d < kHeadDimV; d += blockDim.x) {
    float v = 0.0f;
    for (int w = 0; w < kWarps; ++w) v += s_acc[w][d];
    out[d] = v / total;
  }
  if (threadIdx.x == 0) *lse = row_max + logf(total);
}

double host_value(DType dt, std::uint16_t bits) {
  return dt == DType::bf16 ? bf16_bits_to_float(bits) : f16_bits_to_float(bits);
}

// A stream-ordered device buffer: freed on the stream after the work enqueued before it.
class StreamBuffer {
 public:
  StreamBuffer(std::size_t bytes, cudaStream_t stream) : stream_(stream) {
    CUTELAB_CUDA(cudaMallocAsync(&ptr_, bytes, stream));
  }
  StreamBuffer(const StreamBuffer&) = delete;
  StreamBuffer& operator=(const StreamBuffer&) = delete;
  ~StreamBuffer() { CUTELAB_CUDA_NOEXCEPT(cudaFreeAsync(ptr_, stream_)); }
  [[nodiscard]] float* get() const noexcept { return static_cast<float*>(ptr_); }

 private:
  void* ptr_ = nullptr;
  cudaStream_t stream_;
};

}  // namespace

void reference_gpu(const MlaDecodeArgs& args, float* out_f32, float* lse_f32, cudaStream_t stream) {
  const MlaDecodeDims d = validate_args(args, /*checked=*/false, stream, KvFormats::all());
  const auto strides = [](const TensorView& t) {
    return t.stride.empty() ? contiguous_strides(t.shape) : t.stride;
  };
  const std::vector<std::int64_t> qs = strides(args.q), bs = strides(args.block_table);
  std::vector<std::int64_t> ks = strides(args.kv_cache);
  // An FP8 cache is read through its fp32 dequantisation (dequantize_kv, contiguous), so the
  // reference computes on exactly the values the format stores.
  std::optional<StreamBuffer> dequantised;
  if (is_fp8(d.kv_format)) {
    const std::int64_t rows = static_cast<std::int64_t>(d.num_blocks) * kPageSize * d.h_kv;
    dequantised.emplace(static_cast<std::size_t>(rows) * kHeadDimQK * sizeof(float), stream);
    dequantize_kv(d.kv_format, args.kv_cache, args.kv_scale, dequantised->get(), stream);
    ks = contiguous_strides({d.num_blocks, kPageSize, d.h_kv, kHeadDimQK});
  }
  RefParams p{};
  p.q = args.q.data;
  p.kv = dequantised ? static_cast<const void*>(dequantised->get()) : args.kv_cache.data;
  p.block_table = args.block_table.as<const int>();
  p.seqlens = args.seqlens.as<const int>();
  p.out = out_f32;
  p.lse = lse_f32;
  for (int i = 0; i < 3; ++i) {
    p.q_stride[i] = qs[i];
    p.kv_stride[i] = ks[i];
  }
  p.bt_stride = bs[0];
  p.s_q = d.s_q;
  p.h_q = d.h_q;
  p.group = d.h_q / d.h_kv;
  p.scale = d.scale;
  p.causal = args.causal;

  LaunchShape shape;
  shape.grid = dim3(static_cast<unsigned>(d.b) * d.s_q * d.h_q);
  shape.block = dim3(kWarps * 32);
  if (dequantised)
    launch(reference_kernel<__nv_bfloat16, float>, shape, stream, p);  // FP8 takes bf16 q
  else if (d.dtype == DType::bf16)
    launch(reference_kernel<__nv_bfloat16, __nv_bfloat16>, shape, stream, p);
  else
    launch(reference_kernel<__half, __half>, shape, stream, p);
}

namespace {

// The CPU reference reads the cache's raw 16-bit elements: FP8 caches are refused by name.
MlaDecodeDims require_16bit_cache(const MlaDecodeArgs& args, const char* who) {
  const MlaDecodeDims d = validate_args(args, /*checked=*/false, nullptr, KvFormats::all());
  CUTELAB_REQUIRE(
      !is_fp8(d.kv_format), who, ": kv_cache is an ", kv_format_name(d.kv_format),
      " cache; the CPU reference reads bf16/f16 caches only (reference_gpu dequantises FP8 ones)");
  return d;
}

}  // namespace

HostMlaInputs download_inputs(const MlaDecodeArgs& args) {
  (void)require_16bit_cache(args, "download_inputs");
  for (const auto& [t, name] : {std::pair{&args.q, "q"}, std::pair{&args.kv_cache, "kv_cache"},
                               std::pair{&args.block_table, "block_table"}}) {
    CUTELAB_REQUIRE(t->stride.empty() || t->contiguous(), "download_inputs: ", name,
                    " must be contiguous, got strides of ", t->describe());
  }
  HostMlaInputs in;
  in.q = copy_to_host<std::uint16_t>(args.q);
  in.kv_cache = copy_to_host<std::uint16_t>(args.kv_cache);
  in.block_table = copy_to_host<int>(args.block_table);
  in.seqlens = copy_to_host<int>(args.seqlens);
  return in;
}

void reference_cpu(const MlaDecodeArgs& args, const HostMlaInputs& in, std::vector<float>& out,
                   std::vector<float>& lse) {
  const MlaDecodeDims d = require_16bit_cache(args, "reference_cpu");
  const std::size_t rows = static_cast<std::size_t>(d.b) * d.s_q * d.h_q;
  CUTELAB_REQUIRE(in.q.size() == rows * kHeadDimQK, "reference_cpu: q holds ", in.q.size(), " values, expected ",
                  rows * kHeadDimQK);
  CUTELAB_REQUIRE(in.seqlens.size() == static_cast<std::size_t>(d.b), "reference_cpu: seqlens holds ",
                  in.seqlens.size(), " values, expected ", d.b);
  out.assign(rows * kHeadDimV, 0.0f);
  lse.assign(rows, 0.0f);
  const std::size_t token_stride = static_cast<std::size_t>(d.h_kv) * kHeadDimQK;
  const int group = d.h_q / d.h_kv;
  std::vector<double> logits, acc(kHeadDimV);
  for (int r = 0; r < d.b; ++r) {
    const int len = in.seqlens[r];
    CUTELAB_REQUIRE(len >= 0 && len <= d.max_blocks * kPageSize, "reference_cpu: seqlens[", r, "] = ", len,
                    " is outside 0..", d.max_blocks * kPageSize);
    for (int i = 0; i < d.s_q; ++i) {
      const int visible = args.causal ? std::clamp(len - d.s_q + i + 1, 0, len) : len;
      for (int h = 0; h < d.h_q; ++h) {
        const std::size_t row = (static_cast<std::size_t>(r) * d.s_q + i) * d.h_q + h;
        float& row_lse = lse[(static_cast<std::size_t>(r) * d.h_q + h) * d.s_q + i];
        if (visible == 0) {
          row_lse = std::numeric_limits<float>::infinity();
          continue;  // out stays 0
        }
        const std::uint16_t* qrow = in.q.data() + row * kHeadDimQK;
        logits.assign(static_cast<std::size_t>(visible), 0.0);
        double mx = -std::numeric_limits<double>::infinity();
        const auto key_row = [&](int j) {
          const int page = in.block_table[static_cast<std::size_t>(r) * d.max_blocks + j / kPageSize];
          CUTELAB_REQUIRE(page >= 0 && page < d.num_blocks, "reference_cpu: block_table[", r, "][",
                          j / kPageSize, "] = ", page, " is outside [0, ", d.num_blocks, ")");
          return in.kv_cache.data() + (static_cast<std::size_t>(page) * kPageSize + j % kPageSize) * token_stride +
                 static_cast<std::size_t>(h / group) * kHeadDimQK;
        };
        for (int j = 0; j < visible; ++j) {
          const std::uint16_t* k = key_row(j);
          double dot = 0;
          for (int c = 0; c < kHeadDimQK; ++c) dot += host_value(d.dtype, qrow[c]) * host_value(d.dtype, k[c]);
          logits[j] = dot * static_cast<double>(d.scale);
          mx = std::max(mx, logits[j]);
        }
        double sum = 0;
        std::fill(acc.begin(), acc.end(), 0.0);
        for (int j = 0; j < visible; ++j) {
          const double w = std::exp(logits[j] - mx);
          sum += w;
          const std::uint16_t* v = key_row(j);
          for (int c = 0; c < kHeadDimV; ++c) acc[c] += w * host_value(d.dtype, v[c]);
        }
        for (int c = 0; c < kHeadDimV; ++c) out[row * kHeadDimV + c] = static_cast<float>(acc[c] / sum);
        row_lse = static_cast<float>(mx + std::log(sum));
      }
    }
  }
}

}  // namespace cutelab::mla
