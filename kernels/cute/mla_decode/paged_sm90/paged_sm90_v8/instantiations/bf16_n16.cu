#include "cute/mla_decode/paged_sm90/paged_sm90_v8/launch.cuh"

namespace cutelab::mla::paged_sm90_v8 {
template paged_sm90::MainKernel main_kernel<cute::bfloat16_t, PartialFormat::fp32, 16>();
}  // namespace cutelab::mla::paged_sm90_v8
