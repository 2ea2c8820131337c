#include "cute/mla_decode/paged_sm90_pairs/paged_sm90_pairs_v4/launch.cuh"

namespace cutelab::mla::paged_sm90_pairs_v4 {
template paged_sm90::MainKernel main_kernel<cute::bfloat16_t, PartialFormat::fp32>();
}  // namespace cutelab::mla::paged_sm90_pairs_v4
