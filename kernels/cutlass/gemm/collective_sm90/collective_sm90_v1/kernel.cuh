#pragma once
// cutlass/gemm/collective_sm90/v1 device side: nothing hand-written. The collective builders
// assemble a TMA warp-specialized mainloop (cooperative or ping-pong) and a TMA epilogue with
// the fusion the problem needs; GemmUniversal with the default persistent tile scheduler runs
// them. A row-major, B "column-major" (K x N with K contiguous = our N x K row-major), C and D
// row-major; C is never read (beta = 0).

#include <cute/tensor.hpp>
#include <cutlass/cutlass.h>
#include <cutlass/epilogue/collective/collective_builder.hpp>
#include <cutlass/epilogue/thread/activation.h>
#include <cutlass/gemm/collective/collective_builder.hpp>
#include <cutlass/gemm/device/gemm_universal_adapter.h>
#include <cutlass/gemm/dispatch_policy.hpp>
#include <cutlass/gemm/kernel/gemm_universal.hpp>

#include "cutlass/gemm/collective_sm90/collective_sm90_v1/config.hpp"

namespace cutelab::gemm::collective_sm90_v1 {

template <class V>
struct CutlassGemm {
  using Element = cutlass::bfloat16_t;
  using LayoutA = cutlass::layout::RowMajor;
  using LayoutB = cutlass::layout::ColumnMajor;
  using LayoutC = cutlass::layout::RowMajor;
  static constexpr int kAlign = 16 / sizeof(Element);  // elements per 16-byte access

  using TileShape = cute::Shape<cute::Int<V::BM>, cute::Int<V::BN>, cute::Int<V::BK>>;
  using ClusterShape = cute::Shape<cute::Int<V::CM>, cute::Int<V::CN>, cute::_1>;
  static constexpr bool kCoop = V::kSchedule == Schedule::cooperative;
  using MainloopSchedule = std::conditional_t<kCoop, cutlass::gemm::KernelTmaWarpSpecializedCooperative,
                                              cutlass::gemm::KernelTmaWarpSpecializedPingpong>;
  using EpilogueSchedule = std::conditional_t<kCoop, cutlass::epilogue::TmaWarpSpecializedCooperative,
                                              cutlass::epilogue::TmaWarpSpecialized>;
  using Fusion = std::conditional_t<
      V::kBiasGelu,
      cutlass::epilogue::fusion::LinCombPerColBiasEltAct<cutlass::epilogue::thread::GELU_taylor, Element, float,
                                                         Element, Element>,
      cutlass::epilogue::fusion::LinearCombination<Element, float, Element, float>>;

  using CollectiveEpilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, TileShape, ClusterShape,
      cutlass::epilogue::collective::EpilogueTileAuto, float, float, Element, LayoutC, kAlign, Element, LayoutC, kAlign,
      EpilogueSchedule, Fusion>::CollectiveOp;
  using CollectiveMainloop = typename cutlass::gemm::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, Element, LayoutA, kAlign, Element, LayoutB, kAlign, float,
      TileShape, ClusterShape,
      cutlass::gemm::collective::StageCountAutoCarveout<static_cast<int>(
          sizeof(typename CollectiveEpilogue::SharedStorage))>,
      MainloopSchedule>::CollectiveOp;
  using GemmKernel = cutlass::gemm::kernel::GemmUniversal<cute::Shape<int, int, int, int>, CollectiveMainloop,
                                                          CollectiveEpilogue>;
};

}  // namespace cutelab::gemm::collective_sm90_v1
