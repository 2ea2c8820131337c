#include "cute/rmsnorm/rowwise/rowwise_v1/launch.cuh"

namespace cutelab::rmsnorm::rowwise_v1 {
template PlannedLaunch plan_launch<32, 1, 4>(const Args&);
template PlannedLaunch plan_launch<32, 2, 4>(const Args&);
template PlannedLaunch plan_launch<32, 4, 4>(const Args&);
template PlannedLaunch plan_launch<32, 8, 4>(const Args&);
}  // namespace cutelab::rmsnorm::rowwise_v1
