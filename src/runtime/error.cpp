#include "cutelab/core/error.hpp"

#include <atomic>
#include <cstdio>
#include <string_view>

namespace cutelab {
namespace {

// "src/runtime/tensor.cpp:42" rather than the absolute path the compiler was given.
std::string short_location(const std::source_location& where) {
  std::string_view file = where.file_name();
  for (std::string_view root : {"/src/", "/include/", "/kernels/", "/tools/", "/tests/"}) {
    if (const std::size_t at = file.rfind(root); at != std::string_view::npos) {
      file.remove_prefix(at + 1);
      break;
    }
  }
  return concat(file, ':', where.line());
}

std::string cuda_message(cudaError_t code, const std::string& what) {
  return concat(what, ": ", cudaGetErrorName(code), " (", cudaGetErrorString(code), ")");
}

bool is_sticky(cudaError_t code) noexcept {
  // Errors after which the context is unusable; the runtime documents each as "the process
  // must be terminated and relaunched" (driver_types.h).
  switch (code) {
    case cudaErrorECCUncorrectable:
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchTimeout:
    case cudaErrorAssert:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorLaunchFailure:
    case cudaErrorTensorMemoryLeak:
      return true;
    default:
      return false;
  }
}

}  // namespace

Error::Error(const std::string& message, std::source_location where)
    : std::runtime_error(concat(message, " [", short_location(where), "]")),
      message_(message),
      where_(short_location(where)) {}

CudaError::CudaError(cudaError_t code, const std::string& what, std::source_location where)
    : Error(cuda_message(code, what), where), code_(code) {}

bool CudaError::sticky() const noexcept { return is_sticky(code_); }

void check_cuda(cudaError_t code, const char* expr, std::source_location where) {
  if (code == cudaSuccess) return;
  // The failing call also set the thread's last error; clear it so that a later
  // cudaGetLastError() does not report this failure a second time (sticky errors stay).
  (void)cudaGetLastError();
  throw CudaError(code, expr, where);
}

void check_cuda_noexcept(cudaError_t code, const char* expr, std::source_location where) noexcept {
  if (code == cudaSuccess) return;
  (void)cudaGetLastError();
  // Once the context is lost every destructor's cudaFree fails the same way: say it once.
  static std::atomic<int> last_sticky{0};
  if (is_sticky(code) && last_sticky.exchange(static_cast<int>(code)) == static_cast<int>(code)) return;
  std::fprintf(stderr, "cutelab: %s failed: %s (%s) [%s]\n", expr, cudaGetErrorName(code),
               cudaGetErrorString(code), short_location(where).c_str());
}

}  // namespace cutelab
