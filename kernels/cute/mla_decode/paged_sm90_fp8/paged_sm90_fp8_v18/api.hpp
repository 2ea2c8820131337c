#pragma once
// paged_sm90_fp8 v18's entry point for host code (no CuTe): its main kernel, run by
// paged_sm90::Runner between the split schedule and the combine.

#include "cute/mla_decode/paged_sm90/common/main_kernel.hpp"
#include "mla_decode/fp8/kv_format.hpp"

namespace cutelab::mla::paged_sm90_fp8_v18 {

// fp8_token with bf16 q (instantiations/fp8_token.cu); anything else: a MainKernel without a
// function.
[[nodiscard]] paged_sm90::MainKernel main_kernel(DType dtype, KvFormat kv);

}  // namespace cutelab::mla::paged_sm90_fp8_v18
