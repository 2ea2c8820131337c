#include "cute/mla_decode/paged_sm90/paged_sm90_v4/api.hpp"

#include <cute/numeric/numeric_types.hpp>

namespace cutelab::mla::paged_sm90_v4 {

paged_sm90::MainKernel main_kernel(DType dtype) {
  return dtype == DType::f16 ? main_kernel<cute::half_t>() : main_kernel<cute::bfloat16_t>();
}

}  // namespace cutelab::mla::paged_sm90_v4
