#include "mla_decode/common/workspace.hpp"

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <random>

#include "cutelab/core/error.hpp"
#include "cutelab/core/math.hpp"
#include "cutelab/runtime/launch.hpp"
#include "mla_decode/fp8/kv_format.hpp"

namespace cutelab::mla {

namespace {

constexpr std::uint64_t mix(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// Quiet NaNs a kernel's arithmetic would propagate. Distinct from the output poison pattern.
constexpr std::uint16_t kNanBf16 = 0x7FC0;
constexpr std::uint16_t kNanF16 = 0x7E00;

// One block per page: token slots at or beyond valid_tokens[page] become NaN. Pages a request
// owns in full are left alone; a page nobody owns has valid_tokens 0.
__global__ void nan_fill_kernel(uint4* kv, const int* valid_tokens, int token_vecs, std::uint16_t nan_bits) {
  const int page = blockIdx.x;
  const int valid = valid_tokens[page];
  if (valid >= kPageSize) return;
  const std::uint32_t pair = (static_cast<std::uint32_t>(nan_bits) << 16) | nan_bits;
  const uint4 nan4 = make_uint4(pair, pair, pair, pair);
  uint4* page_base = kv + static_cast<std::int64_t>(page) * kPageSize * token_vecs;
  const int begin = valid * token_vecs;
  const int end = kPageSize * token_vecs;
  for (int i = begin + static_cast<int>(threadIdx.x); i < end; i += blockDim.x) page_base[i] = nan4;
}

// fp8_token: one block per page; the 4 scales of every (token, KV head) entry at or beyond
// valid_tokens[page] become NaN, so a kernel that reads an unowned slot meets NaN scales too.
__global__ void nan_scales_kernel(std::uint8_t* cache, const int* valid_tokens, int h_kv) {
  const int page = blockIdx.x;
  const int valid = valid_tokens[page];
  const int entries = (kPageSize - valid) * h_kv;
  std::uint8_t* first = cache + (static_cast<std::int64_t>(page) * kPageSize + valid) * h_kv * kFp8TokenBytes;
  for (int i = static_cast<int>(threadIdx.x); i < entries * kFp8Groups; i += blockDim.x)
    reinterpret_cast<float*>(first + (i / kFp8Groups) * kFp8TokenBytes + kFp8ScaleOffset)[i % kFp8Groups] =
        NAN;
}

__global__ void iota_kernel(int* v, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) v[i] = i;
}

void check_case(const MlaDecodeCase& c) {
  CUTELAB_REQUIRE(c.b >= 1 && c.b <= kMaxBatch, "case.b: expected 1..", kMaxBatch, ", got ", c.b);
  CUTELAB_REQUIRE(c.s_q >= 1 && c.s_q <= kMaxQueryLen, "case.s_q: expected 1..", kMaxQueryLen, ", got ", c.s_q);
  CUTELAB_REQUIRE(c.h_q >= 1 && c.h_q <= kMaxHeadsQ, "case.h_q: expected 1..", kMaxHeadsQ, ", got ", c.h_q);
  CUTELAB_REQUIRE(c.h_kv >= 1 && c.h_kv <= kMaxHeadsKV, "case.h_kv: expected 1..", kMaxHeadsKV, ", got ", c.h_kv);
  CUTELAB_REQUIRE(c.h_q % c.h_kv == 0, "case.h_q (", c.h_q, ") must be a multiple of case.h_kv (", c.h_kv, ")");
  CUTELAB_REQUIRE(c.dtype == DType::bf16 || c.dtype == DType::f16, "case.dtype: expected bf16 or f16, got ",
                  dtype_name(c.dtype));
  CUTELAB_REQUIRE(
      !is_fp8(c.kv_format) || c.dtype == DType::bf16, "case.kv_format ", kv_format_name(c.kv_format),
      " needs case.dtype bf16 (FP8 caches are quantised from a bf16 one), got ", dtype_name(c.dtype));
  CUTELAB_REQUIRE(static_cast<int>(c.seqlens.size()) == c.b, "case.seqlens: expected ", c.b,
                  " lengths (one per request), got ", c.seqlens.size());
  CUTELAB_REQUIRE(c.spare_blocks >= 0, "case.spare_blocks: expected >= 0, got ", c.spare_blocks);
  CUTELAB_REQUIRE(c.kv_pool_pages >= 0, "case.kv_pool_pages: expected >= 0, got ", c.kv_pool_pages);
  const int width = c.blocks_per_seq();
  for (int i = 0; i < c.b; ++i) {
    const int len = c.seqlens[i];
    CUTELAB_REQUIRE(len >= 0 && len <= kMaxSeqlen, "case.seqlens[", i, "] = ", len, " is outside 0..", kMaxSeqlen);
    CUTELAB_REQUIRE(ceil_div(len, kPageSize) <= width, "case.seqlens[", i, "] = ", len, " needs ",
                    ceil_div(len, kPageSize), " pages, more than max_blocks_per_seq = ", width);
  }
}

}  // namespace

MlaDecodeWorkspace::MlaDecodeWorkspace(MlaDecodeCase c, std::uint64_t seed) : case_(std::move(c)) {
  check_case(case_);
  if (!is_fp8(case_.kv_format)) case_.kv_format = case_.dtype == DType::f16 ? KvFormat::f16 : KvFormat::bf16;
  const int b = case_.b;
  const int width = case_.blocks_per_seq();

  // Pages: every request's own, one filler page that unused table slots point at, and the
  // spares. Page ids come from a (shuffled) pool so neighbours in a table are not neighbours
  // in memory.
  int owned = 0;
  for (int len : case_.seqlens) owned += ceil_div(len, kPageSize);
  // A pool: the requests' pages repeat `owned` ids, each holding the longest valid part any
  // request gives it (a page that is full for one request is never a NaN tail for another).
  if (case_.kv_pool_pages > 0) owned = std::min(owned, case_.kv_pool_pages);
  num_blocks_ = owned + 1 + case_.spare_blocks;
  std::vector<int> pool(static_cast<std::size_t>(num_blocks_));
  std::iota(pool.begin(), pool.end(), 0);
  if (case_.shuffle_blocks) {
    std::mt19937_64 rng(mix(seed ^ 0x5348554646ull));
    std::shuffle(pool.begin(), pool.end(), rng);
  }
  std::vector<int> valid_tokens(static_cast<std::size_t>(num_blocks_), 0);
  host_block_table_.assign(static_cast<std::size_t>(b) * width, 0);
  std::size_t next = 0;
  for (int i = 0; i < b; ++i) {
    const int len = case_.seqlens[i];
    for (int j = 0; j < ceil_div(len, kPageSize); ++j) {
      const int page = pool[next++ % static_cast<std::size_t>(std::max(owned, 1))];
      host_block_table_[static_cast<std::size_t>(i) * width + j] = page;
      valid_tokens[page] = std::max(valid_tokens[page], std::min(kPageSize, len - j * kPageSize));
    }
  }
  const int filler = pool[static_cast<std::size_t>(owned)];
  for (int i = 0; i < b; ++i)
    for (int j = ceil_div(case_.seqlens[i], kPageSize); j < width; ++j)
      host_block_table_[static_cast<std::size_t>(i) * width + j] = filler;

  const DType dt = case_.dtype;
  q = DeviceTensor(dt, {b, case_.s_q, case_.h_q, kHeadDimQK});
  kv_cache = DeviceTensor(dt, {num_blocks_, kPageSize, case_.h_kv, kHeadDimQK});
  block_table = DeviceTensor::from_host(DType::i32, {b, width}, host_block_table_);
  seqlens = DeviceTensor::from_host(DType::i32, {b}, case_.seqlens);
  out = DeviceTensor(dt, {b, case_.s_q, case_.h_q, kHeadDimV});
  lse = DeviceTensor(DType::f32, {b, case_.h_q, case_.s_q});

  fill_normal(q.view(), mix(seed ^ 0x51ull), 0.0, 1.0);
  fill_normal(kv_cache.view(), mix(seed ^ 0x4B56ull), 0.0, 1.0);
  LaunchShape per_page;
  per_page.grid = dim3(static_cast<unsigned>(num_blocks_));
  per_page.block = dim3(256);
  const DeviceTensor valid = DeviceTensor::from_host(DType::i32, {num_blocks_}, valid_tokens);
  if (case_.nan_unowned) {
    const int token_vecs = case_.h_kv * kHeadDimQK * 2 / 16;  // 16-byte vectors per token slot
    launch(nan_fill_kernel, per_page, nullptr, static_cast<uint4*>(kv_cache.data()), valid.as<const int>(),
           token_vecs, dt == DType::bf16 ? kNanBf16 : kNanF16);
  }
  if (is_fp8(case_.kv_format)) {
    // Every slot quantised as an engine appending tokens would (NaN stays NaN); the scales of
    // unowned slots then become NaN as well.
    const KvFormat f = case_.kv_format;
    const int slots_n = num_blocks_ * kPageSize;
    DeviceTensor slots(DType::i32, {slots_n});
    LaunchShape flat;
    flat.grid = dim3(static_cast<unsigned>(std::min(ceil_div(slots_n, 256), 1024)));
    flat.block = dim3(256);
    launch(iota_kernel, flat, nullptr, slots.as<int>(), slots_n);
    kv_fp8 = DeviceTensor(f == KvFormat::fp8_tensor ? DType::e4m3 : DType::u8,
                          {num_blocks_, kPageSize, case_.h_kv, kv_entry_bytes(f)});
    QuantizeKvArgs qa;
    qa.format = f;
    qa.rows = TensorView{kv_cache.data(), DType::bf16, {slots_n, case_.h_kv, kHeadDimQK}, {}};
    qa.slots = slots.view();
    qa.cache = kv_fp8.view();
    if (f == KvFormat::fp8_tensor) {
      // fp32 amax / 448, as quantize_kv's groups: the largest value maps to e4m3's largest.
      const float amax = kv_amax(kv_cache.view());
      kv_scale =
          DeviceTensor::from_host(DType::f32, {1}, std::vector<float>{amax > 0.f ? amax / kE4m3Max : 1.f});
      qa.scale = kv_scale.as<const float>();
    }
    quantize_kv(qa);
    if (f == KvFormat::fp8_token && case_.nan_unowned)
      launch(nan_scales_kernel, per_page, nullptr, static_cast<std::uint8_t*>(kv_fp8.data()),
             valid.as<const int>(), case_.h_kv);
    // `slots` is freed at scope exit; finish with it first.
    CUTELAB_CUDA(cudaStreamSynchronize(nullptr));
  }
  // `valid` is freed at scope exit; finish the fills first.
  CUTELAB_CUDA(cudaStreamSynchronize(nullptr));
  fill_poison(out.view());
  fill_poison(lse.view());
  CUTELAB_CUDA(cudaStreamSynchronize(nullptr));
}

std::vector<OutputSpec> MlaDecodeWorkspace::outputs() const {
  Tolerance out_tol = out_tolerance(case_.dtype, case_.kv_format, case_.arithmetic);
  Tolerance lse_tol = lse_tolerance(case_.kv_format, case_.arithmetic);
  if (!relative_l2_is_a_statistic(case_)) out_tol.max_rel_l2 = lse_tol.max_rel_l2 = 0;
  return {{"out", out.view(), out_tol}, {"lse", lse.view(), lse_tol}};
}

MlaDecodeArgs MlaDecodeWorkspace::args() const {
  MlaDecodeArgs a = original_args();
  if (is_fp8(case_.kv_format)) {
    a.kv_cache = kv_fp8.view();
    if (case_.kv_format == KvFormat::fp8_tensor) a.kv_scale = kv_scale.as<const float>();
  }
  return a;
}

MlaDecodeArgs MlaDecodeWorkspace::original_args() const {
  MlaDecodeArgs a;
  a.q = q.view();
  a.kv_cache = kv_cache.view();
  a.block_table = block_table.view();
  a.seqlens = seqlens.view();
  a.out = out.view();
  a.lse = lse.view();
  a.softmax_scale = case_.softmax_scale;
  a.causal = case_.causal;
  return a;
}

namespace {

// Kernels on FP8 tensor cores round q (per row, scale amax / 448) and P (times 256) to e4m3:
// relative 2^-4 at most, rms ~2.4e-2 per value (3 mantissa bits). A logit
// sum_i q_i k_i / sqrt(576) then moves by rms ~2.6e-2 (576 independent errors of N(0, 1)
// products); a one-key row's lse by as much, a longer row's by a weighted mean of such moves;
// P's rounding moves out by ~2^-4 / sqrt(3) of the weights' spread. Sized with a host emulation
// of such a kernel (e4m3 round-to-nearest of q and 256 P, codes exact, fp64 otherwise) against
// fp64 on the same dequantised cache, 500-20000 rows per length, lengths 1..4096:
// out rel L2 1.6e-2 (2 keys) .. 3.4e-2 (300 keys), atol needed beside rtol 2e-2 up to 0.20
// (2-8 keys, two similar weights with |v1 - v2| ~ 8: out moves by p (1 - p) |v1 - v2| dlogit);
// lse off by up to 0.123 (1 key, ~4.7 rms), rel L2 up to 2.7e-2 (1 key), 1.8e-3 from 64 keys on.
// (bench/emulation/mla_fp8_arithmetic.py is that emulation; its fp8_tensor rows reproduce these.)
// Bounds: out atol 0.25, rtol 2e-2, rel L2 5e-2; lse atol 0.15, rtol 1e-3, rel L2 4e-2. The
// relative L2 bounds are what catch a wrong kernel (a wrong page or scale moves out by O(1)).
struct ArithmeticTolerances {
  Tolerance out, lse;
};
ArithmeticTolerances e4m3_arithmetic_tolerances() {
  return {{.atol = 0.25, .rtol = 2e-2, .max_rel_l2 = 5e-2}, {.atol = 0.15, .rtol = 1e-3, .max_rel_l2 = 4e-2}};
}

// e4m3_requantised: the above, and each page's latent codes rounded to e4m3 again as
// code x f16(s / M) (M the piece's largest group scale so far), its RoPE values to bf16 after the
// division by M. The same emulation (`--rope-on k`, bench/results/2026-11-23-host-fp8-token-
// requant-emulation/seed3-96req-rope-on-k.txt, 96 requests x 64 rows per length): out rel L2 up
// to 4.8e-2 (64-300 keys; a one-key row 2.3e-2: V' is rounded again), atol needed beside rtol 2e-2
// up to 0.27 (2-3 keys), lse up to 0.143 (1 key), lse rel L2 up to 3.3e-2. Bounds with the margins
// of the class above (atol 1.2x, relative L2 ~1.5x, lse 1.5x): out atol 0.33, rtol 2e-2, rel L2
// 7e-2; lse atol 0.22, rtol 1e-3, rel L2 5e-2. A wrong page, scale or reference still moves out by
// O(1) against these.
ArithmeticTolerances requantised_arithmetic_tolerances() {
  return {{.atol = 0.33, .rtol = 2e-2, .max_rel_l2 = 7e-2}, {.atol = 0.22, .rtol = 1e-3, .max_rel_l2 = 5e-2}};
}

}  // namespace

// The relative L2 bounds of this file's tolerances are statistics sized over hundreds of rows per
// length. Over n rows that each see a few keys, the ratio of the error norm to the reference norm is
// a draw with ~n degrees of freedom (lse: F(n, n)); at the FP8 bounds, ~1.5x the expected ratio for
// one-key rows, a correct kernel exceeds them with probability 0.3 at n = 2, 0.05 at 16 and 1e-3 at
// 64 (docs/knowledge/anti-patterns/relative-l2-over-few-values.md). A row that sees 64 keys or more
// has an lse error far inside the bound and an out error spread over independent P roundings, so a
// case whose rows all see that many keys keeps it at any count.
bool relative_l2_is_a_statistic(const MlaDecodeCase& c) {
  constexpr std::int64_t kMinRows = 64;
  constexpr int kManyKeys = 64;
  std::int64_t rows = 0;
  bool few_key_row = false;
  for (int len : c.seqlens)
    for (int s = 0; s < c.s_q; ++s) {
      const int keys = c.causal ? std::max(0, len - c.s_q + s + 1) : len;
      if (keys == 0) continue;
      rows += c.h_q;
      few_key_row = few_key_row || keys < kManyKeys;
    }
  return rows >= kMinRows || (rows > 0 && !few_key_row);
}

// out is a softmax-weighted mean of V rows ~ N(0, 1): |out| is ~1 for a few keys and
// ~0.02-0.1 for thousands. Fast kernels round P to the input type before the PV product
// (relative 2^-9 for bf16, 2^-12 for f16) and round out once more, so an element's error is
// about that fraction of sum_j p_j |v_j|, which exceeds |out| only where the weighted values
// cancel: rtol covers the rounding of out, atol the cancelling elements. The relative L2
// bound is the issue's (bf16: "well under 1e-2"; expected 2e-3..5e-3); f16 carries 3 more
// mantissa bits, so its bounds are 8x tighter. Sized with a host emulation of such a kernel
// (P rounded, fp32 accumulate, pages of 64) against fp64, 10^6 elements per length, lengths
// 1..4096: rel L2 1.8e-3..2.1e-3 (f16 2.2e-4..2.6e-4); the atol needed beside rtol peaked at
// 3.7e-3 (f16 4.5e-4) for 2-8 keys, where two weights of similar size can cancel.
Tolerance out_tolerance(DType dtype, KvFormat kv, MlaArithmetic arithmetic) {
  if (arithmetic == MlaArithmetic::e4m3_q_and_p) return e4m3_arithmetic_tolerances().out;
  if (arithmetic == MlaArithmetic::e4m3_requantised) return requantised_arithmetic_tolerances().out;
  if (dtype == DType::f16) return {.atol = 1e-3, .rtol = 2.5e-3, .max_rel_l2 = 1.25e-3};
  if (kv != KvFormat::fp8_token) return {.atol = 8e-3, .rtol = 2e-2, .max_rel_l2 = 1e-2};
  // fp8_token: the bf16 tile's rounding of K (lse_tolerance below: logits move by rms 1.1e-3,
  // up to ~5e-3) moves a few-key row's weights too: between two keys of similar logit,
  // out moves by p (1 - p) |v1 - v2| dlogit <= 0.25 * 8 * 5e-3 = 1e-2 (|v1 - v2| <= 8 for
  // N(0, 1) values). That adds to atol; V's own rounding (relative 2^-9) is inside rtol; the
  // relative L2 bound stays (the expected error grows from ~2e-3 to ~2.5e-3).
  return {.atol = 1.8e-2, .rtol = 2e-2, .max_rel_l2 = 1e-2};
}

// lse comes from fp32 logits of the same bf16/f16 inputs the reference reads; kernels differ
// from it only in summation order and approximate exp2/log2 (~1e-6 relative), so fp32 bounds.
Tolerance lse_tolerance(KvFormat kv, MlaArithmetic arithmetic) {
  if (arithmetic == MlaArithmetic::e4m3_q_and_p) return e4m3_arithmetic_tolerances().lse;
  if (arithmetic == MlaArithmetic::e4m3_requantised) return requantised_arithmetic_tolerances().lse;
  if (kv != KvFormat::fp8_token) return {.atol = 1e-3, .rtol = 1e-3, .max_rel_l2 = 1e-5};
  // fp8_token's per-token group scales cannot leave the bf16 tile a kernel multiplies: each
  // dequantised value code * scale is rounded to bf16 there (relative <= 2^-9, rms
  // 2^-9 / sqrt(3) = 1.1e-3), which the fp32 reference does not do. A logit
  // sum_i q_i k_i / sqrt(576) over 576 N(0, 1) products then moves by rms 1.1e-3 (the per-value
  // errors are independent); a one-key row's lse by as much, a longer row's by a weighted mean
  // of such moves (less). Bounds: atol 5e-3 (4.5 sigma, the largest of ~1e4 rows), relative L2
  // 2e-3 (rms 1.1e-3 over |lse| >= ~1 in rms).
  return {.atol = 5e-3, .rtol = 1e-3, .max_rel_l2 = 2e-3};
}

}  // namespace cutelab::mla
