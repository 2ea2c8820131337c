#pragma once
// The token order of P in an e4m3 A fragment, host code as well as device code: the FP8 designs'
// configs (compiled by the host compiler in their plans) name it.

namespace cutelab::mla::paged_sm90_fp8 {

// The token whose probability sits at position `pos` of a 16-position group of the P operand:
// an e4m3 A fragment holds 4 consecutive k per register (k = 4 (lane % 4) + byte, + 16 for the
// upper registers), the fp32 accumulator holds column pairs 2 (lane % 4) + {0, 1} every 8
// columns. Packing the accumulator's values in place gives positions 4q + b the tokens
// 2q + (b & 1) + 8 (b >> 1): bits (b0, q0, q1, b1) of the position are bits (0, 1, 2, 3) of the token.
constexpr int token_at(int pos) {
  return (pos & ~15) | (pos & 1) | (((pos >> 2) & 3) << 1) | (((pos >> 1) & 1) << 3);
}

}  // namespace cutelab::mla::paged_sm90_fp8
