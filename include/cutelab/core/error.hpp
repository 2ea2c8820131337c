#pragma once
// Errors carry the place they were raised and a message that names the argument and says
// what was expected and what was found. Library code throws; only the CLI decides exit codes.

#include <cuda_runtime_api.h>

#include <source_location>
#include <sstream>
#include <stdexcept>
#include <string>

namespace cutelab {

class Error : public std::runtime_error {
 public:
  Error(const std::string& message, std::source_location where = std::source_location::current());
  [[nodiscard]] const std::string& message() const noexcept { return message_; }
  [[nodiscard]] const std::string& where() const noexcept { return where_; }

 private:
  std::string message_;
  std::string where_;
};

// Bad input from a user: a flag, a size, an argument of the host API. Exit status 2 in the CLI.
class UsageError : public Error {
 public:
  // Spelled out: nvcc 13.0's front end crashes on an inherited constructor with a
  // std::source_location default argument.
  UsageError(const std::string& message, std::source_location where = std::source_location::current())
      : Error(message, where) {}
};

// A CUDA API call failed. `sticky` is true when the context is unusable afterwards.
class CudaError : public Error {
 public:
  CudaError(cudaError_t code, const std::string& what,
            std::source_location where = std::source_location::current());
  [[nodiscard]] cudaError_t code() const noexcept { return code_; }
  [[nodiscard]] bool sticky() const noexcept;

 private:
  cudaError_t code_;
};

void check_cuda(cudaError_t code, const char* expr,
                std::source_location where = std::source_location::current());
// For destructors: reports to stderr instead of throwing.
void check_cuda_noexcept(cudaError_t code, const char* expr,
                         std::source_location where = std::source_location::current()) noexcept;

template <class... Parts>
[[nodiscard]] std::string concat(const Parts&... parts) {
  std::ostringstream out;
  (out << ... << parts);
  return out.str();
}

}  // namespace cutelab

#define CUTELAB_CUDA(expr) ::cutelab::check_cuda((expr), #expr)
#define CUTELAB_CUDA_NOEXCEPT(expr) ::cutelab::check_cuda_noexcept((expr), #expr)
// Checks the last launch's error (cudaGetLastError); asynchronous faults surface at the next sync.
#define CUTELAB_CUDA_LAUNCH() ::cutelab::check_cuda(cudaGetLastError(), "kernel launch")

// Argument check with a message built from the trailing parts, e.g.
//   CUTELAB_REQUIRE(h_q % h_kv == 0, "h_q (", h_q, ") must be a multiple of h_kv (", h_kv, ")");
#define CUTELAB_REQUIRE(cond, ...)                                  \
  do {                                                              \
    if (!(cond)) throw ::cutelab::UsageError(::cutelab::concat(__VA_ARGS__)); \
  } while (0)
