#include "cutlass/gemm/collective_sm90/collective_sm90_v1/launch.cuh"
template cutelab::Kernel cutelab::gemm::collective_sm90_v1::build_kernel<cutelab::gemm::collective_sm90_v1::PingM128N128C1>(const cutelab::gemm::GemmOperands&, const cutelab::gemm::collective_sm90_v1::Config&, const cutelab::DeviceInfo&);
