#include "cute/mla_decode/paged_sm90/paged_sm90_v8/api.hpp"

#include <cute/numeric/numeric_types.hpp>

namespace cutelab::mla::paged_sm90_v8 {

paged_sm90::MainKernel main_kernel(DType dtype, PartialFormat partials, int rows) {
  using E = cute::bfloat16_t;
  constexpr PartialFormat kFp32 = PartialFormat::fp32, kOut = PartialFormat::out_dtype;
  if (rows > kMaxRows || dtype != DType::bf16) return {};
  if (rows <= 16) return partials == kOut ? main_kernel<E, kOut, 16>() : main_kernel<E, kFp32, 16>();
  return partials == kOut ? main_kernel<E, kOut, 32>() : main_kernel<E, kFp32, 32>();
}

}  // namespace cutelab::mla::paged_sm90_v8
