#pragma once
// paged_sm90_fp8 v18: the main kernel as the shared Runner launches it.

#include "cute/mla_decode/paged_sm90/common/launch.cuh"
#include "cute/mla_decode/paged_sm90_fp8/paged_sm90_fp8_v18/api.hpp"
#include "cute/mla_decode/paged_sm90_fp8/paged_sm90_fp8_v18/kernel.cuh"

namespace cutelab::mla::paged_sm90_fp8_v18 {

inline paged_sm90::MainKernel make_main_kernel() {
  // The tensor cores read the staged boxes: the swizzled maps (with the scale map, its third).
  return paged_sm90::make_main_kernel<Traits, &paged_sm90_fp8_v18_kernel<Traits>>(
      "paged_sm90_fp8_v18<fp8_token>", KvFormat::fp8_token, /*fp8_swizzled=*/true);
}

}  // namespace cutelab::mla::paged_sm90_fp8_v18
