#pragma once
// paged_sm90_pairs v2: the main kernel as the shared Runner launches it.

#include "cute/mla_decode/paged_sm90/common/launch.cuh"
#include "cute/mla_decode/paged_sm90_pairs/paged_sm90_pairs_v2/api.hpp"
#include "cute/mla_decode/paged_sm90_pairs/paged_sm90_pairs_v2/kernel.cuh"

namespace cutelab::mla::paged_sm90_pairs_v2 {

template <class Element, PartialFormat kPartials>
paged_sm90::MainKernel main_kernel() {
  using T = Traits<Element>;
  return paged_sm90::make_main_kernel<T, &paged_sm90_pairs_v2_kernel<T, kPartials>>("paged_sm90_pairs_v2", {}, false,
                                                                               kPartials);
}

}  // namespace cutelab::mla::paged_sm90_pairs_v2
