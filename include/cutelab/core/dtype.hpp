#pragma once
// Element types the runtime moves around without knowing the kernel that uses them.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace cutelab {

enum class DType : std::uint8_t { bf16, f16, f32, f64, e4m3, e5m2, i32, i64, u8 };

[[nodiscard]] std::size_t dtype_size(DType t) noexcept;
[[nodiscard]] std::string_view dtype_name(DType t) noexcept;
[[nodiscard]] std::optional<DType> parse_dtype(std::string_view name) noexcept;
[[nodiscard]] bool is_floating(DType t) noexcept;

// Host conversions used by the checker and the CPU references (round to nearest even).
[[nodiscard]] float bf16_bits_to_float(std::uint16_t bits) noexcept;
[[nodiscard]] std::uint16_t float_to_bf16_bits(float v) noexcept;
[[nodiscard]] float f16_bits_to_float(std::uint16_t bits) noexcept;
[[nodiscard]] std::uint16_t float_to_f16_bits(float v) noexcept;
[[nodiscard]] float e4m3_bits_to_float(std::uint8_t bits) noexcept;
[[nodiscard]] float e5m2_bits_to_float(std::uint8_t bits) noexcept;
// fp8 encodings as the hardware's cvt.rn.satfinite: e4m3 (no Inf) saturates to +-448,
// e5m2 saturates to +-57344; NaN stays NaN.
[[nodiscard]] std::uint8_t float_to_e4m3_bits(float v) noexcept;
[[nodiscard]] std::uint8_t float_to_e5m2_bits(float v) noexcept;

// Decodes element i of a host buffer holding `t` values into a double.
[[nodiscard]] double load_as_double(DType t, const void* data, std::size_t i) noexcept;
// Encodes `v` into element i of a host buffer of `t` values (round to nearest even; integers
// round to nearest and saturate).
void store_from_double(DType t, void* data, std::size_t i, double v) noexcept;

// The NaN pattern written into outputs before a run. A kernel that produces NaN almost
// always produces the canonical pattern, so "still poisoned" and "computed NaN" stay apart
// (except for fp8: e4m3's only NaN is 0x7F, and 0x7F is also e5m2's canonical NaN).
[[nodiscard]] std::uint64_t poison_bits(DType t) noexcept;
[[nodiscard]] bool is_poison(DType t, const void* data, std::size_t i) noexcept;

}  // namespace cutelab
