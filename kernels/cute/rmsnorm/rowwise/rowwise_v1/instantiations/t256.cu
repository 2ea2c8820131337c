#include "cute/rmsnorm/rowwise/rowwise_v1/launch.cuh"

namespace cutelab::rmsnorm::rowwise_v1 {
template PlannedLaunch plan_launch<256, 1, 1>(const Args&);
template PlannedLaunch plan_launch<256, 2, 1>(const Args&);
template PlannedLaunch plan_launch<256, 4, 1>(const Args&);
template PlannedLaunch plan_launch<256, 8, 1>(const Args&);
}  // namespace cutelab::rmsnorm::rowwise_v1
