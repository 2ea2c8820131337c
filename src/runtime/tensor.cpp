#include "cutelab/runtime/tensor.hpp"

#include <utility>

namespace cutelab {

DeviceBuffer::DeviceBuffer(std::size_t bytes) {
  if (bytes == 0) return;
  void* p = nullptr;
  const cudaError_t err = cudaMalloc(&p, bytes);
  if (err != cudaSuccess) check_cuda(err, concat("cudaMalloc(", bytes, " bytes)").c_str());
  ptr_ = p;
  bytes_ = bytes;
}

DeviceBuffer::~DeviceBuffer() {
  if (ptr_) CUTELAB_CUDA_NOEXCEPT(cudaFree(ptr_));
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : ptr_(std::exchange(other.ptr_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    if (ptr_) CUTELAB_CUDA_NOEXCEPT(cudaFree(ptr_));
    ptr_ = std::exchange(other.ptr_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

std::int64_t TensorView::numel() const noexcept {
  std::int64_t n = 1;
  for (std::int64_t d : shape) n *= d;
  return n;
}

bool TensorView::contiguous() const noexcept {
  if (stride.empty()) return true;  // no strides given: row-major, as everywhere else
  if (stride.size() != shape.size()) return false;
  std::int64_t expect = 1;
  for (int i = rank() - 1; i >= 0; --i) {
    if (shape[i] != 1 && stride[i] != expect) return false;  // size-1 dims may carry any stride
    expect *= shape[i];
  }
  return true;
}

std::string TensorView::describe() const {
  std::string s(dtype_name(dtype));
  s += '[';
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ',';
    s += std::to_string(shape[i]);
  }
  s += ']';
  if (!contiguous()) {
    s += "{stride ";
    for (std::size_t i = 0; i < stride.size(); ++i) {
      if (i) s += ',';
      s += std::to_string(stride[i]);
    }
    s += '}';
  }
  return s;
}

std::vector<std::int64_t> contiguous_strides(const std::vector<std::int64_t>& shape) {
  std::vector<std::int64_t> stride(shape.size(), 1);
  std::int64_t s = 1;
  for (std::size_t i = shape.size(); i-- > 0;) {
    stride[i] = s;
    s *= shape[i];
  }
  return stride;
}

DeviceTensor::DeviceTensor(DType dtype, std::vector<std::int64_t> shape) {
  for (std::size_t i = 0; i < shape.size(); ++i)
    CUTELAB_REQUIRE(shape[i] >= 0, "DeviceTensor: dimension ", i, " must be >= 0, got ", shape[i]);
  view_.dtype = dtype;
  view_.stride = contiguous_strides(shape);
  view_.shape = std::move(shape);
  buffer_ = DeviceBuffer(view_.bytes());
  view_.data = buffer_.data();
}

void DeviceTensor::upload(const void* host, std::size_t bytes) {
  CUTELAB_REQUIRE(bytes == view_.bytes(), "DeviceTensor::upload: ", view_.describe(), " holds ", view_.bytes(),
                  " bytes, got ", bytes);
  if (bytes) CUTELAB_CUDA(cudaMemcpy(view_.data, host, bytes, cudaMemcpyHostToDevice));
}

std::vector<std::uint8_t> copy_to_host_bytes(const TensorView& t) {
  CUTELAB_REQUIRE(t.contiguous(), "copy_to_host_bytes: view ", t.describe(), " must be contiguous");
  std::vector<std::uint8_t> out(t.bytes());
  if (!out.empty()) CUTELAB_CUDA(cudaMemcpy(out.data(), t.data, out.size(), cudaMemcpyDeviceToHost));
  return out;
}

std::vector<float> copy_to_host_float(const TensorView& t) {
  const std::vector<std::uint8_t> bytes = copy_to_host_bytes(t);
  std::vector<float> out(static_cast<std::size_t>(t.numel()));
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = static_cast<float>(load_as_double(t.dtype, bytes.data(), i));
  return out;
}

}  // namespace cutelab
