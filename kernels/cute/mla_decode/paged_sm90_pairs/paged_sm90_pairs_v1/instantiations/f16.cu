#include "cute/mla_decode/paged_sm90_pairs/paged_sm90_pairs_v1/launch.cuh"

namespace cutelab::mla::paged_sm90_pairs_v1 {
template paged_sm90::MainKernel main_kernel<cute::half_t>();
}  // namespace cutelab::mla::paged_sm90_pairs_v1
