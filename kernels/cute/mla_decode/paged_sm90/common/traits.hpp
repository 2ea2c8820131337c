#pragma once
// What the paged_sm90 versions' Traits share: TileConstants (page, tile and chunk shapes; V split
// in two halves, one per warpgroup that multiplies P V), TraitsTypes (the K tile and the V view
// of it, the Q K^T atom) and, for the two-warpgroup designs, TwoWarpgroupTypes (Q latent tile, P
// tile, RS/SS atoms). Each version derives from them and adds its CTA shape (threads, stages,
// registers), SharedStorage and barriers.

#include <cstdint>

#include <cute/tensor.hpp>
#include <cute/arch/mma_sm90.hpp>
#include <cute/atom/mma_traits_sm90_gmma.hpp>

#include "cute/mla_decode/paged_sm90/common/main_kernel.hpp"
#include "mla_decode/common/problem.hpp"

namespace cutelab::mla::paged_sm90 {

// Independent of the element type, so a derived class template finds these names unqualified.
struct TileConstants {
  static constexpr int kBlockM = 64;                   // packed query rows per CTA
  static constexpr int kBlockN = kPageSize;            // tokens per KV tile = one page
  static constexpr int kHeadDimQK = mla::kHeadDimQK;
  static constexpr int kHeadDimV = mla::kHeadDimV;
  static constexpr int kChunk = 64;                    // TMA box width: one 128-byte swizzle row
  static constexpr int kNumChunks = kHeadDimQK / kChunk;
  static constexpr int kVColsPerWarpgroup = kHeadDimV / 2;  // O and V split between two warpgroups
  static constexpr int kTileElements = kBlockN * kHeadDimQK;
  static constexpr int kVHalfOffset = kVColsPerWarpgroup / kChunk * kBlockN * kChunk;  // elements

  static_assert(kBlockM == paged_sm90::kBlockM);
  static_assert(kHeadDimQK % kChunk == 0 && kVColsPerWarpgroup % kChunk == 0);
};

template <class Element>
struct TraitsTypes {
  using C = TileConstants;
  static constexpr std::uint32_t kTileBytes = C::kTileElements * sizeof(Element);
  static_assert(C::kChunk * sizeof(Element) == 128, "one TMA box row must be one 128-byte swizzle row");

  // K tile: K-major (head dim contiguous), 128-byte swizzle; tiling the 8x64 atom down the rows
  // first puts each 64-column chunk in its own contiguous 8 KiB, which is exactly what one TMA
  // box of 64 tokens x 64 columns writes.
  using SmemLayoutK = decltype(cute::tile_to_shape(cute::GMMA::Layout_K_SW128_Atom<Element>{},
                                                   cute::Shape<cute::Int<C::kBlockN>, cute::Int<C::kHeadDimQK>>{}));
  // One warpgroup's V half, (dims, tokens), MN-major over the same bytes: tile along the tokens
  // first (Step<_2,_1>) so chunk c of 64 dims lands where the K layout keeps it.
  using SmemLayoutV = decltype(cute::tile_to_shape(
      cute::GMMA::Layout_MN_SW128_Atom<Element>{},
      cute::Shape<cute::Int<C::kVColsPerWarpgroup>, cute::Int<C::kBlockN>>{}, cute::Step<cute::_2, cute::_1>{}));

  using QKShape = cute::Shape<cute::Int<C::kBlockM>, cute::Int<C::kBlockN>, cute::_16>;
  using PVShape = cute::Shape<cute::Int<C::kBlockM>, cute::Int<C::kVColsPerWarpgroup>, cute::_16>;
  using TiledMmaQK = decltype(cute::make_tiled_mma(
      cute::SM90::GMMA::ss_op_selector<Element, Element, float, QKShape, cute::GMMA::Major::K, cute::GMMA::Major::K>()));
};

// What the two-warpgroup designs (v2, v3, paged_sm90_fp8) add: Q's latent columns in shared memory
// (its RoPE columns live in registers: the RS Q K^T atom), P published in shared memory, and the P V
// atoms with P from registers (the S owner) or from shared memory (the other warpgroup).
template <class Element, class C = TileConstants, class Types = TraitsTypes<Element>>
struct TwoWarpgroupTypes {
  using SmemLayoutQ =
      decltype(cute::tile_to_shape(cute::GMMA::Layout_K_SW128_Atom<Element>{},
                                   cute::Shape<cute::Int<C::kBlockM>, cute::Int<C::kHeadDimV>>{}));
  // P of one page: (rows, tokens), K-major: the A operand of the other warpgroup's P V.
  using SmemLayoutP =
      decltype(cute::tile_to_shape(cute::GMMA::Layout_K_SW128_Atom<Element>{},
                                   cute::Shape<cute::Int<C::kBlockM>, cute::Int<C::kBlockN>>{}));
  using TiledMmaQKRope = decltype(cute::make_tiled_mma(
      cute::SM90::GMMA::rs_op_selector<Element, Element, float, typename Types::QKShape, cute::GMMA::Major::K,
                                       cute::GMMA::Major::K>()));
  using TiledMmaPVRegisters = decltype(cute::make_tiled_mma(
      cute::SM90::GMMA::rs_op_selector<Element, Element, float, typename Types::PVShape, cute::GMMA::Major::K,
                                       cute::GMMA::Major::MN>()));
  using TiledMmaPVShared = decltype(cute::make_tiled_mma(
      cute::SM90::GMMA::ss_op_selector<Element, Element, float, typename Types::PVShape, cute::GMMA::Major::K,
                                       cute::GMMA::Major::MN>()));
};

}  // namespace cutelab::mla::paged_sm90
