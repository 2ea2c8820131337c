#pragma once
#include <cstdint>
#include <type_traits>

namespace cutelab {

template <class T>
[[nodiscard]] constexpr T ceil_div(T a, T b) {
  static_assert(std::is_integral_v<T>);
  return (a + b - 1) / b;
}

template <class T>
[[nodiscard]] constexpr T round_up(T a, T multiple) {
  return ceil_div(a, multiple) * multiple;
}

[[nodiscard]] inline bool is_aligned(const void* p, std::size_t bytes) {
  return reinterpret_cast<std::uintptr_t>(p) % bytes == 0;
}

}  // namespace cutelab
