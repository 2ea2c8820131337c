#pragma once
// paged_sm90_pairs v4's entry points for host code (no CuTe): its main kernel per element type, run
// by paged_sm90::Runner between the split schedule and the combine.

#include "cute/mla_decode/paged_sm90/common/main_kernel.hpp"
#include "cutelab/core/dtype.hpp"

namespace cutelab::mla::paged_sm90_pairs_v4 {

// Defined per element type and partial-row format in instantiations/.
template <class Element, PartialFormat kPartials>
[[nodiscard]] paged_sm90::MainKernel main_kernel();
[[nodiscard]] paged_sm90::MainKernel main_kernel(DType dtype, PartialFormat partials);

}  // namespace cutelab::mla::paged_sm90_pairs_v4
