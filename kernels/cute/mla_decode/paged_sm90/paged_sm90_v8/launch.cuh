#pragma once
// paged_sm90 v8: the main kernel as the shared Runner launches it.

#include "cute/mla_decode/paged_sm90/common/launch.cuh"
#include "cute/mla_decode/paged_sm90/paged_sm90_v8/api.hpp"
#include "cute/mla_decode/paged_sm90/paged_sm90_v8/kernel.cuh"

namespace cutelab::mla::paged_sm90_v8 {

template <class Element, PartialFormat kPartials, int kRows>
paged_sm90::MainKernel main_kernel() {
  using T = Traits<Element, kRows>;
  static_assert(sizeof(typename T::SharedStorage) <= 227 * 1024, "an H100 / H200 block's shared memory");
  return paged_sm90::make_main_kernel<T, &paged_sm90_v8_kernel<T, kPartials>, true>(
      kRows == 16 ? "paged_sm90_v8_n16" : "paged_sm90_v8_n32", {}, false, kPartials);
}

}  // namespace cutelab::mla::paged_sm90_v8
