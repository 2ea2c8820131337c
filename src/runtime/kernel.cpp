#include "cutelab/runtime/kernel.hpp"

#include <nlohmann/json.hpp>

#include "cutelab/core/error.hpp"

namespace cutelab {

nlohmann::json FunctionResources::to_json() const {
  return {{"name", name},
          {"registers", registers},
          {"static_smem", static_smem},
          {"dynamic_smem", dynamic_smem},
          {"local_bytes", local_bytes},
          {"block_threads", block_threads},
          {"binary_version", binary_version}};
}

FunctionResources read_resources(const void* func, std::string name, int block_threads, std::size_t dynamic_smem) {
  cudaFuncAttributes attr{};
  const cudaError_t err = cudaFuncGetAttributes(&attr, func);
  if (err != cudaSuccess) check_cuda(err, concat("cudaFuncGetAttributes(", name, ")").c_str());
  FunctionResources r;
  r.name = std::move(name);
  r.registers = attr.numRegs;
  r.static_smem = attr.sharedSizeBytes;
  r.dynamic_smem = dynamic_smem;
  r.local_bytes = attr.localSizeBytes;
  r.block_threads = block_threads;
  r.binary_version = attr.binaryVersion;
  return r;
}

}  // namespace cutelab
