#pragma once
// The P tile's stmatrix addressing, host code as well as device code: the layout test (compiled by
// the host compiler) checks it against the CuTe layout.

#include <cute/config.hpp>

namespace cutelab::mla::paged_sm90 {

// stmatrix step j (column groups j and j + 1, j even) of the warp whose 16 accumulator rows start at
// warp_row0: lane l addresses row l % 8 of 8x8 matrix m = l / 8, which is (rows 0-7 or 8-15) x
// (group j or j + 1). The byte offset of that row's 16 bytes in the P tile (K-major, 128-byte
// swizzle from a 1024-byte-aligned base: group g of row r is 16-byte unit g ^ (r % 8)). For even j
// it is the offset of step 0 with bits 5-6 flipped by j (host-tested against the CuTe layout).
CUTE_HOST_DEVICE int p_matrix_row_offset(int warp_row0, int lane, int j) {
  const int m = lane >> 3, row = warp_row0 + ((m & 1) << 3) + (lane & 7);
  return row * 128 + ((((j + (m >> 1)) ^ row) & 7) << 4);
}

}  // namespace cutelab::mla::paged_sm90
