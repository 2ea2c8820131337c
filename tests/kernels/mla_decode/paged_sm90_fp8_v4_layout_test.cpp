// Host checks of the layout facts paged_sm90_fp8 v4 relies on beyond v2's (those are in
// paged_sm90_fp8_layout_test.cpp and hold for v4's identical layouts): the bf16 RoPE box of a
// staged page, which units of a page each requantising thread rewrites (every unit once, in the
// scale group of its chunk, bank-conflict-free), and the register order of Q's RoPE operand.

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <set>

#include <cute/tensor.hpp>

#include "cute/mla_decode/paged_sm90_fp8/common/swizzle.hpp"
#include "cute/mla_decode/paged_sm90_fp8/paged_sm90_fp8_v4/config.hpp"

namespace cutelab::mla::paged_sm90_fp8_v4 {
namespace {

using namespace cute;
using T = Traits;

// Shared-memory wavefronts of one warp's 16-byte accesses at these byte offsets (a
// 1024-byte-aligned base): a wavefront serves each 16-byte bank slot (4 banks) once.
int wavefronts(const std::array<std::uint32_t, 32>& offsets) {
  std::array<std::set<std::uint32_t>, 8> lines;  // per slot, the distinct 128-byte lines
  for (std::uint32_t off : offsets) lines[(off / 16) % 8].insert(off / 128);
  std::size_t most = 0;
  for (const auto& l : lines) most = std::max(most, l.size());
  return static_cast<int>(most);
}

// TMA's 128-byte swizzle of 128-byte rows (sw128_offset) is what CuTe's bf16 K-major SW128
// layout of the RoPE values reads: element (token, v) at byte sw128_offset(token, 2 v).
TEST(PagedSm90Fp8V4Layout, RopeBoxIsTheBf16Sw128Layout) {
  const typename T::SmemLayoutRope rope;
  EXPECT_EQ(cosize(rope) * 2, T::kRopeBytes);
  // CuTe keeps the swizzle in the pointer, where it acts on byte addresses: on twice the
  // unswizzled layout's element offset.
  EXPECT_EQ(rope.layout_a(), (Swizzle<3, 4, 3>{}));
  for (int t = 0; t < T::kBlockN; ++t)
    for (int v = 0; v < T::kRopeCols; ++v) {
      const auto byte = static_cast<std::uint32_t>(rope.layout_a()(2 * rope.layout_b()(make_coord(t, v))));
      ASSERT_EQ(byte, paged_sm90_fp8::sw128_offset(t, 2 * v)) << "token " << t << " value " << v;
    }
  EXPECT_EQ(T::kRopeOffset % 1024, 0);
}

// Thread (token = t / 2, half = t % 2) of the requantising warpgroup rewrites units
// requant_unit(token, half, g, k), g < 2, k < 8, with the scale of group 2 half + g: each of the
// 2048 latent units of a page exactly once, each inside token's row of that group's chunk (the
// kernel multiplies a whole unit by one scale), at the address the kernel forms.
TEST(PagedSm90Fp8V4Layout, RequantisingThreadsRewriteEveryLatentUnitOnceInItsGroup) {
  std::set<std::uint32_t> seen;
  for (int t = 0; t < 128; ++t) {
    const int token = t / 2, half = t % 2;
    for (int g = 0; g < 2; ++g)
      for (int k = 0; k < 8; ++k) {
        const std::uint32_t off = T::requant_unit(token, half, g, k);
        ASSERT_EQ(off % 16, 0u);
        ASSERT_LT(off, static_cast<std::uint32_t>(T::kRopeOffset));
        EXPECT_EQ(off / T::kLatentChunkBytes, static_cast<std::uint32_t>(2 * half + g)) << "thread " << t;
        EXPECT_EQ((off % T::kLatentChunkBytes) / 128, static_cast<std::uint32_t>(token)) << "thread " << t;
        // The kernel: (row + g x chunk) ^ (k << 4), row = requant_unit(token, half, 0, 0).
        EXPECT_EQ((T::requant_unit(token, half, 0, 0) + g * T::kLatentChunkBytes) ^ (k << 4), off);
        seen.insert(off);
      }
  }
  EXPECT_EQ(seen.size(), static_cast<std::size_t>(T::kRopeOffset / 16));
}

// A warp's 16-byte accesses (32 lanes x 16 bytes) need at least 4 wavefronts: the requantiser's
// latent and RoPE accesses take exactly that many.
TEST(PagedSm90Fp8V4Layout, RequantisingAccessesAreFreeOfBankConflicts) {
  for (int warp = 0; warp < 4; ++warp) {
    for (int g = 0; g < 2; ++g)
      for (int k = 0; k < 8; ++k) {
        std::array<std::uint32_t, 32> offsets{};
        for (int lane = 0; lane < 32; ++lane) {
          const int t = 32 * warp + lane;
          offsets[lane] = T::requant_unit(t / 2, t % 2, g, k);
        }
        EXPECT_EQ(wavefronts(offsets), 4) << "warp " << warp << " g " << g << " k " << k;
      }
    for (int m = 0; m < 4; ++m) {  // RoPE: unit t + 128 m of the 512
      std::array<std::uint32_t, 32> offsets{};
      for (int lane = 0; lane < 32; ++lane)
        offsets[lane] = T::kRopeOffset + (32 * warp + lane + 128 * m) * 16;
      EXPECT_EQ(wavefronts(offsets), 4) << "warp " << warp << " RoPE unit batch " << m;
    }
  }
}

// load_q writes register i of Q's RoPE operand with row r0 + 8 ((i >> 1) & 1), column
// col0 + (i & 1) + 8 (i >> 2), the accumulator's order (paged_sm90::load_q_tile's claim, checked
// here for v4's atom).
TEST(PagedSm90Fp8V4Layout, RopeOperandRegistersFollowTheAccumulatorOrder) {
  typename T::TiledMmaQKRope mma_rope;
  const auto page = Shape<Int<T::kBlockM>, Int<T::kBlockN>>{};
  for (int t = 0; t < 128; ++t) {
    const int lane = t % 32, r0 = (t / 32) * 16 + lane / 4, col0 = 2 * (lane % 4);
    Tensor cQ = make_identity_tensor(page);
    Tensor tQcQ = mma_rope.get_thread_slice(t).partition_A(cQ);  // (MMA,1,4)
    Tensor tSrQRope = make_tensor<typename T::Element>(partition_shape_A(mma_rope, page));
    ASSERT_EQ(size(tSrQRope), 32);
    for (int i = 0; i < 32; ++i) {
      const auto coord = idx2crd(i, shape(tSrQRope));
      ASSERT_EQ(tSrQRope.layout()(coord), i);
      EXPECT_EQ(get<0>(tQcQ(coord)), r0 + 8 * ((i >> 1) & 1)) << "thread " << t << " register " << i;
      EXPECT_EQ(get<1>(tQcQ(coord)), col0 + (i & 1) + 8 * (i >> 2)) << "thread " << t << " register " << i;
    }
  }
}

TEST(PagedSm90Fp8V4Layout, SharedStorageFitsHopper) {
  EXPECT_LE(sizeof(typename T::SharedStorage), 232448u);  // sm_90 opt-in limit per block
  EXPECT_EQ(sizeof(typename T::SharedStorage) % 1024, 0u);
  EXPECT_LE(T::kProducerRegisters + T::kTransposerRegisters + T::kOwnerRegisters, 3 * 168);
}

}  // namespace
}  // namespace cutelab::mla::paged_sm90_fp8_v4
