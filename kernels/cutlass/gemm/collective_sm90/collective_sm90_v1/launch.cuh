#pragma once
// cutlass/gemm/collective_sm90/v1 host launcher: CUTLASS arguments -> kernel params (TMA
// descriptors, persistent grid), workspace, and a launch through the lab's launch helper.

#include <cutlass/device_kernel.h>
#include <cutlass/util/packed_stride.hpp>

#include <string>

#include "cutelab/core/math.hpp"
#include "cutelab/runtime/launch.hpp"
#include "cutelab/runtime/tensor.hpp"
#include "cutlass/gemm/collective_sm90/collective_sm90_v1/kernel.cuh"

namespace cutelab::gemm::collective_sm90_v1 {

template <class V>
Kernel build_kernel(const GemmOperands& ops, const Config& c, const DeviceInfo& dev) {
  using G = CutlassGemm<V>;
  using GemmKernel = typename G::GemmKernel;
  using Element = typename G::Element;
  const auto* a = static_cast<const Element*>(ops.a);
  const auto* b = static_cast<const Element*>(ops.b);
  auto* d = static_cast<Element*>(ops.c);

  typename GemmKernel::Arguments args{};
  args.mode = cutlass::gemm::GemmUniversalMode::kGemm;
  args.problem_shape = {ops.m, ops.n, ops.k, 1};
  args.mainloop.ptr_A = a;
  args.mainloop.dA = cutlass::make_cute_packed_stride(typename GemmKernel::StrideA{}, {ops.m, ops.k, 1});
  args.mainloop.ptr_B = b;
  args.mainloop.dB = cutlass::make_cute_packed_stride(typename GemmKernel::StrideB{}, {ops.n, ops.k, 1});
  args.epilogue.ptr_C = d;  // beta = 0: never read
  args.epilogue.dC = cutlass::make_cute_packed_stride(typename GemmKernel::StrideC{}, {ops.m, ops.n, 1});
  args.epilogue.ptr_D = d;
  args.epilogue.dD = cutlass::make_cute_packed_stride(typename GemmKernel::StrideD{}, {ops.m, ops.n, 1});
  args.epilogue.thread.alpha = 1.0f;
  args.epilogue.thread.beta = 0.0f;
  if constexpr (V::kBiasGelu) args.epilogue.thread.bias_ptr = static_cast<const Element*>(ops.bias);
  args.hw_info.device_id = dev.index;
  args.hw_info.sm_count = dev.sm_count;
  args.scheduler.max_swizzle_size = c.swizzle;

  if (!GemmKernel::can_implement(args))
    throw UsageError(concat("collective_sm90/v1 ", V::name(), ": CUTLASS cannot implement m=", ops.m, " n=", ops.n,
                            " k=", ops.k, " (alignment)"));
  auto workspace = std::make_shared<DeviceBuffer>(std::max<std::size_t>(GemmKernel::get_workspace_size(args), 16));
  if (GemmKernel::initialize_workspace(args, workspace->data(), nullptr) != cutlass::Status::kSuccess)
    throw Error(concat("collective_sm90/v1 ", V::name(), ": workspace initialization failed"));
  const typename GemmKernel::Params params = GemmKernel::to_underlying_arguments(args, workspace->data());

  auto* fn = &cutlass::device_kernel<GemmKernel>;
  const std::size_t smem = GemmKernel::SharedStorageSize;
  set_dynamic_smem(fn, smem);
  LaunchShape shape;
  shape.grid = GemmKernel::get_grid_shape(params);
  shape.block = GemmKernel::get_block_shape();
  shape.cluster = dim3(V::CM, V::CN, 1);
  shape.dynamic_smem = smem;

  Kernel k;
  k.launch = [fn, shape, params, workspace](cudaStream_t stream) { launch(fn, shape, stream, params); };
  k.resources.push_back(read_resources(reinterpret_cast<const void*>(fn), "cutlass_gemm<" + V::name() + ">",
                                       int(GemmKernel::MaxThreadsPerBlock), smem));
  return k;
}

}  // namespace cutelab::gemm::collective_sm90_v1
