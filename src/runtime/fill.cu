// Seeded device fills. Each element's value is a pure function of (seed, logical index), drawn
// from a counter-based hash, so results do not depend on the launch configuration or strides.

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <algorithm>
#include <cstdint>

#include "cutelab/core/math.hpp"
#include "cutelab/runtime/tensor.hpp"

namespace cutelab {
namespace {

constexpr int kMaxRank = 8;

struct Layout {
  int rank = 0;
  bool contiguous = true;
  std::int64_t shape[kMaxRank] = {};
  std::int64_t stride[kMaxRank] = {};

  // Offset (in elements) of the element with row-major logical index i.
  __device__ std::int64_t offset(std::int64_t i) const {
    if (contiguous) return i;
    std::int64_t off = 0;
    for (int d = rank - 1; d >= 0; --d) {
      off += (i % shape[d]) * stride[d];
      i /= shape[d];
    }
    return off;
  }
};

enum class Mode { uniform, normal, constant };

struct FillParams {
  std::uint64_t key = 0;
  double a = 0;  // lo | mean | value
  double b = 0;  // hi | stddev
};

__host__ __device__ constexpr std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// Two independent 64-bit draws per element.
__device__ std::uint64_t draw(std::uint64_t key, std::int64_t i, unsigned which) {
  return splitmix64(key ^ splitmix64(2 * static_cast<std::uint64_t>(i) + which));
}

// Single precision is enough below f64 (24 random bits per value).
template <class V>
__device__ V uniform01(std::uint64_t h) {  // [0, 1)
  if constexpr (sizeof(V) == 8) return static_cast<double>(h >> 11) * 0x1p-53;
  else return static_cast<float>(h >> 40) * 0x1p-24f;
}

template <class V>
__device__ V generate(Mode mode, const FillParams& p, std::int64_t i) {
  if (mode == Mode::constant) return static_cast<V>(p.a);
  const V u = uniform01<V>(draw(p.key, i, 0));
  if (mode == Mode::uniform) return static_cast<V>(p.a) + (static_cast<V>(p.b) - static_cast<V>(p.a)) * u;
  // Box-Muller; u1 in (0, 1] keeps the log finite.
  const V u1 = V(1) - uniform01<V>(draw(p.key, i, 1));
  V z;
  if constexpr (sizeof(V) == 8) z = sqrt(-2.0 * log(u1)) * cospi(2.0 * u);
  else z = sqrtf(-2.0f * logf(u1)) * cospif(2.0f * u);
  return static_cast<V>(p.a) + static_cast<V>(p.b) * z;
}

template <class Int>
__device__ Int to_int(double v, double lo, double hi) {
  if (v != v) return 0;
  return static_cast<Int>(fmin(fmax(rint(v), lo), hi));
}

template <DType T>
__device__ void store(void* base, std::int64_t off, Mode mode, const FillParams& p, std::int64_t i) {
  if constexpr (T == DType::bf16) {
    static_cast<__nv_bfloat16*>(base)[off] = __float2bfloat16_rn(generate<float>(mode, p, i));
  } else if constexpr (T == DType::f16) {
    static_cast<__half*>(base)[off] = __float2half_rn(generate<float>(mode, p, i));
  } else if constexpr (T == DType::f32) {
    static_cast<float*>(base)[off] = generate<float>(mode, p, i);
  } else if constexpr (T == DType::f64) {
    static_cast<double*>(base)[off] = generate<double>(mode, p, i);
  } else if constexpr (T == DType::e4m3) {
    static_cast<__nv_fp8_storage_t*>(base)[off] =
        __nv_cvt_float_to_fp8(generate<float>(mode, p, i), __NV_SATFINITE, __NV_E4M3);
  } else if constexpr (T == DType::e5m2) {
    static_cast<__nv_fp8_storage_t*>(base)[off] =
        __nv_cvt_float_to_fp8(generate<float>(mode, p, i), __NV_SATFINITE, __NV_E5M2);
  } else {
    // Integers: uniform draws cover [ceil(lo), floor(hi)] inclusive; others round to nearest.
    double v;
    if (mode == Mode::uniform) {
      const double lo = ceil(p.a), hi = floor(p.b);
      v = fmin(floor(lo + (hi - lo + 1) * uniform01<double>(draw(p.key, i, 0))), hi);
    } else {
      v = generate<double>(mode, p, i);
    }
    if constexpr (T == DType::i32) static_cast<std::int32_t*>(base)[off] = to_int<std::int32_t>(v, -2147483648.0, 2147483647.0);
    else if constexpr (T == DType::i64) static_cast<long long*>(base)[off] = to_int<long long>(v, -9.2233720368547758e18, 9.2233720368547748e18);
    else static_cast<std::uint8_t*>(base)[off] = to_int<std::uint8_t>(v, 0.0, 255.0);
  }
}

template <DType T>
__global__ void fill_kernel(void* base, Layout layout, std::int64_t n, Mode mode, FillParams p) {
  const std::int64_t step = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step)
    store<T>(base, layout.offset(i), mode, p, i);
}

template <class Bits>
__global__ void poison_kernel(Bits* base, Layout layout, std::int64_t n, Bits bits) {
  const std::int64_t step = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step)
    base[layout.offset(i)] = bits;
}

