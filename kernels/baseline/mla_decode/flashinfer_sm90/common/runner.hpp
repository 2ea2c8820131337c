#pragma once
// One FlashInfer SM90 MLA decode on the lab's arguments (MlaDecodeArgs): the views FlashInfer
// takes (no copies), its workspaces, its host planner and the launch, as a lab Kernel.

#include <cuda_runtime_api.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "baseline/mla_decode/flashinfer_sm90/common/flashinfer_api.hpp"
#include "cutelab/runtime/kernel.hpp"
#include "cutelab/runtime/tensor.hpp"
#include "mla_decode/common/args.hpp"
#include "mla_decode/common/problem.hpp"

namespace cutelab::mla::flashinfer_sm90 {

// Why FlashInfer cannot serve this problem (its kernel has one KV head, writes lse = -inf where
// the lab writes +inf, ...), or nothing. Every design wrapping it refuses these in validate().
[[nodiscard]] std::optional<std::string> unsupported(const MlaDecodeProblem& p);

// The KV cache FlashInfer reads: the lab's cache itself, or an e4m3 copy of it with its scale.
struct KvSource {
  Types types = Types::bf16;
  const void* data = nullptr;  // [num_blocks, 64, 1, 576], strides of args.kv_cache
  float scale = 1;             // e4m3 only: dequantised = scale * value
};

class Runner {
 public:
  Runner(const MlaDecodeArgs& args, const MlaDecodeDims& dims, KvSource kv, const DeviceInfo& dev);
  Runner(const Runner&) = delete;
  Runner& operator=(const Runner&) = delete;
  ~Runner();

  // FlashInfer's planning of a decode step: seqlens to the host (a sync on `stream`), its host
  // planner, the upload of the schedule. Throws for lengths FlashInfer cannot serve.
  void plan_step(cudaStream_t stream);
  // One layer with the schedule of the last plan_step (graph-capturable, no host work).
  void run(cudaStream_t stream) const;
  [[nodiscard]] std::vector<FunctionResources> resources() const;

 private:
  MlaDecodeArgs args_;
  MlaDecodeDims dims_;
  KvSource kv_;
  Views views_;
  DeviceBuffer float_ws_, int_ws_, lse_rows_;  // lse_rows_: FlashInfer's [b * s_q, h_q] lse when s_q > 1
  void* staged_ = nullptr;                     // page-locked: the schedule to upload
  int* host_lens_ = nullptr;                   // page-locked: seqlens read back
  std::vector<int> qo_indptr_, kv_indptr_, kv_len_;
  Schedule schedule_;
  bool planned_ = false;
};

// A lab Kernel over a shared Runner: `setup` = plan_step, `launch_reusing_setup` = run, and
// `launch` = both (it syncs with the host: timed with direct launches).
[[nodiscard]] Kernel make_kernel(std::shared_ptr<Runner> runner);

}  // namespace cutelab::mla::flashinfer_sm90
