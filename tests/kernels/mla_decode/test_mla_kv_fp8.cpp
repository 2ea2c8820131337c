// FP8 KV-cache formats (issue 11, part 1): quantize_kv writes exactly the bytes the format
// defines into exactly the given slots, dequantize_kv reads them back, checked mode refuses bad
// slots before writing anything.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "cutelab/core/dtype.hpp"
#include "cutelab/core/error.hpp"
#include "cutelab/runtime/tensor.hpp"
#include "mla_decode/common/problem.hpp"
#include "mla_decode/fp8/kv_format.hpp"
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

}  // namespace
}  // namespace cutelab::mla
