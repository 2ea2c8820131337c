// FP8 KV-cache formats (issue 11): quantize_kv writes exactly the bytes the format defines into
// exactly the given slots, dequantize_kv reads them back, checked mode refuses bad slots before
// writing anything. The harness on FP8 caches: the workspace's FP8 cache (NaN codes and NaN
// scales exactly where no request owns a slot), checked validate_args on FP8 scales, and the
// quantisation error of the FP8 formats (the reference on args() against original_args()).

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <iostream>
#include <memory>
#include <optional>
#include <random>
#include <vector>

#include "cutelab/core/dtype.hpp"
#include "cutelab/core/error.hpp"
#include "cutelab/core/math.hpp"
#include "cutelab/runtime/registry.hpp"
#include "cutelab/runtime/tensor.hpp"
#include "mla_decode/common/args.hpp"
#include "mla_decode/common/plan_base.hpp"
#include "mla_decode/common/problem.hpp"
#include "mla_decode/common/workspace.hpp"
#include "mla_decode/fp8/kv_format.hpp"
#include "mla_decode/reference/reference.hpp"
#include "mla_test_util.hpp"

namespace cutelab::mla {
namespace {

using ::testing::HasSubstr;

constexpr std::uint8_t kUntouched = 0xAB;

struct Fp8Case {
  KvFormat format;
  int h_kv, num_blocks;
  std::vector<int> slots;  // one per row, negative: skipped
};

// bf16 rows ~ N(0, 2) with a few large values and, in row 1, a NaN at column 7.
std::vector<std::uint16_t> make_rows(int n, int h_kv, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> dist(0.f, 2.f);
  std::vector<std::uint16_t> rows(static_cast<std::size_t>(n) * h_kv * kHeadDimQK);
  for (std::size_t i = 0; i < rows.size(); ++i) rows[i] = float_to_bf16_bits(i % 97 == 5 ? 60.f : dist(rng));
  if (n > 1) rows[static_cast<std::size_t>(1) * h_kv * kHeadDimQK + 7] = float_to_bf16_bits(NAN);
  return rows;
}

struct Quantized {
  std::vector<std::uint8_t> cache;  // host copy after quantize_kv
  std::vector<float> dequantized;   // dequantize_kv of it
};

Quantized run_quantize(const Fp8Case& c, const std::vector<std::uint16_t>& rows, float scale) {
  const int n = static_cast<int>(c.slots.size());
  const int entry = kv_entry_bytes(c.format);
  DeviceTensor d_rows = DeviceTensor::from_host(DType::bf16, {n, c.h_kv, kHeadDimQK}, rows);
  DeviceTensor d_slots = DeviceTensor::from_host(DType::i32, {n}, c.slots);
  std::vector<std::uint8_t> init(static_cast<std::size_t>(c.num_blocks) * kPageSize * c.h_kv * entry,
                                 kUntouched);
  DeviceTensor d_cache = DeviceTensor::from_host(DType::u8, {c.num_blocks, kPageSize, c.h_kv, entry}, init);
  DeviceTensor d_scale = DeviceTensor::from_host(DType::f32, {1}, std::vector<float>{scale});
  QuantizeKvArgs a{c.format, d_rows.view(), d_slots.view(), d_cache.view(), d_scale.as<float>()};
  quantize_kv(a, /*checked=*/true);
  DeviceTensor d_out(DType::f32, {c.num_blocks, kPageSize, c.h_kv, kHeadDimQK});
  dequantize_kv(c.format, d_cache.view(), d_scale.as<float>(), d_out.as<float>());
  CUTELAB_CUDA(cudaDeviceSynchronize());
  return {copy_to_host<std::uint8_t>(d_cache.view()), copy_to_host<float>(d_out.view())};
}

TEST(MlaKvFp8Gpu, PerTensorWritesTheRoundedBytesIntoTheGivenSlotsOnly) {
  CUTELAB_REQUIRE_GPU();
  const Fp8Case c{KvFormat::fp8_tensor, 2, 3, {5, 130, -1, 64, 191}};
  const std::vector<std::uint16_t> rows = make_rows(5, c.h_kv, 1);
  const float scale = 60.f / kE4m3Max;
  const Quantized q = run_quantize(c, rows, scale);
  std::vector<bool> written(static_cast<std::size_t>(c.num_blocks) * kPageSize * c.h_kv, false);
  for (std::size_t r = 0; r < c.slots.size(); ++r) {
    if (c.slots[r] < 0) continue;
    for (int h = 0; h < c.h_kv; ++h) {
      const std::size_t e = static_cast<std::size_t>(c.slots[r]) * c.h_kv + h;
      written[e] = true;
      for (int col = 0; col < kHeadDimQK; ++col) {
        const float x = bf16_bits_to_float(rows[(r * c.h_kv + h) * kHeadDimQK + col]);
        const std::uint8_t want = float_to_e4m3_bits(x / scale);
        ASSERT_EQ(q.cache[e * kHeadDimQK + col], want) << "row " << r << " head " << h << " col " << col;
        const float deq = q.dequantized[e * kHeadDimQK + col];
        if (std::isnan(x)) {
          EXPECT_TRUE(std::isnan(deq));
        } else {
          EXPECT_FLOAT_EQ(deq, e4m3_bits_to_float(want) * scale);
          EXPECT_LE(std::fabs(deq - x), std::fabs(x) / 16 + scale / 1024) << "half an e4m3 step";
        }
      }
    }
  }
  for (std::size_t e = 0; e < written.size(); ++e)
    if (!written[e])
      for (int b = 0; b < kHeadDimQK; ++b)
        ASSERT_EQ(q.cache[e * kHeadDimQK + b], kUntouched) << "entry " << e;
}

TEST(MlaKvFp8Gpu, PerTokenGroupsCarryTheirAmaxScaleAndTheRopeAsGiven) {
  CUTELAB_REQUIRE_GPU();
  const Fp8Case c{KvFormat::fp8_token, 1, 2, {3, 64, 127, -5}};
  std::vector<std::uint16_t> rows = make_rows(4, c.h_kv, 2);
  for (int col = 128; col < 256; ++col)
    rows[2 * kHeadDimQK + col] = float_to_bf16_bits(0.f);  // row 2, group 1: zeros
  const Quantized q = run_quantize(c, rows, 1.f);
  for (std::size_t r = 0; r < c.slots.size(); ++r) {
    if (c.slots[r] < 0) continue;
    const std::uint8_t* entry = q.cache.data() + static_cast<std::size_t>(c.slots[r]) * kFp8TokenBytes;
    for (int g = 0; g < kFp8Groups; ++g) {
      float amax = 0.f;
      for (int col = g * kFp8GroupCols; col < (g + 1) * kFp8GroupCols; ++col) {
        const float x = bf16_bits_to_float(rows[r * kHeadDimQK + col]);
        if (std::isfinite(x)) amax = std::max(amax, std::fabs(x));
      }
      const float want_scale = amax > 0.f ? amax / kE4m3Max : 1.f;
      float scale = 0;
      std::memcpy(&scale, entry + kFp8ScaleOffset + 4 * g, 4);
      ASSERT_EQ(scale, want_scale) << "row " << r << " group " << g;
      for (int col = g * kFp8GroupCols; col < (g + 1) * kFp8GroupCols; ++col) {
        const float x = bf16_bits_to_float(rows[r * kHeadDimQK + col]);
        ASSERT_EQ(entry[col], float_to_e4m3_bits(x / scale)) << "row " << r << " col " << col;
        const float deq = q.dequantized[static_cast<std::size_t>(c.slots[r]) * kHeadDimQK + col];
        if (std::isnan(x))
          EXPECT_TRUE(std::isnan(deq)) << "NaN stays NaN (row " << r << " col " << col << ")";
        else
          EXPECT_LE(std::fabs(deq - x), std::fabs(x) / 16 + scale / 1024) << "row " << r << " col " << col;
      }
    }
    EXPECT_EQ(std::memcmp(entry + kFp8RopeOffset, &rows[r * kHeadDimQK + kHeadDimV], 64 * 2), 0)
        << "RoPE bytes of row " << r;
    for (int col = kHeadDimV; col < kHeadDimQK; ++col)
      EXPECT_EQ(q.dequantized[static_cast<std::size_t>(c.slots[r]) * kHeadDimQK + col],
                bf16_bits_to_float(rows[r * kHeadDimQK + col]));
  }
  // Entries of slots no row named keep their bytes.
  for (int slot : {0, 1, 2, 4, 63, 65, 126})
    for (int b = 0; b < kFp8TokenBytes; ++b)
      ASSERT_EQ(q.cache[static_cast<std::size_t>(slot) * kFp8TokenBytes + b], kUntouched) << "slot " << slot;
}

TEST(MlaKvFp8Gpu, CheckedModeRefusesBadSlotsBeforeWritingAnything) {
  CUTELAB_REQUIRE_GPU();
  const std::vector<std::uint16_t> rows = make_rows(3, 1, 3);
  for (KvFormat f : {KvFormat::fp8_tensor, KvFormat::fp8_token}) {
    const int entry = kv_entry_bytes(f);
    DeviceTensor d_rows = DeviceTensor::from_host(DType::bf16, {3, 1, kHeadDimQK}, rows);
    std::vector<std::uint8_t> init(static_cast<std::size_t>(2) * kPageSize * entry, kUntouched);
    DeviceTensor d_cache = DeviceTensor::from_host(DType::u8, {2, kPageSize, 1, entry}, init);
    DeviceTensor d_scale = DeviceTensor::from_host(DType::f32, {1}, std::vector<float>{0.1f});
    for (const auto& [slots, message] : std::vector<std::pair<std::vector<std::int64_t>, std::string>>{
             {{0, 128, 1}, "slots[1] = 128 is beyond the cache's 128 slots"},
             {{7, 9, 7}, "slot 7 is given to more than one row"}}) {
      DeviceTensor d_slots = DeviceTensor::from_host(DType::i64, {3}, slots);
      QuantizeKvArgs a{f, d_rows.view(), d_slots.view(), d_cache.view(), d_scale.as<float>()};
      try {
        quantize_kv(a, /*checked=*/true);
        ADD_FAILURE() << "accepted " << message;
      } catch (const UsageError& e) {
        EXPECT_THAT(e.message(), HasSubstr(message));
      }
    }
    EXPECT_EQ(copy_to_host<std::uint8_t>(d_cache.view()), init) << kv_format_name(f) << ": nothing written";
  }
}

// ---------------------------------------------------------------------------------------------
// The harness's FP8 workspace.

bool is_e4m3_nan(std::uint8_t b) { return (b & 0x7F) == 0x7F; }

float scale_at(const std::vector<std::uint8_t>& cache, std::size_t entry, int group) {
  float v = 0;
  std::memcpy(&v, cache.data() + entry * kFp8TokenBytes + kFp8ScaleOffset + 4 * group, 4);
  return v;
}

// Tokens of each page some request owns (0 for pages nobody owns), from the block table.
std::vector<int> owned_tokens(const MlaDecodeWorkspace& ws) {
  const MlaDecodeCase& c = ws.spec();
  const int width = c.blocks_per_seq();
  std::vector<int> valid(static_cast<std::size_t>(ws.num_blocks()), 0);
  for (int i = 0; i < c.b; ++i)
    for (int j = 0; j < ceil_div(c.seqlens[i], kPageSize); ++j)
      valid[ws.host_block_table()[static_cast<std::size_t>(i) * width + j]] =
          std::min(kPageSize, c.seqlens[i] - j * kPageSize);
  return valid;
}

TEST(MlaKvFp8Workspace, HoldsTheQuantisedCacheWithNanWhereNothingIsOwned) {
  CUTELAB_REQUIRE_GPU();
  for (KvFormat f : {KvFormat::fp8_tensor, KvFormat::fp8_token}) {
    SCOPED_TRACE(std::string(kv_format_name(f)));
    MlaDecodeCase c = make_case(3, 1, 16, 2, false, DType::bf16, {0, 65, 130});
    c.max_blocks_per_seq = 5;
    c.kv_format = f;
    const MlaDecodeWorkspace ws(c, 11);
    const int nb = ws.num_blocks(), h_kv = c.h_kv, entry = kv_entry_bytes(f);
    ASSERT_EQ(ws.kv_fp8.dtype(), f == KvFormat::fp8_tensor ? DType::e4m3 : DType::u8);
    ASSERT_EQ(ws.kv_fp8.shape(), (std::vector<std::int64_t>{nb, kPageSize, h_kv, entry}));
    // args() hands out the FP8 cache, original_args() the bf16 one it was quantised from.
    EXPECT_EQ(ws.args().kv_cache.data, ws.kv_fp8.data());
    EXPECT_EQ(ws.original_args().kv_cache.data, ws.kv_cache.data());
    EXPECT_EQ(ws.original_args().kv_scale, nullptr);
    EXPECT_EQ(ws.args().kv_scale, f == KvFormat::fp8_tensor ? ws.kv_scale.as<const float>() : nullptr);

    // fp8_tensor's scale: the largest finite |x| of the bf16 cache / 448, in fp32.
    const std::vector<std::uint16_t> original = copy_to_host<std::uint16_t>(ws.kv_cache.view());
    float scale = 1.f;
    if (f == KvFormat::fp8_tensor) {
      float amax = 0.f;
      for (std::uint16_t bits : original)
        if (std::isfinite(bf16_bits_to_float(bits)))
          amax = std::max(amax, std::fabs(bf16_bits_to_float(bits)));
      scale = copy_to_host<float>(ws.kv_scale.view()).at(0);
      EXPECT_EQ(scale, amax / kE4m3Max);
    }

    // Owned slots: what quantize_kv makes of the original rows (the same scale), byte for byte.
    const std::vector<int> valid = owned_tokens(ws);
    std::vector<int> slots;
    for (int page = 0; page < nb; ++page)
      for (int t = 0; t < valid[page]; ++t) slots.push_back(page * kPageSize + t);
    std::vector<std::uint16_t> rows;
    for (int slot : slots)
      rows.insert(rows.end(), original.begin() + static_cast<std::ptrdiff_t>(slot) * h_kv * kHeadDimQK,
                  original.begin() + static_cast<std::ptrdiff_t>(slot + 1) * h_kv * kHeadDimQK);
    const Quantized want = run_quantize({f, h_kv, nb, slots}, rows, scale);
    const std::vector<std::uint8_t> got = copy_to_host<std::uint8_t>(ws.kv_fp8.view());
    ASSERT_EQ(got.size(), want.cache.size());
    std::size_t owned = 0, unowned = 0;
    for (int page = 0; page < nb; ++page) {
      for (int t = 0; t < kPageSize; ++t) {
        for (int h = 0; h < h_kv; ++h) {
          const std::size_t e = (static_cast<std::size_t>(page) * kPageSize + t) * h_kv + h;
          const std::uint8_t* g = got.data() + e * entry;
          if (t < valid[page]) {
            ++owned;
            ASSERT_EQ(std::memcmp(g, want.cache.data() + e * entry, entry), 0)
                << "page " << page << " token " << t;
            continue;
          }
          ++unowned;
          const int codes = f == KvFormat::fp8_tensor ? kHeadDimQK : kHeadDimV;
          for (int b = 0; b < codes; ++b)
            ASSERT_TRUE(is_e4m3_nan(g[b])) << "page " << page << " token " << t << " byte " << b;
          if (f != KvFormat::fp8_token) continue;
          for (int grp = 0; grp < kFp8Groups; ++grp)
            ASSERT_TRUE(std::isnan(scale_at(got, e, grp)))
                << "page " << page << " token " << t << " group " << grp;
          for (int r = 0; r < kHeadDimQK - kHeadDimV; ++r) {
            std::uint16_t bits = 0;
            std::memcpy(&bits, g + kFp8RopeOffset + 2 * r, 2);
            ASSERT_TRUE(std::isnan(bf16_bits_to_float(bits))) << "RoPE of page " << page << " token " << t;
          }
        }
      }
    }
    EXPECT_EQ(owned, (0u + 65 + 130) * h_kv);
    EXPECT_GT(unowned, 0u);
    // NaN scales where nothing is owned are legal: checked mode reads owned tokens only.
    EXPECT_EQ(validate_args(ws.args(), /*checked=*/true, nullptr, KvFormats::all()).kv_format, f);
  }
}

// ---------------------------------------------------------------------------------------------
// Checked mode on FP8 scales.

std::string rejection_in(const MlaDecodeArgs& a, bool checked) {
  try {
    (void)validate_args(a, checked, nullptr, KvFormats::all());
  } catch (const UsageError& e) {
    return e.message();
  }
  return "(accepted)";
}
std::string checked_rejection(const MlaDecodeArgs& a) { return rejection_in(a, true); }
std::string rejection_free(const MlaDecodeArgs& a) { return rejection_in(a, false); }

TEST(MlaKvFp8Checked, RefusesBadTokenScalesOfOwnedTokensOnly) {
  CUTELAB_REQUIRE_GPU();
  MlaDecodeCase c = make_case(3, 1, 16, 2, false, DType::bf16, {100, 64, 150});
  c.kv_format = KvFormat::fp8_token;
  MlaDecodeWorkspace ws(c, 31);
  const int width = c.blocks_per_seq();
  const auto scale_ptr = [&](int request, int token, int head, int group) {
    const std::int64_t page =
        ws.host_block_table()[static_cast<std::size_t>(request) * width + token / kPageSize];
    const std::int64_t e = (page * kPageSize + token % kPageSize) * c.h_kv + head;
    return static_cast<std::uint8_t*>(ws.kv_fp8.data()) + e * kFp8TokenBytes + kFp8ScaleOffset + 4 * group;
  };
  const auto put = [](std::uint8_t* at, float v) {
    CUTELAB_CUDA(cudaMemcpy(at, &v, sizeof(v), cudaMemcpyHostToDevice));
  };
  const auto get = [](const std::uint8_t* at) {
    float v = 0;
    CUTELAB_CUDA(cudaMemcpy(&v, at, sizeof(v), cudaMemcpyDeviceToHost));
    return v;
  };
  ASSERT_EQ(checked_rejection(ws.args()), "(accepted)");

  // Request 2, token 70 (its second page), KV head 1, group 2.
  std::uint8_t* at = scale_ptr(2, 70, 1, 2);
  const float good = get(at);
  for (const auto& [bad, text] : std::vector<std::pair<float, std::string>>{
           {NAN, "is nan"}, {0.f, "is 0"}, {-0.5f, "is -0.5"}, {INFINITY, "is inf"}}) {
    put(at, bad);
    const std::string why = checked_rejection(ws.args());
    EXPECT_THAT(why, HasSubstr("request 2, token 70, KV head 1, group 2 (latent columns 256..383) " + text))
        << why;
    EXPECT_EQ(rejection_free(ws.args()), "(accepted)") << "unchecked mode reads no scale";
  }
  // The first bad scale in (request, token, head, group) order is the one named.
  put(scale_ptr(0, 99, 0, 3), 0.f);
  EXPECT_THAT(checked_rejection(ws.args()), HasSubstr("request 0, token 99, KV head 0, group 3"));
  put(scale_ptr(0, 99, 0, 3), good);
  put(at, good);
  ASSERT_EQ(checked_rejection(ws.args()), "(accepted)");
  // A page tail (request 0 owns 100 tokens: 36 of its second page) holds NaN scales already; a
  // zero or a negative scale there is as legal.
  put(scale_ptr(0, 100, 1, 0), 0.f);
  put(scale_ptr(0, 127, 0, 1), -1.f);
  EXPECT_EQ(checked_rejection(ws.args()), "(accepted)");
}

TEST(MlaKvFp8Checked, RefusesABadTensorScale) {
  CUTELAB_REQUIRE_GPU();
  MlaDecodeCase c = make_case(2, 1, 16, 1, false, DType::bf16, {100, 7});
  c.kv_format = KvFormat::fp8_tensor;
  MlaDecodeWorkspace ws(c, 33);
  const float good = copy_to_host<float>(ws.kv_scale.view()).at(0);
  ASSERT_EQ(checked_rejection(ws.args()), "(accepted)");
  for (const auto& [bad, text] : std::vector<std::pair<float, std::string>>{
           {NAN, "got nan"}, {0.f, "got 0"}, {-1.f, "got -1"}, {INFINITY, "got inf"}}) {
    ws.kv_scale.upload(&bad, sizeof(bad));
    EXPECT_THAT(checked_rejection(ws.args()), HasSubstr("kv_scale: expected a finite value > 0, " + text));
    EXPECT_EQ(rejection_free(ws.args()), "(accepted)") << "unchecked mode reads no scale";
  }
  ws.kv_scale.upload(&good, sizeof(good));
  EXPECT_EQ(checked_rejection(ws.args()), "(accepted)");
}

// ---------------------------------------------------------------------------------------------
// The quantisation error: the reference on the FP8 cache (dequantised) against the reference on
// the bf16 original it was quantised from.
//
// e4m3 keeps 3 mantissa bits: round to nearest moves a value by at most half a step, a relative
// |d| <= 2^-4 (N(0,1) values sit far above e4m3's subnormals, ~2^-6 * scale, whose absolute error
// is negligible). To first order, with d independent per element:
//   V:  out + sum_j p_j d_j v_j: relative to out = sum_j p_j v_j (both sums of independent terms
//       over the same weights), an rms relative error of rms(d);
//   K:  each logit moves by softmax_scale * sum_c q_c k_c d_c, std rms(d) * (softmax_scale *
//       sqrt(576)) = rms(d) for q, k ~ N(0, 1); the weights move by p_j (ds_j - mean) and out by
//       sum_j p_j ds_j v_j: again rms(d) relative.
// Independent, they add in quadrature: rel L2 ~ sqrt(2) * rms(d) <= sqrt(2) * 2^-4 = 0.088 (the
// bound below; d uniform in +-2^-4, rms 3.6%, would give ~5.1%). fp8_token keeps RoPE in bf16, so
// its K error is smaller. The error must also be there: a reference reading the bf16 cache by
// mistake gives 0, so it must exceed 2^-7 (8x below an e4m3 half-step, 4x above bf16's 2^-9).
constexpr double kQuantRelL2Max = 1.41421356 / 16;
constexpr double kQuantRelL2Min = 1.0 / 128;

std::vector<float> reference_out(const MlaDecodeArgs& args, const MlaDecodeWorkspace& ws) {
  DeviceTensor out(DType::f32, ws.out.shape()), lse(DType::f32, ws.lse.shape());
  reference_gpu(args, out.as<float>(), lse.as<float>());
  CUTELAB_CUDA_LAUNCH();
  CUTELAB_CUDA(cudaDeviceSynchronize());
  return copy_to_host<float>(out.view());
}

TEST(MlaKvFp8Reference, QuantisationErrorIsThatOfE4m3) {
  CUTELAB_REQUIRE_GPU();
  for (KvFormat f : {KvFormat::fp8_tensor, KvFormat::fp8_token}) {
    MlaDecodeProblem p;
    p.b = 4;
    p.h_q = 16;
    p.t = 1000;
    p.varlen = true;
    p.kv_format = f;
    const MlaDecodeWorkspace ws(MlaDecodeCase::from_problem(p, 5), 17);
    const std::vector<float> fp8 = reference_out(ws.args(), ws);
    const std::vector<float> bf16 = reference_out(ws.original_args(), ws);
    double diff = 0, norm = 0;
    for (std::size_t i = 0; i < bf16.size(); ++i) {
      ASSERT_TRUE(std::isfinite(fp8[i])) << kv_format_name(f) << " element " << i;
      diff += (static_cast<double>(fp8[i]) - bf16[i]) * (static_cast<double>(fp8[i]) - bf16[i]);
      norm += static_cast<double>(bf16[i]) * bf16[i];
    }
    const double rel_l2 = std::sqrt(diff / norm);
    std::cout << "[ INFO ] " << kv_format_name(f) << ": rel L2 of out against the bf16 cache " << rel_l2
              << "\n";
    EXPECT_LT(rel_l2, kQuantRelL2Max) << kv_format_name(f);
    EXPECT_GT(rel_l2, kQuantRelL2Min) << kv_format_name(f);
  }
}

// ---------------------------------------------------------------------------------------------
// FlashInfer's FP8-KV baseline runs kv-dtype same and fp8_tensor on its own e4m3 cache, one byte
// per KV element in its cost, and refuses fp8_token.
#if CUTELAB_WITH_FLASHINFER
TEST(MlaKvFp8FlashInfer, Fp8KvBaselineServesFp8TensorProblems) {
  const KernelPlan& plan = Registry::instance().find("baseline/mla_decode/flashinfer_sm90_fp8kv/v1");
  const KernelPlan& bf16_plan = Registry::instance().find("baseline/mla_decode/flashinfer_sm90/v1");
  const auto problem = [](const char* kv) {
    return make_problem(MlaDecodeProblem::family(),
                        {{"b", "8"}, {"h", "16"}, {"t", "1000"}, {"kv-dtype", kv}});
  };
  MlaDecodeCase one_byte = problem_case(MlaDecodeProblem::from(problem("same")));
  one_byte.kv_format = KvFormat::fp8_tensor;
  EXPECT_DOUBLE_EQ(plan.cost(problem("same")).bytes, mla_bytes(one_byte));
  EXPECT_DOUBLE_EQ(plan.cost(problem("fp8_tensor")).bytes, mla_bytes(one_byte));
  EXPECT_DOUBLE_EQ(mla_bytes(one_byte), 8.0 * (16 * 576 * 2 + 1000 * 576 + 16 * 512 * 2));
  DeviceInfo dev;  // a made-up Hopper: the refusals below come before any device question
  dev.cc_major = 9;
  dev.smem_per_block_optin = 227 * 1024;
  for (const ConfigDesc& config : plan.configs(problem("fp8_token"), dev)) {
    const std::optional<std::string> why = plan.validate(problem("fp8_token"), config, dev);
    ASSERT_TRUE(why);
    EXPECT_THAT(*why, HasSubstr("kv-dtype fp8_token"));
  }
  for (const char* kv : {"fp8_tensor", "fp8_token"})
    for (const ConfigDesc& config : bf16_plan.configs(problem(kv), dev)) {
      const std::optional<std::string> why = bf16_plan.validate(problem(kv), config, dev);
      ASSERT_TRUE(why) << kv;
      EXPECT_THAT(*why, HasSubstr(std::string("kv-dtype ") + kv));
    }
  CUTELAB_REQUIRE_GPU();
  if (auto why = arch_mismatch(plan.arch(), device())) GTEST_SKIP() << *why;
  for (const ConfigDesc& config : plan.configs(problem("fp8_tensor"), device()))
    EXPECT_EQ(plan.validate(problem("fp8_tensor"), config, device()), std::nullopt);
  // Its own workspace: the bf16 case with its e4m3 copy, not the family's fp8_tensor cache.
  const std::unique_ptr<Workspace> ws = plan.inputs(problem("fp8_tensor"), 1);
  const auto* mla_ws = dynamic_cast<const MlaDecodeWorkspace*>(ws.get());
  ASSERT_NE(mla_ws, nullptr);
  EXPECT_EQ(mla_ws->spec().kv_format, KvFormat::bf16);
  EXPECT_EQ(mla_ws->kv_fp8.data(), nullptr);
  EXPECT_EQ(mla_ws->args().kv_cache.dtype, DType::bf16);
}
#endif

}  // namespace
}  // namespace cutelab::mla
