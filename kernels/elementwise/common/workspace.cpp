#include "elementwise/common/workspace.hpp"

#include "cutelab/core/error.hpp"

namespace cutelab::elementwise {

namespace {
TensorView offset_view(const DeviceTensor& buf, std::int64_t n, int misalign_elems) {
  TensorView v = buf.view();
  v.data =
      static_cast<char*>(buf.data()) + static_cast<std::size_t>(misalign_elems) * dtype_size(buf.dtype());
  v.shape = {n};
  v.stride = {1};
  return v;
}
}  // namespace

ElementwiseWorkspace::ElementwiseWorkspace(const ElementwiseProblem& p, std::uint64_t seed,
                                           int misalign_elems)
    : n_(p.n) {
  CUTELAB_REQUIRE(misalign_elems >= 0 && misalign_elems < 8, "misalign_elems must be in [0, 8), got ",
                  misalign_elems);
  x_buf_ = DeviceTensor(p.dtype, {p.n + misalign_elems});
  y_buf_ = DeviceTensor(p.dtype, {p.n + misalign_elems});
  x_ = offset_view(x_buf_, p.n, misalign_elems);
  y_ = offset_view(y_buf_, p.n, misalign_elems);
  fill_normal(x_, seed, 0.0, 2.0);
  fill_poison(y_);
  CUTELAB_CUDA(cudaDeviceSynchronize());
}

std::vector<OutputSpec> ElementwiseWorkspace::outputs() const {
  return {OutputSpec{"y", y_, elementwise_tolerance(y_.dtype)}};
}

}  // namespace cutelab::elementwise
