#pragma once
// paged_sm90_fp8 v1: the main kernel as the shared Runner launches it (both KV maps).

#include "cute/mla_decode/paged_sm90/common/launch.cuh"
#include "cute/mla_decode/paged_sm90_fp8/paged_sm90_fp8_v1/api.hpp"
#include "cute/mla_decode/paged_sm90_fp8/paged_sm90_fp8_v1/kernel.cuh"

namespace cutelab::mla::paged_sm90_fp8_v1 {

template <KvFormat kFormat>
paged_sm90::MainKernel main_kernel() {
  using T = Traits<kFormat>;
  return paged_sm90::make_main_kernel<T, &paged_sm90_fp8_v1_kernel<T>>(
      kFormat == KvFormat::fp8_tensor ? "paged_sm90_fp8_v1<fp8_tensor>" : "paged_sm90_fp8_v1<fp8_token>",
      kFormat);
}

}  // namespace cutelab::mla::paged_sm90_fp8_v1
