#pragma once
// paged_sm90_fp8 v4: v2's operands, page layouts, shared-memory plan and barriers (README.md
// beside this file says what changes): O split unevenly between the warpgroups — warpgroup 0
// (the transposer) multiplies P into O[:, 0:320], warpgroup 1 (the S owner) into O[:, 320:512] —
// so that warpgroup 1 has the registers for two S accumulators and issues S two pages ahead.

#include <cute/arch/mma_sm90.hpp>
#include <cute/atom/mma_traits_sm90_gmma.hpp>
#include <cute/tensor.hpp>

#include "cute/mla_decode/paged_sm90_fp8/paged_sm90_fp8_v2/config.hpp"

namespace cutelab::mla::paged_sm90_fp8_v4 {

struct Traits : paged_sm90_fp8_v2::Traits {
  // O columns per warpgroup: the S owner keeps 96 accumulator registers a thread (two 64 x 64 S
  // accumulators need 64 more), the other 160.
  static constexpr int kVColsOwner = 192;
  static constexpr int kVColsOther = kHeadDimV - kVColsOwner;  // 320, as two n160 wgmma
  static_assert(kVColsOther % 2 == 0 && kVColsOther / 2 % 8 == 0 && kVColsOwner % 8 == 0);

  // V^T (512 dims x 64 token positions, K-major, 64-byte swizzle, dim d at 64 d) read as two
  // row ranges: dims 0..319 by warpgroup 0, 320..511 by warpgroup 1.
  using SmemLayoutVtOther =
      decltype(cute::tile_to_shape(cute::GMMA::Layout_K_SW64_Atom<Code>{},
                                   cute::Shape<cute::Int<kVColsOther>, cute::Int<kBlockN>>{}));
  using SmemLayoutVtOwner =
      decltype(cute::tile_to_shape(cute::GMMA::Layout_K_SW64_Atom<Code>{},
                                   cute::Shape<cute::Int<kVColsOwner>, cute::Int<kBlockN>>{}));
  static constexpr int kVtOwnerOffset = kVColsOther * kBlockN;  // bytes
  static_assert(kVtOwnerOffset % 512 == 0);                    // a whole number of swizzle atoms

  // Both read P from the P tile (shared memory): the S owner's registers go to its second S
  // accumulator instead of an A operand.
  using PVOwnerShape = cute::Shape<cute::Int<kBlockM>, cute::Int<kVColsOwner>, cute::_32>;
  using PVOtherShape = cute::Shape<cute::Int<kBlockM>, cute::Int<kVColsOther / 2>, cute::_32>;
  using TiledMmaPVOwner = decltype(cute::make_tiled_mma(
      cute::SM90::GMMA::ss_op_selector<Code, Code, float, PVOwnerShape, cute::GMMA::Major::K,
                                       cute::GMMA::Major::K>()));
  using TiledMmaPVOther = decltype(cute::make_tiled_mma(
      cute::SM90::GMMA::ss_op_selector<Code, Code, float, PVOtherShape, cute::GMMA::Major::K,
                                       cute::GMMA::Major::K>()));
};
using paged_sm90_fp8_v2::token_at;

}  // namespace cutelab::mla::paged_sm90_fp8_v4
