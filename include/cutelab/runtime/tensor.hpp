#pragma once
// Device memory: an RAII buffer, a typed view with shape and strides, seeded fills on the
// device, copies to the host.

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "cutelab/core/dtype.hpp"
#include "cutelab/core/error.hpp"

namespace cutelab {

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;

  [[nodiscard]] void* data() const noexcept { return ptr_; }
  [[nodiscard]] std::size_t bytes() const noexcept { return bytes_; }
  [[nodiscard]] bool empty() const noexcept { return bytes_ == 0; }

 private:
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
};

// A non-owning view: element type, shape and strides in elements (row-major by default).
struct TensorView {
  void* data = nullptr;
  DType dtype = DType::f32;
  std::vector<std::int64_t> shape;
  std::vector<std::int64_t> stride;

  [[nodiscard]] std::int64_t numel() const noexcept;
  [[nodiscard]] int rank() const noexcept { return static_cast<int>(shape.size()); }
  [[nodiscard]] bool contiguous() const noexcept;
  [[nodiscard]] std::size_t bytes() const noexcept { return numel() * dtype_size(dtype); }
  [[nodiscard]] std::string describe() const;  // "bf16[2,64,576]"
  template <class T>
  [[nodiscard]] T* as() const noexcept { return static_cast<T*>(data); }
};

[[nodiscard]] std::vector<std::int64_t> contiguous_strides(const std::vector<std::int64_t>& shape);

class DeviceTensor {
 public:
  DeviceTensor() = default;
  DeviceTensor(DType dtype, std::vector<std::int64_t> shape);

  // Uploads host data (its size must match the shape).
  template <class T>
  static DeviceTensor from_host(DType dtype, std::vector<std::int64_t> shape, const std::vector<T>& host) {
    DeviceTensor t(dtype, std::move(shape));
    t.upload(host.data(), host.size() * sizeof(T));
    return t;
  }

  [[nodiscard]] const TensorView& view() const noexcept { return view_; }
  [[nodiscard]] void* data() const noexcept { return view_.data; }
  [[nodiscard]] DType dtype() const noexcept { return view_.dtype; }
  [[nodiscard]] const std::vector<std::int64_t>& shape() const noexcept { return view_.shape; }
  [[nodiscard]] std::int64_t numel() const noexcept { return view_.numel(); }
  [[nodiscard]] std::size_t bytes() const noexcept { return view_.bytes(); }
  template <class T>
  [[nodiscard]] T* as() const noexcept { return view_.as<T>(); }

  void upload(const void* host, std::size_t bytes);

 private:
  DeviceBuffer buffer_;
  TensorView view_;
};

// Seeded fills, run on the device. The same (seed, size, dtype) gives the same values.
void fill_uniform(const TensorView& t, std::uint64_t seed, double lo, double hi, cudaStream_t stream = nullptr);
void fill_normal(const TensorView& t, std::uint64_t seed, double mean, double stddev, cudaStream_t stream = nullptr);
void fill_constant(const TensorView& t, double value, cudaStream_t stream = nullptr);
// Writes poison_bits(dtype) into every element (the checker counts what stays poisoned).
void fill_poison(const TensorView& t, cudaStream_t stream = nullptr);

// Raw bytes of a (contiguous) view, and the same decoded to float.
[[nodiscard]] std::vector<std::uint8_t> copy_to_host_bytes(const TensorView& t);
[[nodiscard]] std::vector<float> copy_to_host_float(const TensorView& t);
template <class T>
[[nodiscard]] std::vector<T> copy_to_host(const TensorView& t) {
  CUTELAB_REQUIRE(sizeof(T) == dtype_size(t.dtype), "copy_to_host: element size ", sizeof(T),
                  " does not match ", t.describe());
  std::vector<T> out(static_cast<std::size_t>(t.numel()));
  CUTELAB_CUDA(cudaMemcpy(out.data(), t.data, t.bytes(), cudaMemcpyDeviceToHost));
  return out;
}

}  // namespace cutelab
