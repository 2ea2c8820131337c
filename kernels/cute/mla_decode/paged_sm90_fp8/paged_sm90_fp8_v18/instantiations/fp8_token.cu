#include "cute/mla_decode/paged_sm90_fp8/paged_sm90_fp8_v18/launch.cuh"

namespace cutelab::mla::paged_sm90_fp8_v18 {

paged_sm90::MainKernel main_kernel(DType dtype, KvFormat kv) {
  if (dtype != DType::bf16 || kv != KvFormat::fp8_token) return {};
  return make_main_kernel();
}

}  // namespace cutelab::mla::paged_sm90_fp8_v18
