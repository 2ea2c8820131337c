#include "cute/elementwise/gelu_affine/gelu_affine_v1/launch.cuh"

namespace cutelab::elementwise::gelu_affine_v1 {
template PlannedLaunch plan_launch<512, 1>(const Args&, GridMode, const DeviceInfo&);
template PlannedLaunch plan_launch<512, 2>(const Args&, GridMode, const DeviceInfo&);
template PlannedLaunch plan_launch<512, 4>(const Args&, GridMode, const DeviceInfo&);
}  // namespace cutelab::elementwise::gelu_affine_v1
