#include "cute/elementwise/gelu_affine/gelu_affine_v1/launch.cuh"

namespace cutelab::elementwise::gelu_affine_v1 {
template PlannedLaunch plan_launch<256, 1>(const Args&, GridMode, const DeviceInfo&);
template PlannedLaunch plan_launch<256, 2>(const Args&, GridMode, const DeviceInfo&);
template PlannedLaunch plan_launch<256, 4>(const Args&, GridMode, const DeviceInfo&);
}  // namespace cutelab::elementwise::gelu_affine_v1
