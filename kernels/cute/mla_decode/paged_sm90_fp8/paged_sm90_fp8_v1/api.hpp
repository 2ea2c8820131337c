#pragma once
// paged_sm90_fp8 v1's entry points for host code (no CuTe): its main kernel per KV format, run
// by paged_sm90::Runner between the split schedule and the combine.

#include "cute/mla_decode/paged_sm90/common/main_kernel.hpp"
#include "mla_decode/fp8/kv_format.hpp"

namespace cutelab::mla::paged_sm90_fp8_v1 {

// Defined per format in instantiations/.
template <KvFormat kFormat>
[[nodiscard]] paged_sm90::MainKernel main_kernel();
// fp8_tensor or fp8_token with bf16 q; anything else: a MainKernel without a function.
[[nodiscard]] paged_sm90::MainKernel main_kernel(DType dtype, KvFormat kv);

}  // namespace cutelab::mla::paged_sm90_fp8_v1
