#include "cute/mla_decode/paged_sm90/paged_sm90_v8/api.hpp"

#include <cute/numeric/numeric_types.hpp>

namespace cutelab::mla::paged_sm90_v8 {
namespace {

template <class Element>
paged_sm90::MainKernel of_element(PartialFormat partials, int rows) {
  constexpr PartialFormat kFp32 = PartialFormat::fp32, kOut = PartialFormat::out_dtype;
  if (rows <= 16)
    return partials == kOut ? main_kernel<Element, kOut, 16>() : main_kernel<Element, kFp32, 16>();
  return partials == kOut ? main_kernel<Element, kOut, 32>() : main_kernel<Element, kFp32, 32>();
}

}  // namespace

paged_sm90::MainKernel main_kernel(DType dtype, PartialFormat partials, int rows) {
  if (rows > kMaxRows || dtype != DType::bf16) return {};
  return of_element<cute::bfloat16_t>(partials, rows);
}

}  // namespace cutelab::mla::paged_sm90_v8
