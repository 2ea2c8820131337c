#pragma once
// paged_sm90_fp8 v13: the main kernel as the shared Runner launches it.

#include "cute/mla_decode/paged_sm90/common/launch.cuh"
#include "cute/mla_decode/paged_sm90_fp8/paged_sm90_fp8_v13/api.hpp"
#include "cute/mla_decode/paged_sm90_fp8/paged_sm90_fp8_v13/kernel.cuh"

namespace cutelab::mla::paged_sm90_fp8_v13 {

inline paged_sm90::MainKernel make_main_kernel() {
  // The tensor cores read the staged boxes: the swizzled maps.
  return paged_sm90::make_main_kernel<Traits, &paged_sm90_fp8_v13_kernel<Traits>>(
      "paged_sm90_fp8_v13<fp8_tensor>", KvFormat::fp8_tensor, /*fp8_swizzled=*/true);
}

}  // namespace cutelab::mla::paged_sm90_fp8_v13