constexpr int kBlock = 256;

unsigned grid_for(std::int64_t n) {
  // Any grid gives the same values; this one is large enough to fill the biggest GPUs.
  return static_cast<unsigned>(std::min<std::int64_t>(ceil_div<std::int64_t>(n, kBlock), 8192));
}

Layout make_layout(const TensorView& t, const char* what) {
  CUTELAB_REQUIRE(t.rank() <= kMaxRank, what, ": rank ", t.rank(), " of ", t.describe(), " exceeds ", kMaxRank);
  CUTELAB_REQUIRE(t.stride.size() == t.shape.size(), what, ": ", t.describe(), " has ", t.stride.size(),
                  " strides for ", t.shape.size(), " dimensions");
  CUTELAB_REQUIRE(t.numel() == 0 || t.data != nullptr, what, ": ", t.describe(), " has no data pointer");
  Layout l;
  l.rank = t.rank();
  l.contiguous = t.contiguous();
  for (int d = 0; d < l.rank; ++d) {
    l.shape[d] = t.shape[d];
    l.stride[d] = t.stride[d];
  }
  return l;
}

void launch_fill(const TensorView& t, Mode mode, const FillParams& p, cudaStream_t stream, const char* what) {
  const Layout layout = make_layout(t, what);
  const std::int64_t n = t.numel();
  if (n == 0) return;
  const unsigned grid = grid_for(n);
  switch (t.dtype) {
#define CUTELAB_FILL_CASE(T) \
  case DType::T: fill_kernel<DType::T><<<grid, kBlock, 0, stream>>>(t.data, layout, n, mode, p); break;
    CUTELAB_FILL_CASE(bf16)
    CUTELAB_FILL_CASE(f16)
    CUTELAB_FILL_CASE(f32)
    CUTELAB_FILL_CASE(f64)
    CUTELAB_FILL_CASE(e4m3)
    CUTELAB_FILL_CASE(e5m2)
    CUTELAB_FILL_CASE(i32)
    CUTELAB_FILL_CASE(i64)
    CUTELAB_FILL_CASE(u8)
#undef CUTELAB_FILL_CASE
  }
  CUTELAB_CUDA_LAUNCH();
}

template <class Bits>
void launch_poison(const TensorView& t, const Layout& layout, cudaStream_t stream) {
  const std::int64_t n = t.numel();
  poison_kernel<Bits><<<grid_for(n), kBlock, 0, stream>>>(static_cast<Bits*>(t.data), layout, n,
                                                         static_cast<Bits>(poison_bits(t.dtype)));
  CUTELAB_CUDA_LAUNCH();
}

}  // namespace

void fill_uniform(const TensorView& t, std::uint64_t seed, double lo, double hi, cudaStream_t stream) {
  CUTELAB_REQUIRE(lo <= hi, "fill_uniform: lo (", lo, ") must be <= hi (", hi, ")");
  launch_fill(t, Mode::uniform, {splitmix64(seed), lo, hi}, stream, "fill_uniform");
}

void fill_normal(const TensorView& t, std::uint64_t seed, double mean, double stddev, cudaStream_t stream) {
  CUTELAB_REQUIRE(stddev >= 0, "fill_normal: stddev must be >= 0, got ", stddev);
  launch_fill(t, Mode::normal, {splitmix64(seed), mean, stddev}, stream, "fill_normal");
}

void fill_constant(const TensorView& t, double value, cudaStream_t stream) {
  launch_fill(t, Mode::constant, {0, value, 0}, stream, "fill_constant");
}

void fill_poison(const TensorView& t, cudaStream_t stream) {
  const Layout layout = make_layout(t, "fill_poison");
  if (t.numel() == 0) return;
  switch (dtype_size(t.dtype)) {
    case 1: launch_poison<std::uint8_t>(t, layout, stream); break;
    case 2: launch_poison<std::uint16_t>(t, layout, stream); break;
    case 4: launch_poison<std::uint32_t>(t, layout, stream); break;
    case 8: launch_poison<unsigned long long>(t, layout, stream); break;
  }
}

}  // namespace cutelab
