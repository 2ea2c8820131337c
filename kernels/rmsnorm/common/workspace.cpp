#include "rmsnorm/common/workspace.hpp"

#include "cutelab/core/error.hpp"

namespace cutelab::rmsnorm {

namespace {
TensorView offset_view(const DeviceTensor& buf, std::vector<std::int64_t> shape, int misalign_elems) {
  TensorView v = buf.view();
  v.data =
      static_cast<char*>(buf.data()) + static_cast<std::size_t>(misalign_elems) * dtype_size(buf.dtype());
  v.stride = contiguous_strides(shape);
  v.shape = std::move(shape);
  return v;
}
// Decorrelates the streams of x and w drawn from one seed.
constexpr std::uint64_t kWeightSeedSalt = 0x9E3779B97F4A7C15ull;
}  // namespace

RmsNormWorkspace::RmsNormWorkspace(const RmsNormProblem& p, std::uint64_t seed, int misalign_elems)
    : rows_(p.rows), cols_(p.cols) {
  CUTELAB_REQUIRE(misalign_elems >= 0 && misalign_elems < 8, "misalign_elems must be in [0, 8), got ",
                  misalign_elems);
  const std::int64_t elems = p.rows * p.cols;
  x_buf_ = DeviceTensor(p.dtype, {elems + misalign_elems});
  w_buf_ = DeviceTensor(p.dtype, {static_cast<std::int64_t>(p.cols) + misalign_elems});
  y_buf_ = DeviceTensor(p.dtype, {elems + misalign_elems});
  x_ = offset_view(x_buf_, {p.rows, p.cols}, misalign_elems);
  w_ = offset_view(w_buf_, {p.cols}, misalign_elems);
  y_ = offset_view(y_buf_, {p.rows, p.cols}, misalign_elems);
  fill_normal(x_, seed, 0.0, 1.0);
  fill_uniform(w_, seed ^ kWeightSeedSalt, 0.5, 1.5);
  fill_poison(y_);
  CUTELAB_CUDA(cudaDeviceSynchronize());
}

std::vector<OutputSpec> RmsNormWorkspace::outputs() const {
  return {OutputSpec{"y", y_, rmsnorm_tolerance(y_.dtype)}};
}

}  // namespace cutelab::rmsnorm
