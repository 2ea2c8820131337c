// Host checks of the layout facts paged_sm90_fp8 v2 relies on, computed with CuTe itself: its
// hand-written shared-memory addresses (sw64_offset) and the order in which P's e4m3 codes sit
// in the A operand's registers, in warpgroup 0's P tile and in V^T's token positions; for v9 / v10
// (v3's kernel with their Traits), the spread row order and the Q operand registers.

#include <gtest/gtest.h>

#include <set>
#include <utility>

#include <cute/tensor.hpp>

#include "cute/mla_decode/paged_sm90_fp8/common/row_order.hpp"
#include "cute/mla_decode/paged_sm90_fp8/common/swizzle.hpp"
#include "cute/mla_decode/paged_sm90_fp8/paged_sm90_fp8_v2/config.hpp"

namespace cutelab::mla::paged_sm90_fp8_v2 {
namespace {

using namespace cute;
using T = Traits;

// The byte a layout of 1-byte elements puts coordinate `coord` at: CuTe keeps the swizzle in
// the pointer (layout_a), acting on the byte offset of the unswizzled layout (layout_b).
template <class Layout, class Coord>
std::uint32_t byte_of(const Layout& layout, const Coord& coord) {
  return static_cast<std::uint32_t>(layout.layout_a()(layout.layout_b()(coord)));
}

TEST(PagedSm90Fp8V2Layout, Sw64OffsetIsTheLayoutsSwizzle) {
  EXPECT_EQ(typename T::SmemLayoutLatent{}.layout_a(), (Swizzle<3, 4, 3>{}));
  EXPECT_EQ(typename T::SmemLayoutRope{}.layout_a(), (Swizzle<2, 4, 3>{}));
  const typename T::SmemLayoutLatent latent;
  for (int c = 0; c < T::kLatentChunks; ++c)  // TMA box c of a staged page (and Q's chunk c)
    for (int t = 0; t < T::kBlockN; ++t)
      for (int v = 0; v < T::kLatentChunk; ++v)
        ASSERT_EQ(byte_of(latent, make_coord(t, c * T::kLatentChunk + v)),
                  c * T::kLatentChunkBytes + paged_sm90_fp8::sw128_offset(t, v))
            << "chunk " << c << " token " << t << " byte " << v;
  const typename T::SmemLayoutRope rope;  // the RoPE box, at kRopeOffset
  for (int t = 0; t < T::kBlockN; ++t)
    for (int v = 0; v < T::kRopeBytesPerRow; ++v)
      ASSERT_EQ(byte_of(rope, make_coord(t, v)), paged_sm90_fp8::sw64_offset(t, v));
  const typename T::SmemLayoutVt vt;
  for (int d = 0; d < T::kVColsPerWarpgroup; ++d)
    for (int pos = 0; pos < T::kBlockN; ++pos)
      ASSERT_EQ(byte_of(vt, make_coord(d, pos)), paged_sm90_fp8::sw64_offset(d, pos));
  const typename T::SmemLayoutP pl;
  for (int r = 0; r < T::kBlockM; ++r)
    for (int pos = 0; pos < T::kBlockN; ++pos)
      ASSERT_EQ(byte_of(pl, make_coord(r, pos)), paged_sm90_fp8::sw64_offset(r, pos));
}

TEST(PagedSm90Fp8V2Layout, TokenAtIsAPermutationOfEachGroupOf16) {
  std::set<int> seen;
  for (int pos = 0; pos < T::kBlockN; ++pos) {
    EXPECT_EQ(token_at(pos) / 16, pos / 16);
    seen.insert(token_at(pos));
  }
  EXPECT_EQ(seen.size(), static_cast<std::size_t>(T::kBlockN));
}

// publish_p packs accumulator values j, j + 1, j + 4, j + 5 (j = 2 h + 4 (4 kb + 2 hi)) into
// register 4 kb + 2 hi + h of the A operand and stores the same word at row r0 + 8 h, positions
// 32 kb + 16 hi + 4 (lane % 4) of the P tile. Each byte must land where the RS and SS P V read
// the probability of token token_at(position) of that row.
TEST(PagedSm90Fp8V2Layout, PackedPCodesAreTheOperandsInTokenAtOrder) {
  typename T::TiledMmaQK mma_qk;
  typename T::TiledMmaPVRegisters mma_pv;
  typename T::TiledMmaPVShared mma_pv_smem;
  const auto page = Shape<Int<T::kBlockM>, Int<T::kBlockN>>{};
  for (int t = 0; t < 128; ++t) {
    const int lane = t % 32, r0 = (t / 32) * 16 + lane / 4;
    Tensor cS = make_identity_tensor(page);
    Tensor tScS = mma_qk.get_thread_slice(t).partition_C(cS);  // (MMA,1,1)
    Tensor tOcP = mma_pv.get_thread_slice(t).partition_A(cS);  // (MMA,1,2)
    Tensor tOrP = make_tensor<typename T::Code>(partition_shape_A(mma_pv, page));
    ASSERT_EQ(size(tOrP), 32);
    ASSERT_EQ(size(tScS), 32);
    for (int i = 0; i < 32; ++i) {
      const auto coord = idx2crd(i, shape(tOrP));
      ASSERT_EQ(tOrP.layout()(coord), i);  // flat register byte i
      const int reg = i / 4, b = i % 4;
      const int kb = reg / 4, hi = (reg / 2) % 2, h = reg % 2;
      const int j = 2 * h + 4 * (4 * kb + 2 * hi) + (b & 1) + 4 * (b >> 1);
      const int row = get<0>(tOcP(coord)), pos = get<1>(tOcP(coord));
      EXPECT_EQ(row, get<0>(tScS(j))) << "thread " << t << " byte " << i;
      EXPECT_EQ(token_at(pos), get<1>(tScS(j))) << "thread " << t << " byte " << i;
      EXPECT_EQ(row, r0 + 8 * h);
      EXPECT_EQ(pos, 32 * kb + 16 * hi + 4 * (lane % 4) + b);  // the P tile position it is stored at
    }
    // The SS atom reads its A operand by the same (row, position) coordinates from the P tile.
    Tensor sP =
        make_tensor(make_smem_ptr(static_cast<typename T::Code*>(nullptr)), typename T::SmemLayoutP{});
    EXPECT_EQ(size<2>(mma_pv_smem.get_thread_slice(t).partition_A(sP)), 2);
  }
}

// v9 / v10 (kSpreadRows): the spread order is a permutation of the tile's rows, and by CuTe's
// accumulator layout every thread's first row holds a packed row below kBlockM / 2 (all of them
// between the 128 threads) and its second row that row + kBlockM / 2 (write_piece's row_step).
TEST(PagedSm90Fp8V2Layout, SpreadRowsLeaveEveryThreadsSecondRowToTheUpperHalf) {
  const auto spread = [](int row) { return paged_sm90_fp8::packed_row<T::kBlockM, true>(row); };
  const auto unspread = [](int row) { return paged_sm90_fp8::packed_row<T::kBlockM, false>(row); };
  std::set<int> all;
  for (int r = 0; r < T::kBlockM; ++r) {
    all.insert(spread(r));
    EXPECT_EQ((paged_sm90_fp8::accumulator_row<T::kBlockM, true>(spread(r))), r);
    EXPECT_EQ((paged_sm90_fp8::accumulator_row<T::kBlockM, false>(unspread(r))), r);
  }
  EXPECT_EQ(all.size(), static_cast<std::size_t>(T::kBlockM));
  EXPECT_EQ(*all.rbegin(), T::kBlockM - 1);
  EXPECT_EQ(spread(8) - spread(0), T::kBlockM / 2);  // the row_step v3's kernel passes to write_piece
  typename T::TiledMmaQK mma_qk;
  const auto page = Shape<Int<T::kBlockM>, Int<T::kBlockN>>{};
  std::set<int> first_rows;
  for (int t = 0; t < 128; ++t) {
    Tensor tScS = mma_qk.get_thread_slice(t).partition_C(make_identity_tensor(page));
    int rows[2] = {-1, -1};  // the thread's rows, by the kernel's h = (i >> 1) & 1
    for (int i = 0; i < size(tScS); ++i) {
      const int h = (i >> 1) & 1, row = get<0>(tScS(i));
      if (rows[h] < 0) rows[h] = row;
      ASSERT_EQ(rows[h], row) << "thread " << t << " value " << i;
    }
    const int first = spread(rows[0]), second = spread(rows[1]);
    EXPECT_LT(first, T::kBlockM / 2) << "thread " << t;
    EXPECT_EQ(second, first + T::kBlockM / 2) << "thread " << t;
    first_rows.insert(first);
    EXPECT_EQ(unspread(rows[1]), unspread(rows[0]) + 8);
  }
  EXPECT_EQ(first_rows.size(), static_cast<std::size_t>(T::kBlockM / 2));
}

// v9 / v10 (kQRegisterSteps): read_q_registers copies Q's codes through the RS atom's partition of
// the latent tile into a fragment made from the same atom's A shape; over the 128 threads each
// k-step's partition covers exactly that step's 64 x 32 codes, each once (what the SS step reads).
TEST(PagedSm90Fp8V2Layout, QRegisterStepsCoverTheSsStepsElements) {
  using RsQK = decltype(make_tiled_mma(SM90::GMMA::rs_op_selector<typename T::Code, typename T::Code, float,
                                                                  typename T::QKShape, GMMA::Major::K,
                                                                  GMMA::Major::K>()));
  RsQK mma_rs;
  const auto latent = Shape<Int<T::kBlockM>, Int<T::kHeadDimV>>{};
  constexpr int kSteps = T::kHeadDimV / 32;
  std::set<std::pair<int, int>> seen;
  for (int t = 0; t < 128; ++t) {
    Tensor tc = mma_rs.get_thread_slice(t).partition_A(make_identity_tensor(latent));  // (MMA,1,16)
    ASSERT_EQ(size<2>(tc), kSteps);
    Tensor frag = make_tensor<typename T::Code>(partition_shape_A(mma_rs, Shape<Int<T::kBlockM>, _32>{}));
    ASSERT_EQ(size(frag), size<0>(tc));  // one k-step of the thread's codes
    for (int k = 0; k < kSteps; ++k)
      for (int v = 0; v < size<0>(tc); ++v) {
        const int row = get<0>(tc(v, 0, k)), col = get<1>(tc(v, 0, k));
        EXPECT_EQ(col / 32, k);
        seen.insert({row, col});
      }
  }
  EXPECT_EQ(seen.size(), static_cast<std::size_t>(T::kBlockM * T::kHeadDimV));  // every code once
}

TEST(PagedSm90Fp8V2Layout, SharedStorageFitsHopper) {
  EXPECT_LE(sizeof(typename T::SharedStorage), 232448u);  // sm_90 opt-in limit per block
  EXPECT_EQ(sizeof(typename T::SharedStorage) % 1024, 0u);
}

}  // namespace
}  // namespace cutelab::mla::paged_sm90_fp8_v2
