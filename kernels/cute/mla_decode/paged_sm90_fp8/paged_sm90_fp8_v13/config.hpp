#pragma once
// paged_sm90_fp8 v13: up to 32 query rows a KV head. Warpgroup 1 owns S and the softmax as in v12
// (Q's rows spread, Q's last k-steps in registers, the part's first request guessed) and multiplies
// nothing; warpgroup 0 multiplies all of P V as O^T = V^T P^T: the M tiles are V's 512 dims, read
// from the staged page straight into its A registers, and N is the tile's 32 live rows, P^T being
// the owner's P codes stored K-major (README.md beside this file says why).

#include <cute/arch/mma_sm90.hpp>
#include <cute/atom/mma_traits_sm90_gmma.hpp>
#include <cute/tensor.hpp>

#include "cute/mla_decode/paged_sm90_fp8/paged_sm90_fp8_v12/config.hpp"

namespace cutelab::mla::paged_sm90_fp8_v13 {

struct Traits : paged_sm90_fp8_v12::Traits {
  static constexpr int kRows = kBlockM / 2;  // O^T's N: the live rows of a spread tile
  static_assert(kSpreadRows, "the live rows are every accumulator thread's first row");

  // O^T = V^T P^T: A = V^T from registers (M = 64 dims a tile, K = 32 positions a step), B = P^T
  // (N = kRows packed rows, K-major: a row's 64 position bytes, 64-byte swizzle).
  using OTShape = cute::Shape<cute::Int<kBlockM>, cute::Int<kRows>, cute::_32>;
  using TiledMmaOT = decltype(cute::make_tiled_mma(
      cute::SM90::GMMA::rs_op_selector<Code, Code, float, OTShape, cute::GMMA::Major::K,
                                       cute::GMMA::Major::K>()));
  using SmemLayoutPT = decltype(cute::tile_to_shape(cute::GMMA::Layout_K_SW64_Atom<Code>{},
                                                    cute::Shape<cute::Int<kRows>, cute::Int<kBlockN>>{}));
  static_assert(cute::cosize_v<SmemLayoutPT> <= kBlockM * kBlockN, "P^T fits a P buffer");
};

}  // namespace cutelab::mla::paged_sm90_fp8_v13
