#include "cute/mla_decode/paged_sm90_fp8/paged_sm90_fp8_v1/api.hpp"

namespace cutelab::mla::paged_sm90_fp8_v1 {

paged_sm90::MainKernel main_kernel(DType dtype, KvFormat kv) {
  if (dtype != DType::bf16) return {};
  if (kv == KvFormat::fp8_tensor) return main_kernel<KvFormat::fp8_tensor>();
  if (kv == KvFormat::fp8_token) return main_kernel<KvFormat::fp8_token>();
  return {};
}

}  // namespace cutelab::mla::paged_sm90_fp8_v1
