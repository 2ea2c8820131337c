#include "cute/mla_decode/paged_sm90_pairs/paged_sm90_pairs_v4/api.hpp"

#include <cute/numeric/numeric_types.hpp>

namespace cutelab::mla::paged_sm90_pairs_v4 {

paged_sm90::MainKernel main_kernel(DType dtype, PartialFormat partials) {
  constexpr PartialFormat kFp32 = PartialFormat::fp32, kOut = PartialFormat::out_dtype;
  if (dtype == DType::f16)
    return partials == kOut ? main_kernel<cute::half_t, kOut>() : main_kernel<cute::half_t, kFp32>();
  return partials == kOut ? main_kernel<cute::bfloat16_t, kOut>() : main_kernel<cute::bfloat16_t, kFp32>();
}

}  // namespace cutelab::mla::paged_sm90_pairs_v4
