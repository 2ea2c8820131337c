#include "cute/mla_decode/paged_sm90_fp8/paged_sm90_fp8_v1/launch.cuh"

namespace cutelab::mla::paged_sm90_fp8_v1 {
template paged_sm90::MainKernel main_kernel<KvFormat::fp8_tensor>();
}  // namespace cutelab::mla::paged_sm90_fp8_v1
