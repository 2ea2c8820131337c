// Split pieces write their partial rows in out's dtype (f16).
#include "cute/mla_decode/paged_sm90_pairs/paged_sm90_pairs_v4/launch.cuh"

namespace cutelab::mla::paged_sm90_pairs_v4 {
template paged_sm90::MainKernel main_kernel<cute::half_t, PartialFormat::out_dtype>();
}  // namespace cutelab::mla::paged_sm90_pairs_v4
