#pragma once
// Byte offsets in the FP8 designs' swizzled shared-memory tiles, host code as well as device code:
// the layout tests (compiled by the host compiler) check them against the CuTe layouts.

#include <cstdint>

#include <cute/config.hpp>

namespace cutelab::mla::paged_sm90_fp8 {

// Byte offset of (row, byte) in a K-major tile of 64-byte rows with the 64-byte swizzle
// (cute Swizzle<2,4,3>, TMA's SWIZZLE_64B): the 16-byte unit index (bits 4-5) is XORed with
// bits 7-8, i.e. with (row / 2) % 4. Host-tested against the CuTe layouts of the designs.
CUTE_HOST_DEVICE constexpr std::uint32_t sw64_offset(std::uint32_t row, std::uint32_t byte) {
  const std::uint32_t off = row * 64 + byte;
  return off ^ (((off >> 7) & 3u) << 4);
}

// The same for 128-byte rows with the 128-byte swizzle (Swizzle<3,4,3>, SWIZZLE_128B): the unit
// index (bits 4-6) XOR row % 8.
CUTE_HOST_DEVICE constexpr std::uint32_t sw128_offset(std::uint32_t row, std::uint32_t byte) {
  const std::uint32_t off = row * 128 + byte;
  return off ^ (((off >> 7) & 7u) << 4);
}

}  // namespace cutelab::mla::paged_sm90_fp8
