#include "cute/gemm/wgmma_tma_sm90/wgmma_tma_sm90_v3/launch.cuh"
template cutelab::Kernel cutelab::gemm::wgmma_tma_sm90_v3::build_kernel<cutelab::gemm::wgmma_tma_sm90_v3::Tile128x256C2x1>(const cutelab::gemm::GemmOperands&, const cutelab::gemm::wgmma_tma_sm90_v3::Config&, const cutelab::DeviceInfo&);
