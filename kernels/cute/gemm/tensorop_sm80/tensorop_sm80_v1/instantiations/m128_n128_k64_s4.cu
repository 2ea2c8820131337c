#include "cute/gemm/tensorop_sm80/tensorop_sm80_v1/launch.cuh"
template cutelab::Kernel cutelab::gemm::tensorop_sm80_v1::build_kernel<cutelab::gemm::tensorop_sm80_v1::Tile128x128>(const cutelab::gemm::GemmOperands&, const cutelab::DeviceInfo&);
