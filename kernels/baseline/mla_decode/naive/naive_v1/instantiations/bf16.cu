#include "baseline/mla_decode/naive/naive_v1/launch.cuh"

namespace cutelab::mla::naive_v1 {
template struct NaiveLauncher<__nv_bfloat16, 128, 4>;
template struct NaiveLauncher<__nv_bfloat16, 256, 8>;
template struct NaiveLauncher<__nv_bfloat16, 256, 16>;
}  // namespace cutelab::mla::naive_v1
