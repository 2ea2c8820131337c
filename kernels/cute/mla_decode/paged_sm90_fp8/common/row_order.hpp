#pragma once
// Which of Q's packed rows an accumulator row of an m64 tile holds, host code as well as device
// code (the layout test checks it against CuTe's accumulator layout).

namespace cutelab::mla::paged_sm90_fp8 {

// The packed row (within the M tile) in accumulator row `row`. A thread of an m64 accumulator
// holds rows 16 w + i and 16 w + 8 + i (w its warp, i = lane / 4). Unspread, row r holds packed
// row r: a tile of 16 live rows sits in warp 0 alone, yet every warp runs the softmax on both
// of its rows. Spread, rows 16 w + i hold packed rows 8 w + i and rows 16 w + 8 + i packed rows
// kBlockM / 2 + 8 w + i: packed rows below kBlockM / 2 are every thread's first row, so a tile
// with at most kBlockM / 2 live rows leaves every thread's second row padding.
template <int kBlockM, bool kSpread>
constexpr int packed_row(int row) {
  if constexpr (kSpread)
    return ((row >> 3) & 1) * (kBlockM / 2) + (row >> 4) * 8 + (row & 7);
  else
    return row;
}

// The accumulator row that holds packed row `packed` (the inverse of packed_row).
template <int kBlockM, bool kSpread>
constexpr int accumulator_row(int packed) {
  if constexpr (kSpread)
    return 16 * ((packed % (kBlockM / 2)) / 8) + 8 * (packed / (kBlockM / 2)) + packed % 8;
  else
    return packed;
}

}  // namespace cutelab::mla::paged_sm90_fp8
