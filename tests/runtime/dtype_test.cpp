#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "cutelab/core/dtype.hpp"

namespace cutelab {
namespace {

TEST(DType, NamesSizesAndParsing) {
  for (DType t : {DType::bf16, DType::f16, DType::f32, DType::f64, DType::e4m3, DType::e5m2, DType::i32, DType::i64,
                  DType::u8}) {
    const auto parsed = parse_dtype(dtype_name(t));
    ASSERT_TRUE(parsed) << dtype_name(t);
    EXPECT_EQ(*parsed, t);
  }
  EXPECT_EQ(dtype_size(DType::bf16), 2u);
  EXPECT_EQ(dtype_size(DType::e4m3), 1u);
  EXPECT_EQ(dtype_size(DType::f64), 8u);
  EXPECT_EQ(parse_dtype("BFloat16"), DType::bf16);
  EXPECT_EQ(parse_dtype("fp16"), DType::f16);
  EXPECT_FALSE(parse_dtype("bf17"));
  EXPECT_TRUE(is_floating(DType::e5m2));
  EXPECT_FALSE(is_floating(DType::i32));
}

TEST(DType, Bf16RoundTripAndTiesToEven) {
  // Every finite bf16 survives bits -> float -> bits.
  for (std::uint32_t b = 0; b < 0x10000; ++b) {
    const float f = bf16_bits_to_float(static_cast<std::uint16_t>(b));
    if (std::isnan(f)) continue;
    ASSERT_EQ(float_to_bf16_bits(f), b) << std::hex << b;
  }
  // 1 + 2^-8 lies halfway between 1 (even mantissa) and 1 + 2^-7: ties go to 1.
  EXPECT_EQ(float_to_bf16_bits(1.0f + 0x1p-8f), 0x3F80);
  // 1 + 3*2^-8 lies halfway between 1+2^-7 (odd) and 1+2^-6 (even): goes up.
  EXPECT_EQ(float_to_bf16_bits(1.0f + 3 * 0x1p-8f), 0x3F82);
  // Just above the halfway point rounds up.
  EXPECT_EQ(float_to_bf16_bits(1.0f + 0x1p-8f + 0x1p-20f), 0x3F81);
  EXPECT_EQ(float_to_bf16_bits(-2.0f), 0xC000);
  EXPECT_EQ(float_to_bf16_bits(std::numeric_limits<float>::infinity()), 0x7F80);
  EXPECT_TRUE(std::isnan(bf16_bits_to_float(float_to_bf16_bits(std::nanf("")))));
  // The largest float rounds past bf16's largest finite value to Inf.
  EXPECT_EQ(float_to_bf16_bits(std::numeric_limits<float>::max()), 0x7F80);
}

TEST(DType, F16RoundTripSubnormalsAndTies) {
  for (std::uint32_t b = 0; b < 0x10000; ++b) {
    const float f = f16_bits_to_float(static_cast<std::uint16_t>(b));
    if (std::isnan(f)) continue;
    ASSERT_EQ(float_to_f16_bits(f), b) << std::hex << b;
  }
  EXPECT_EQ(f16_bits_to_float(0x3C00), 1.0f);
  EXPECT_EQ(f16_bits_to_float(0x0001), 0x1p-24f);  // smallest subnormal
  EXPECT_EQ(f16_bits_to_float(0x7BFF), 65504.0f);
  EXPECT_EQ(float_to_f16_bits(1.0f + 0x1p-11f), 0x3C00);          // tie -> even (down)
  EXPECT_EQ(float_to_f16_bits(1.0f + 3 * 0x1p-11f), 0x3C02);      // tie -> even (up)
  EXPECT_EQ(float_to_f16_bits(0x1p-25f), 0x0000);                 // half the smallest subnormal: tie to 0
  EXPECT_EQ(float_to_f16_bits(3 * 0x1p-25f), 0x0002);             // 1.5 subnormal quanta: tie to 2
  EXPECT_EQ(float_to_f16_bits(65519.0f), 0x7BFF);                 // below the halfway point to 65536
  EXPECT_EQ(float_to_f16_bits(65520.0f), 0x7C00);                 // the tie rounds to even = Inf
  EXPECT_EQ(float_to_f16_bits(-0.0f), 0x8000);
}

TEST(DType, Fp8DecodeEncode) {
  EXPECT_EQ(e4m3_bits_to_float(0x38), 1.0f);
  EXPECT_EQ(e4m3_bits_to_float(0x7E), 448.0f);
  EXPECT_EQ(e4m3_bits_to_float(0x01), 0x1p-9f);
  EXPECT_TRUE(std::isnan(e4m3_bits_to_float(0x7F)));
  EXPECT_TRUE(std::isnan(e4m3_bits_to_float(0xFF)));
  EXPECT_EQ(e5m2_bits_to_float(0x3C), 1.0f);
  EXPECT_EQ(e5m2_bits_to_float(0x7B), 57344.0f);
  EXPECT_TRUE(std::isinf(e5m2_bits_to_float(0x7C)));
  EXPECT_TRUE(std::isnan(e5m2_bits_to_float(0x7F)));
  for (std::uint32_t b = 0; b < 0x100; ++b) {
    const float a = e4m3_bits_to_float(static_cast<std::uint8_t>(b));
    if (!std::isnan(a)) EXPECT_EQ(float_to_e4m3_bits(a), b) << std::hex << b;
    const float c = e5m2_bits_to_float(static_cast<std::uint8_t>(b));
    if (std::isfinite(c)) EXPECT_EQ(float_to_e5m2_bits(c), b) << std::hex << b;
  }
  EXPECT_EQ(float_to_e4m3_bits(1.0f + 0x1p-4f), 0x38);   // tie -> even
  EXPECT_EQ(float_to_e4m3_bits(1000.0f), 0x7E);          // saturates to 448
  EXPECT_EQ(float_to_e4m3_bits(-1000.0f), 0xFE);
  EXPECT_EQ(float_to_e5m2_bits(1e6f), 0x7B);             // saturates to 57344
  EXPECT_EQ(float_to_e4m3_bits(std::nanf("")), 0x7F);
}

TEST(DType, PoisonPatternsAreDetected) {
  for (DType t : {DType::bf16, DType::f16, DType::f32, DType::f64, DType::e4m3, DType::e5m2, DType::i32, DType::i64,
                  DType::u8}) {
    unsigned char buf[3 * 8] = {};
    const std::uint64_t bits = poison_bits(t);
    std::memcpy(buf + dtype_size(t), &bits, dtype_size(t));  // element 1 poisoned (little endian)
    EXPECT_FALSE(is_poison(t, buf, 0)) << dtype_name(t);
    EXPECT_TRUE(is_poison(t, buf, 1)) << dtype_name(t);
    EXPECT_FALSE(is_poison(t, buf, 2)) << dtype_name(t);
    if (is_floating(t)) EXPECT_TRUE(std::isnan(load_as_double(t, buf, 1))) << dtype_name(t);
  }
  // A NaN a kernel computes is not the poison pattern (fp8 excepted, see dtype.hpp).
  const std::uint16_t computed = float_to_bf16_bits(std::nanf(""));
  EXPECT_FALSE(is_poison(DType::bf16, &computed, 0));
  const std::uint16_t half_nan = float_to_f16_bits(std::nanf(""));
  EXPECT_FALSE(is_poison(DType::f16, &half_nan, 0));
  EXPECT_EQ(poison_bits(DType::bf16), 0x7FA5u);
  EXPECT_EQ(poison_bits(DType::f32), 0x7FC5A5A5u);
}

TEST(DType, StoreAndLoadThroughDouble) {
  unsigned char buf[8 * 4] = {};
  store_from_double(DType::bf16, buf, 1, 3.140625);
  EXPECT_EQ(load_as_double(DType::bf16, buf, 1), 3.140625);
  store_from_double(DType::i32, buf, 2, -7.6);
  EXPECT_EQ(load_as_double(DType::i32, buf, 2), -8.0);
  store_from_double(DType::u8, buf, 3, 300.0);
  EXPECT_EQ(load_as_double(DType::u8, buf, 3), 255.0);
  store_from_double(DType::e4m3, buf, 0, 0.5);
  EXPECT_EQ(load_as_double(DType::e4m3, buf, 0), 0.5);
  // Directly from double: 1 + 2^-8 + 2^-40 is above the tie, so it must round up (a float
  // detour would drop 2^-40 and tie down to 1).
  store_from_double(DType::bf16, buf, 0, 1.0 + 0x1p-8 + 0x1p-40);
  EXPECT_EQ(load_as_double(DType::bf16, buf, 0), 1.0 + 0x1p-7);
}

}  // namespace
}  // namespace cutelab
