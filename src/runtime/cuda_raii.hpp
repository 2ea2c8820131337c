#pragma once
// Move-only owners of the CUDA objects the runtime creates (private to src/runtime).

#include <cuda_runtime_api.h>

#include <utility>

#include "cutelab/core/error.hpp"

namespace cutelab::detail {

template <class Handle, cudaError_t (*Destroy)(Handle)>
class CudaHandle {
 public:
  CudaHandle() = default;
  explicit CudaHandle(Handle h) : h_(h) {}
  ~CudaHandle() { reset(); }
  CudaHandle(const CudaHandle&) = delete;
  CudaHandle& operator=(const CudaHandle&) = delete;
  CudaHandle(CudaHandle&& o) noexcept : h_(std::exchange(o.h_, nullptr)) {}
  CudaHandle& operator=(CudaHandle&& o) noexcept {
    if (this != &o) {
      reset();
      h_ = std::exchange(o.h_, nullptr);
    }
    return *this;
  }
  [[nodiscard]] Handle get() const noexcept { return h_; }
  [[nodiscard]] explicit operator bool() const noexcept { return h_ != nullptr; }
  void reset() noexcept {
    if (h_) CUTELAB_CUDA_NOEXCEPT(Destroy(h_));
    h_ = nullptr;
  }

 private:
  Handle h_ = nullptr;
};

using Stream = CudaHandle<cudaStream_t, cudaStreamDestroy>;
using Event = CudaHandle<cudaEvent_t, cudaEventDestroy>;
using Graph = CudaHandle<cudaGraph_t, cudaGraphDestroy>;
using GraphExec = CudaHandle<cudaGraphExec_t, cudaGraphExecDestroy>;

inline Stream make_stream() {
  cudaStream_t s = nullptr;
  CUTELAB_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  return Stream(s);
}

inline Event make_event() {
  cudaEvent_t e = nullptr;
  CUTELAB_CUDA(cudaEventCreate(&e));
  return Event(e);
}

}  // namespace cutelab::detail
