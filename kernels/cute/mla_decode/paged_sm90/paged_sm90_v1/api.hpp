#pragma once
// paged_sm90 v1's entry points for host code (no CuTe): its main kernel per element type, run
// by paged_sm90::Runner between the split schedule and the combine.

#include "cute/mla_decode/paged_sm90/common/main_kernel.hpp"
#include "cutelab/core/dtype.hpp"

namespace cutelab::mla::paged_sm90_v1 {

// Defined per element type in instantiations/.
template <class Element>
[[nodiscard]] paged_sm90::MainKernel main_kernel();
[[nodiscard]] paged_sm90::MainKernel main_kernel(DType dtype);

}  // namespace cutelab::mla::paged_sm90_v1
