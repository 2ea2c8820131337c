#include "cute/gemm/wgmma_tma_sm90/wgmma_tma_sm90_v1/launch.cuh"
template cutelab::Kernel cutelab::gemm::wgmma_tma_sm90_v1::build_kernel<cutelab::gemm::wgmma_tma_sm90_v1::Tile128x128>(const cutelab::gemm::GemmOperands&, const cutelab::DeviceInfo&);
