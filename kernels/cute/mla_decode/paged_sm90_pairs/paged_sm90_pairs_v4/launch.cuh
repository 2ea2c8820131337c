#pragma once
// paged_sm90_pairs v4: the main kernel as the shared Runner launches it.

#include "cute/mla_decode/paged_sm90/common/launch.cuh"
#include "cute/mla_decode/paged_sm90_pairs/paged_sm90_pairs_v4/api.hpp"
#include "cute/mla_decode/paged_sm90_pairs/paged_sm90_pairs_v4/kernel.cuh"

namespace cutelab::mla::paged_sm90_pairs_v4 {

template <class Element, PartialFormat kPartials>
paged_sm90::MainKernel main_kernel() {
  using T = Traits<Element>;
  return paged_sm90::make_main_kernel<T, &paged_sm90_pairs_v4_kernel<T, kPartials>, true>(
      "paged_sm90_pairs_v4", {}, false, kPartials);
}

}  // namespace cutelab::mla::paged_sm90_pairs_v4
