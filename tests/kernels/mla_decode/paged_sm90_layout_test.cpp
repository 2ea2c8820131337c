// Host checks of the layout facts paged_sm90 v1 and v2 rely on, computed with CuTe itself: they
// cost no GPU time and fail loudly if a CuTe upgrade or a config change breaks an assumption.

#include <gtest/gtest.h>

#include <cute/tensor.hpp>

#include "cute/mla_decode/paged_sm90/common/p_tile.hpp"
#include "cute/mla_decode/paged_sm90/paged_sm90_v1/config.hpp"
#include "cute/mla_decode/paged_sm90/paged_sm90_v2/config.hpp"

namespace cutelab::mla::paged_sm90_v1 {
namespace {

using namespace cute;
using T = Traits<cute::bfloat16_t>;

// The kernel indexes accumulator registers by formula: register i of thread t holds row
// r0 + 8 * ((i >> 1) & 1), column col0 + (i & 1) + 8 * (i >> 2).
TEST(PagedSm90V1Layout, AccumulatorRegisterCoordinates) {
  typename T::TiledMmaQK mma_qk;
  typename T::TiledMmaPV mma_pv;
  for (int t = 0; t < 128; ++t) {
    const int lane = t % 32, warp = t / 32;
    const int r0 = warp * 16 + lane / 4, col0 = 2 * (lane % 4);
    Tensor cS = make_identity_tensor(Shape<Int<T::kBlockM>, Int<T::kBlockN>>{});
    Tensor tScS = mma_qk.get_thread_slice(t).partition_C(cS);  // (MMA,1,1)
    ASSERT_EQ(size(tScS), 32);
    for (int i = 0; i < size(tScS); ++i) {
      EXPECT_EQ(get<0>(tScS(i)), r0 + 8 * ((i >> 1) & 1)) << "thread " << t << " reg " << i;
      EXPECT_EQ(get<1>(tScS(i)), col0 + (i & 1) + 8 * (i >> 2)) << "thread " << t << " reg " << i;
    }
    Tensor cO = make_identity_tensor(Shape<Int<T::kBlockM>, Int<T::kVColsPerWarpgroup>>{});
    Tensor tOcO = mma_pv.get_thread_slice(t).partition_C(cO);  // (MMA,1,1)
    ASSERT_EQ(size(tOcO), 128);
    for (int i = 0; i < size(tOcO); ++i) {
      EXPECT_EQ(get<0>(tOcO(i)), r0 + 8 * ((i >> 1) & 1));
      EXPECT_EQ(get<1>(tOcO(i)), col0 + (i & 1) + 8 * (i >> 2));
    }
  }
}

// P goes from the S accumulator straight into the RS A operand of P V: register i must hold
// the same (row, token) in both.
TEST(PagedSm90V1Layout, AccumulatorOrderIsOperandAOrder) {
  typename T::TiledMmaQK mma_qk;
  typename T::TiledMmaPV mma_pv;
  for (int t = 0; t < 128; ++t) {
    Tensor cS = make_identity_tensor(Shape<Int<T::kBlockM>, Int<T::kBlockN>>{});
    Tensor tScS = mma_qk.get_thread_slice(t).partition_C(cS);  // (MMA,1,1)
    Tensor tOcP = mma_pv.get_thread_slice(t).partition_A(cS);  // (MMA,1,4)
    Tensor tOrP =
        make_tensor<cute::bfloat16_t>(partition_shape_A(mma_pv, Shape<Int<T::kBlockM>, Int<T::kBlockN>>{}));
    ASSERT_EQ(size(tOcP), size(tScS));
    ASSERT_EQ(size(tOrP), size(tScS));
    // The kernel writes tOrP(i) for flat i; the MMA reads tOrP's element at the coordinate
    // whose flat index in tOrP's layout is i, i.e. the coordinate tOcP holds at that position.
    for (int i = 0; i < size(tScS); ++i) {
      const auto coord = idx2crd(i, shape(tOrP));
      EXPECT_EQ(tOrP.layout()(coord), i);
      EXPECT_EQ(tOcP(coord), tScS(i)) << "thread " << t << " reg " << i;
    }
  }
}

// The swizzle of these layouts acts on byte addresses (CuTe moves it into the shared-memory
// pointer), so element positions are compared on the unswizzled part of each layout: the same
// unswizzled offset from a 1024-byte-aligned base is the same physical byte.

// V is read through an MN-major view of the K tile: element (dim d, token t) of warpgroup w's
// half must be the K tile's element (t, 256 w + d).
TEST(PagedSm90V1Layout, VViewIsTransposedKTile) {
  auto k_layout = typename T::SmemLayoutK{}.layout_b();
  auto v_layout = typename T::SmemLayoutV{}.layout_b();
  EXPECT_EQ(typename T::SmemLayoutK{}.layout_a(), typename T::SmemLayoutV{}.layout_a());
  for (int w = 0; w < T::kConsumerWarpgroups; ++w)
    for (int d = 0; d < T::kVColsPerWarpgroup; ++d)
      for (int t = 0; t < T::kBlockN; ++t)
        ASSERT_EQ(w * T::kVHalfOffset + v_layout(d, t), k_layout(t, w * T::kVColsPerWarpgroup + d))
            << "warpgroup " << w << " dim " << d << " token " << t;
}

// TMA with SWIZZLE_128B writes box row t, column v of chunk c at unswizzled element
// c * 4096 + t * 64 + v and swizzles the byte address the same way (16-byte units XOR row % 8).
TEST(PagedSm90V1Layout, KTileChunksMatchTmaBoxes) {
  auto k_layout = typename T::SmemLayoutK{}.layout_b();
  for (int c = 0; c < T::kNumChunks; ++c)
    for (int t = 0; t < T::kBlockN; ++t)
      for (int v = 0; v < T::kChunk; ++v)
        ASSERT_EQ(k_layout(t, c * T::kChunk + v), c * T::kBlockN * T::kChunk + t * T::kChunk + v)
            << "chunk " << c << " token " << t << " column " << v;
  // Swizzle<3,4,3> on bytes: 16-byte units stay whole (the kernel's 16-byte Q stores rely on it).
  EXPECT_EQ(typename T::SmemLayoutK{}.layout_a(), (Swizzle<3, 4, 3>{}));
}

TEST(PagedSm90V1Layout, SharedStorageFitsHopper) {
  EXPECT_LE(sizeof(typename T::SharedStorage), 232448u);  // sm_90 opt-in limit per block
  EXPECT_EQ(sizeof(typename T::SharedStorage) % 1024, 0u);
}

// paged_sm90 v2 keeps v1's K/V tile layouts and adds P tiles (the SS A operand of the other
// warpgroup's P V) written from accumulator registers (stmatrix: PagedSm90PTile below), Q's RoPE
// part in registers, and KV column groups whose V halves are exactly one warpgroup's columns.
TEST(PagedSm90V2Layout, SharedLayoutsAndStorage) {
  using T2 = paged_sm90_v2::Traits<cute::bfloat16_t>;
  EXPECT_LE(sizeof(typename T2::SharedStorage), 232448u);  // sm_90 opt-in limit per block
  auto k1 = typename T::SmemLayoutK{}.layout_b();
  auto k2 = typename T2::SmemLayoutK{}.layout_b();
  auto v2 = typename T2::SmemLayoutV{}.layout_b();
  for (int t = 0; t < T::kBlockN; ++t)
    for (int d = 0; d < T::kHeadDimQK; ++d) ASSERT_EQ(k1(t, d), k2(t, d));
  for (int w = 0; w < T2::kWarpgroups; ++w)
    for (int d = 0; d < T2::kVColsPerWarpgroup; ++d)
      for (int t = 0; t < T2::kBlockN; ++t)
        ASSERT_EQ(w * T2::kVHalfOffset + v2(d, t), k2(t, w * T2::kVColsPerWarpgroup + d));
  // Column group 0 (refilled by warpgroup 0) holds exactly warpgroup 0's V columns; group 1 the rest.
  EXPECT_EQ(T2::group_end(0) * T2::kChunk, T2::kVColsPerWarpgroup);
  EXPECT_EQ(T2::group_begin(1), T2::group_end(0));
  EXPECT_EQ(T2::group_end(1), T2::kNumChunks);
  // P register pairs (columns c, c + 1, c even) are adjacent: one 32-bit stmatrix fragment register.
  auto pl = typename T2::SmemLayoutP{}.layout_b();
  for (int r = 0; r < T2::kBlockM; ++r)
    for (int c = 0; c < T2::kBlockN; c += 2) ASSERT_EQ(pl(r, c + 1), pl(r, c) + 1);
  // The RoPE RS steps and the SS steps accumulate into the same C fragment layout, and the S
  // accumulator order is the local P V's A-operand order.
  typename T2::TiledMmaQK ss;
  typename T2::TiledMmaQKRope rs;
  typename T2::TiledMmaPVRegisters pv;
  Tensor c = make_identity_tensor(Shape<Int<T2::kBlockM>, Int<T2::kBlockN>>{});
  for (int t = 0; t < 128; ++t) {
    Tensor a = ss.get_thread_slice(t).partition_C(c);
    Tensor b = rs.get_thread_slice(t).partition_C(c);
    for (int i = 0; i < size(a); ++i) ASSERT_EQ(a(i), b(i));
    // Q's RoPE operand is loaded by the same formula: register i of the RS A operand holds
    // row r0 + 8 * ((i >> 1) & 1), column col0 + (i & 1) + 8 * (i >> 2).
    Tensor tQcQ = rs.get_thread_slice(t).partition_A(c);  // (MMA,1,4)
    Tensor tQrQ =
        make_tensor<cute::bfloat16_t>(partition_shape_A(rs, Shape<Int<T2::kBlockM>, Int<T2::kBlockN>>{}));
    const int lane = t % 32, r0 = (t / 32) * 16 + lane / 4, col0 = 2 * (lane % 4);
    for (int i = 0; i < size(tQrQ); ++i) {
      const auto coord = idx2crd(i, shape(tQrQ));
      ASSERT_EQ(tQrQ.layout()(coord), i);
      ASSERT_EQ(get<0>(tQcQ(coord)), r0 + 8 * ((i >> 1) & 1)) << "thread " << t << " reg " << i;
      ASSERT_EQ(get<1>(tQcQ(coord)), col0 + (i & 1) + 8 * (i >> 2)) << "thread " << t << " reg " << i;
    }
    Tensor tOcP = pv.get_thread_slice(t).partition_A(c);  // (MMA,1,4)
    Tensor tOrP =
        make_tensor<cute::bfloat16_t>(partition_shape_A(pv, Shape<Int<T2::kBlockM>, Int<T2::kBlockN>>{}));
    for (int i = 0; i < size(a); ++i) {
      const auto coord = idx2crd(i, shape(tOrP));
      ASSERT_EQ(tOrP.layout()(coord), i);
      ASSERT_EQ(tOcP(coord), a(i)) << "thread " << t << " reg " << i;
    }
  }
}

// store_p's stmatrix steps: in step j, lane l addresses row l % 8 of matrix m = l / 8, whose
// fragment (register pair i = 4 (j + m / 2) + 2 (m % 2) of each thread) covers warp rows 8 (m % 2)
// to + 7 and columns 8 (j + m / 2) to + 7; its 16 bytes must be where the CuTe layout (swizzle on
// byte offsets) keeps that row's 8 columns.
TEST(PagedSm90PTile, MatrixStoreRowsAreTheLayoutsRows) {
  using T2 = paged_sm90_v2::Traits<cute::bfloat16_t>;
  auto pl = typename T2::SmemLayoutP{}.layout_b();
  const auto swizzle = typename T2::SmemLayoutP{}.layout_a();
  for (int warp = 0; warp < 4; ++warp)
    for (int lane = 0; lane < 32; ++lane)
      for (int j = 0; j < 8; j += 2) {
        const int m = lane / 8, row = warp * 16 + (m % 2) * 8 + lane % 8, group = j + m / 2;
        const int i = 4 * group + 2 * (m % 2);  // the register pair the kernel puts in matrix m
        ASSERT_EQ((i >> 1) & 1, m % 2);
        ASSERT_EQ(i >> 2, group);
        const int offset = paged_sm90::p_matrix_row_offset(warp * 16, lane, j);
        for (int e = 0; e < 8; ++e)
          ASSERT_EQ(static_cast<int>(swizzle(pl(row, 8 * group + e) * 2)), offset + 2 * e)
              << "warp " << warp << " lane " << lane << " step " << j << " column " << e;
        ASSERT_EQ(offset,
                  paged_sm90::p_matrix_row_offset(warp * 16, lane, 0) ^ (j << 4));  // the kernel's form
      }
}

}  // namespace
}  // namespace cutelab::mla::paged_sm90_v1
