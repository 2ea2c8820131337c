#pragma once
// paged_sm90_fp8 v12: the main kernel as the shared Runner launches it.

#include "cute/mla_decode/paged_sm90/common/launch.cuh"
#include "cute/mla_decode/paged_sm90_fp8/paged_sm90_fp8_v12/api.hpp"
#include "cute/mla_decode/paged_sm90_fp8/paged_sm90_fp8_v12/kernel.cuh"

namespace cutelab::mla::paged_sm90_fp8_v12 {

inline paged_sm90::MainKernel make_main_kernel() {
  // The tensor cores read the staged boxes: the swizzled maps.
  return paged_sm90::make_main_kernel<Traits, &paged_sm90_fp8_v12_kernel<Traits>>(
      "paged_sm90_fp8_v12<fp8_tensor>", KvFormat::fp8_tensor, /*fp8_swizzled=*/true);
}

}  // namespace cutelab::mla::paged_sm90_fp8_v12
