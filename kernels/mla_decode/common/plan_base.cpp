#include "mla_decode/common/plan_base.hpp"

#include "cutelab/runtime/tensor.hpp"
#include "mla_decode/reference/reference.hpp"

namespace cutelab::mla {

MlaDecodeCase problem_case(const MlaDecodeProblem& p) { return MlaDecodeCase::from_problem(p, kLengthSeed); }

Cost problem_cost(const MlaDecodeProblem& p) {
  const MlaDecodeCase c = problem_case(p);
  return {.flops = mla_flops(c), .bytes = mla_bytes(c)};
}

std::vector<std::vector<float>> reference_outputs(const MlaDecodeWorkspace& ws, cudaStream_t stream) {
  DeviceTensor out(DType::f32, ws.out.shape());
  DeviceTensor lse(DType::f32, ws.lse.shape());
  reference_gpu(ws.args(), out.as<float>(), lse.as<float>(), stream);
  CUTELAB_CUDA_LAUNCH();
  CUTELAB_CUDA(cudaStreamSynchronize(stream));
  return {copy_to_host<float>(out.view()), copy_to_host<float>(lse.view())};
}

MlaDecodeDims checked_dims(const MlaDecodeWorkspace& ws, cudaStream_t stream, KvFormats formats) {
  return validate_args(ws.args(), /*checked=*/true, stream, formats);
}

}  // namespace cutelab::mla
