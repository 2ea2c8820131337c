// Host checks of the layout facts paged_sm90_fp8 v18 relies on (its kernel.cuh names them; v17 relies on
// the same ones at N = 32): P^T's 64-row tile is the 64-byte swizzle sw64_offset writes, the O^T
// accumulator's columns are the packed rows write_piece and rescale_ot_columns read, and V's A fragment
// is filled in the register order load_v writes.

#include <gtest/gtest.h>

#include <set>

#include <cute/tensor.hpp>

#include "cute/mla_decode/paged_sm90_fp8/common/swizzle.hpp"
#include "cute/mla_decode/paged_sm90_fp8/paged_sm90_fp8_v18/config.hpp"

namespace cutelab::mla::paged_sm90_fp8_v18 {
namespace {

using namespace cute;
using T = Traits;
constexpr int kOwnDims = T::kGroupsPerWarpgroup * T::kLatentChunk;  // 256

template <class Layout, class Coord>
std::uint32_t byte_of(const Layout& layout, const Coord& coord) {
  return static_cast<std::uint32_t>(layout.layout_a()(layout.layout_b()(coord)));
}

TEST(PagedSm90Fp8V18Layout, PTransposedIsTheSw64Tile) {
  EXPECT_EQ(typename T::SmemLayoutPT{}.layout_a(), (Swizzle<2, 4, 3>{}));
  const typename T::SmemLayoutPT pt;
  for (int r = 0; r < T::kRows; ++r)
    for (int pos = 0; pos < T::kBlockN; ++pos)
      ASSERT_EQ(byte_of(pt, make_coord(r, pos)), paged_sm90_fp8::sw64_offset(r, pos)) << r << " " << pos;
}

// Value i of M tile mt: dim row 64 mt + 16 warp + lane / 4 + 8 ((i >> 1) & 1), packed row (N)
// 2 (lane % 4) + (i & 1) + 8 (i >> 2).
TEST(PagedSm90Fp8V18Layout, OTransposedAccumulatorColumnsAreThePackedRows) {
  typename T::TiledMmaOT mma;
  for (int t = 0; t < 128; ++t) {
    Tensor c =
        mma.get_thread_slice(t).partition_C(make_identity_tensor(Shape<Int<kOwnDims>, Int<T::kRows>>{}));
    ASSERT_EQ(size<0>(c), 32);
    ASSERT_EQ(size<1>(c), 4);
    const int warp = t / 32, lane = t % 32;
    for (int mt = 0; mt < 4; ++mt)
      for (int i = 0; i < 32; ++i) {
        EXPECT_EQ(get<0>(c(i, mt, 0)), 64 * mt + 16 * warp + lane / 4 + 8 * ((i >> 1) & 1)) << t << " " << i;
        EXPECT_EQ(get<1>(c(i, mt, 0)), 2 * (lane % 4) + (i & 1) + 8 * (i >> 2)) << t << " " << i;
      }
  }
}

// Register r, byte b of (M tile mt, k-step ks): dim row 64 mt + 16 warp + lane / 4 + 8 (r % 2), position
// 32 ks + 16 (r / 2) + 4 (lane % 4) + b; the fragment's registers run r + 4 mt + 16 ks.
TEST(PagedSm90Fp8V18Layout, VFragmentRegisterOrder) {
  typename T::TiledMmaOT mma;
  for (int t = 0; t < 128; ++t) {
    Tensor a =
        mma.get_thread_slice(t).partition_A(make_identity_tensor(Shape<Int<kOwnDims>, Int<T::kBlockN>>{}));
    Tensor frag =
        make_tensor<typename T::Code>(partition_shape_A(mma, Shape<Int<kOwnDims>, Int<T::kBlockN>>{}));
    ASSERT_EQ(size(frag), 128);
    const int warp = t / 32, lane = t % 32;
    for (int mt = 0; mt < 4; ++mt)
      for (int ks = 0; ks < 2; ++ks)
        for (int v = 0; v < 16; ++v) {
          const int r = v / 4, b = v % 4;
          EXPECT_EQ(frag.layout()(v, mt, ks), v + 16 * mt + 64 * ks);  // byte of register r + 4 mt + 16 ks
          EXPECT_EQ(get<0>(a(v, mt, ks)), 64 * mt + 16 * warp + lane / 4 + 8 * (r % 2)) << t;
          EXPECT_EQ(get<1>(a(v, mt, ks)), 32 * ks + 16 * (r / 2) + 4 * (lane % 4) + b) << t;
        }
  }
}

TEST(PagedSm90Fp8V18Layout, SharedStorageFitsHopper) {
  EXPECT_LE(sizeof(typename T::SharedStorage), 232448u);
  EXPECT_EQ(sizeof(typename T::SharedStorage) % 1024, 0u);
  EXPECT_EQ(
      T::kProducerRegisters + T::kTransposerRegisters + (2 * T::kConsumerRegisters - T::kTransposerRegisters),
      3 * 168);  // setmaxnreg's counts fill the launch allocation, no more
}

}  // namespace
}  // namespace cutelab::mla::paged_sm90_fp8_v18
