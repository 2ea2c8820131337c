#include "cute/gemm/wgmma_tma_sm90/wgmma_tma_sm90_v2/launch.cuh"
template cutelab::Kernel cutelab::gemm::wgmma_tma_sm90_v2::build_kernel<cutelab::gemm::wgmma_tma_sm90_v2::Tile128x128>(const cutelab::gemm::GemmOperands&, const cutelab::gemm::wgmma_tma_sm90_v2::Config&, const cutelab::DeviceInfo&);
