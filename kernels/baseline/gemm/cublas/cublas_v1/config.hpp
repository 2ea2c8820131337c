#pragma once
// baseline/gemm/cublas/v1: cuBLASLt's bf16 GEMM (fp32 compute) with its own heuristic's first
// algorithm. One config; the library chooses tiles, clusters and split-K itself.

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "cutelab/core/error.hpp"
#include "cutelab/runtime/device.hpp"
#include "gemm/common/problem.hpp"

namespace cutelab::gemm::cublas_v1 {

inline constexpr std::size_t kLtWorkspaceBytes = 32u << 20;  // what NVIDIA suggests for Hopper

struct Config {
  [[nodiscard]] std::string name() const { return "heuristic"; }
  [[nodiscard]] nlohmann::json to_json() const {
    return {{"algo", "cublasLtMatmulAlgoGetHeuristic, first result"}, {"workspace_bytes", kLtWorkspaceBytes}};
  }
  [[nodiscard]] std::optional<std::string> validate(const GemmProblem&, const DeviceInfo& dev) const {
    if (dev.cc_major < 8) return concat("bf16 tensor-core GEMM needs sm_80 or newer, found ", dev.sm());
    return std::nullopt;
  }
};

}  // namespace cutelab::gemm::cublas_v1
