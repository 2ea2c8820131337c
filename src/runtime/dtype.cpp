#include "cutelab/core/dtype.hpp"

#include <algorithm>
#include <bit>
#include <cctype>
#include <cmath>
#include <cstring>
#include <limits>

namespace cutelab {
namespace {

template <class T>
T load_raw(const void* data, std::size_t i) noexcept {
  T v;
  std::memcpy(&v, static_cast<const unsigned char*>(data) + i * sizeof(T), sizeof(T));
  return v;
}

template <class T>
void store_raw(void* data, std::size_t i, T v) noexcept {
  std::memcpy(static_cast<unsigned char*>(data) + i * sizeof(T), &v, sizeof(T));
}

// A binary floating format narrower than float: sign, `ebits` exponent, `mbits` mantissa.
struct MiniFloat {
  int ebits;
  int mbits;
  double max_finite;
  bool saturate;         // overflow (and +-Inf) -> +-max_finite, else -> +-Inf
  std::uint32_t inf;     // exponent-all-ones pattern, unused when saturating
  std::uint32_t nan;     // canonical NaN
  std::uint32_t max;     // bits of max_finite
};

constexpr MiniFloat kBf16{8, 7, 3.38953138925153547590470800371487866880e+38, false, 0x7F80, 0x7FC0, 0x7F7F};
constexpr MiniFloat kF16{5, 10, 65504.0, false, 0x7C00, 0x7E00, 0x7BFF};
constexpr MiniFloat kE4m3{4, 3, 448.0, true, 0, 0x7F, 0x7E};
constexpr MiniFloat kE5m2{5, 2, 57344.0, true, 0x7C, 0x7F, 0x7B};

// Round to nearest even, subnormals kept. Works in double, where every step is exact except
// the one nearbyint() performs (the default rounding mode is to nearest, ties to even).
std::uint32_t encode(double v, const MiniFloat& f) noexcept {
  if (std::isnan(v)) return f.nan;
  const std::uint32_t sign = std::signbit(v) ? (1u << (f.ebits + f.mbits)) : 0u;
  const double a = std::fabs(v);
  const std::uint32_t overflow = sign | (f.saturate ? f.max : f.inf);
  if (std::isinf(a)) return overflow;
  if (a == 0) return sign;
  const int bias = (1 << (f.ebits - 1)) - 1;
  int e2 = 0;
  (void)std::frexp(a, &e2);
  int exp = std::max(e2 - 1, 1 - bias);  // a in [2^exp, 2^(exp+1)) unless subnormal
  const double quantum = std::ldexp(1.0, exp - f.mbits);
  double r = std::nearbyint(a / quantum);
  if (r * quantum > f.max_finite) return overflow;
  const double implicit = std::ldexp(1.0, f.mbits);
  if (r >= 2 * implicit) {  // rounded up into the next binade
    r /= 2;
    ++exp;
  }
  if (r < implicit) return sign | static_cast<std::uint32_t>(r);  // subnormal (or zero)
  return sign | (static_cast<std::uint32_t>(exp + bias) << f.mbits) | static_cast<std::uint32_t>(r - implicit);
}

double decode(std::uint32_t bits, const MiniFloat& f, bool has_inf) noexcept {
  const int bias = (1 << (f.ebits - 1)) - 1;
  const std::uint32_t mmask = (1u << f.mbits) - 1;
  const std::uint32_t emask = (1u << f.ebits) - 1;
  const bool negative = (bits >> (f.ebits + f.mbits)) & 1u;
  const std::uint32_t e = (bits >> f.mbits) & emask;
  const std::uint32_t m = bits & mmask;
  double v;
  if (has_inf && e == emask) {
    v = m == 0 ? std::numeric_limits<double>::infinity() : std::numeric_limits<double>::quiet_NaN();
  } else if (!has_inf && e == emask && m == mmask) {  // e4m3: S.1111.111 is the only NaN
    v = std::numeric_limits<double>::quiet_NaN();
  } else if (e == 0) {
    v = std::ldexp(static_cast<double>(m), 1 - bias - f.mbits);
  } else {
    v = std::ldexp(static_cast<double>(m | (1u << f.mbits)), static_cast<int>(e) - bias - f.mbits);
  }
  return negative ? -v : v;
}

template <class Int>
Int saturate_int(double v) noexcept {
  if (std::isnan(v)) return 0;
  const double r = std::nearbyint(v);
  if (r <= static_cast<double>(std::numeric_limits<Int>::min())) return std::numeric_limits<Int>::min();
  if (r >= static_cast<double>(std::numeric_limits<Int>::max())) return std::numeric_limits<Int>::max();
  return static_cast<Int>(r);
}

}  // namespace

std::size_t dtype_size(DType t) noexcept {
  switch (t) {
    case DType::bf16: case DType::f16: return 2;
    case DType::f32: case DType::i32: return 4;
    case DType::f64: case DType::i64: return 8;
    case DType::e4m3: case DType::e5m2: case DType::u8: return 1;
  }
  return 0;
}

std::string_view dtype_name(DType t) noexcept {
  switch (t) {
    case DType::bf16: return "bf16";
    case DType::f16: return "f16";
    case DType::f32: return "f32";
    case DType::f64: return "f64";
    case DType::e4m3: return "e4m3";
    case DType::e5m2: return "e5m2";
    case DType::i32: return "i32";
    case DType::i64: return "i64";
    case DType::u8: return "u8";
  }
  return "?";
}

std::optional<DType> parse_dtype(std::string_view name) noexcept {
  std::string n(name);
  std::transform(n.begin(), n.end(), n.begin(), [](unsigned char c) { return std::tolower(c); });
  struct Alias { const char* name; DType t; };
  static constexpr Alias aliases[] = {
      {"bf16", DType::bf16}, {"bfloat16", DType::bf16},
      {"f16", DType::f16}, {"fp16", DType::f16}, {"half", DType::f16}, {"float16", DType::f16},
      {"f32", DType::f32}, {"fp32", DType::f32}, {"float", DType::f32}, {"float32", DType::f32},
      {"f64", DType::f64}, {"fp64", DType::f64}, {"double", DType::f64}, {"float64", DType::f64},
      {"e4m3", DType::e4m3}, {"fp8", DType::e4m3}, {"fp8_e4m3", DType::e4m3}, {"e4m3fn", DType::e4m3},
      {"e5m2", DType::e5m2}, {"fp8_e5m2", DType::e5m2},
      {"i32", DType::i32}, {"int32", DType::i32},
      {"i64", DType::i64}, {"int64", DType::i64},
      {"u8", DType::u8}, {"uint8", DType::u8},
  };
  for (const Alias& a : aliases)
    if (n == a.name) return a.t;
  return std::nullopt;
}

bool is_floating(DType t) noexcept {
  return t != DType::i32 && t != DType::i64 && t != DType::u8;
}

float bf16_bits_to_float(std::uint16_t bits) noexcept {
  return std::bit_cast<float>(static_cast<std::uint32_t>(bits) << 16);
}

std::uint16_t float_to_bf16_bits(float v) noexcept {
  const std::uint32_t u = std::bit_cast<std::uint32_t>(v);
  if (std::isnan(v)) return static_cast<std::uint16_t>((u >> 16) | 0x0040);  // keep it a (quiet) NaN
  // Adding 0x7FFF plus the lowest kept bit rounds to nearest, ties to even; overflow
  // carries into the exponent and lands on Inf, as it should.
  return static_cast<std::uint16_t>((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}

float f16_bits_to_float(std::uint16_t bits) noexcept { return static_cast<float>(decode(bits, kF16, true)); }
std::uint16_t float_to_f16_bits(float v) noexcept { return static_cast<std::uint16_t>(encode(v, kF16)); }
float e4m3_bits_to_float(std::uint8_t bits) noexcept { return static_cast<float>(decode(bits, kE4m3, false)); }
float e5m2_bits_to_float(std::uint8_t bits) noexcept { return static_cast<float>(decode(bits, kE5m2, true)); }
std::uint8_t float_to_e4m3_bits(float v) noexcept { return static_cast<std::uint8_t>(encode(v, kE4m3)); }
std::uint8_t float_to_e5m2_bits(float v) noexcept { return static_cast<std::uint8_t>(encode(v, kE5m2)); }

double load_as_double(DType t, const void* data, std::size_t i) noexcept {
  switch (t) {
    case DType::bf16: return bf16_bits_to_float(load_raw<std::uint16_t>(data, i));
    case DType::f16: return decode(load_raw<std::uint16_t>(data, i), kF16, true);
    case DType::f32: return load_raw<float>(data, i);
    case DType::f64: return load_raw<double>(data, i);
    case DType::e4m3: return decode(load_raw<std::uint8_t>(data, i), kE4m3, false);
    case DType::e5m2: return decode(load_raw<std::uint8_t>(data, i), kE5m2, true);
    case DType::i32: return load_raw<std::int32_t>(data, i);
    case DType::i64: return static_cast<double>(load_raw<std::int64_t>(data, i));
    case DType::u8: return load_raw<std::uint8_t>(data, i);
  }
  return 0;
}

void store_from_double(DType t, void* data, std::size_t i, double v) noexcept {
  switch (t) {
    // Encoded straight from double: going through float first could round twice.
    case DType::bf16: store_raw(data, i, static_cast<std::uint16_t>(encode(v, kBf16))); break;
    case DType::f16: store_raw(data, i, static_cast<std::uint16_t>(encode(v, kF16))); break;
    case DType::f32: store_raw(data, i, static_cast<float>(v)); break;
    case DType::f64: store_raw(data, i, v); break;
    case DType::e4m3: store_raw(data, i, static_cast<std::uint8_t>(encode(v, kE4m3))); break;
    case DType::e5m2: store_raw(data, i, static_cast<std::uint8_t>(encode(v, kE5m2))); break;
    case DType::i32: store_raw(data, i, saturate_int<std::int32_t>(v)); break;
    case DType::i64: store_raw(data, i, saturate_int<std::int64_t>(v)); break;
    case DType::u8: store_raw(data, i, saturate_int<std::uint8_t>(v)); break;
  }
}

std::uint64_t poison_bits(DType t) noexcept {
  switch (t) {
    case DType::bf16: return 0x7FA5;
    case DType::f16: return 0x7E5A;
    case DType::f32: return 0x7FC5A5A5;
    case DType::f64: return 0x7FF8A5A5A5A5A5A5ull;
    case DType::e4m3: return 0x7F;
    case DType::e5m2: return 0x7F;
    case DType::i32: return 0x7FC5A5A5;
    case DType::i64: return 0x7FF8A5A5A5A5A5A5ull;
    case DType::u8: return 0xA5;
  }
  return 0;
}

bool is_poison(DType t, const void* data, std::size_t i) noexcept {
  const std::uint64_t want = poison_bits(t);
  switch (dtype_size(t)) {
    case 1: return load_raw<std::uint8_t>(data, i) == want;
    case 2: return load_raw<std::uint16_t>(data, i) == want;
    case 4: return load_raw<std::uint32_t>(data, i) == want;
    case 8: return load_raw<std::uint64_t>(data, i) == want;
  }
  return false;
}

}  // namespace cutelab
