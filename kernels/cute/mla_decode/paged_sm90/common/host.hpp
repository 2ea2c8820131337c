#pragma once
// Host side every paged_sm90 version shares, free of CuTe: tuning knobs, the plan of a decode
// step (split schedule + split scratch, made once per step and reused by every layer), a call
// checked and encoded, and the runner that launches [schedule ->] the version's main kernel ->
// combine. The main kernel's launch record and the call's TMA maps: main_kernel.hpp.

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cute/mla_decode/paged_sm90/common/main_kernel.hpp"
#include "cute/mla_decode/paged_sm90/common/params.hpp"
#include "cutelab/core/math.hpp"
#include "cutelab/runtime/device.hpp"
#include "cutelab/runtime/kernel.hpp"
#include "cutelab/runtime/tensor.hpp"
#include "mla_decode/common/args.hpp"
#include "mla_decode/common/decoder.hpp"

namespace cutelab::mla::paged_sm90 {

// Run-time knobs the tuner varies (no recompilation).
struct TuneConfig {
  int fixed_overhead_blocks = 8;  // schedule: cost of a request piece beyond its KV blocks
  bool kv_evict_first = true;     // L2 hint on streamed KV tiles
  int min_blocks_per_part = 1;    // schedule: shortest part (small batches: fewer partials)
  // Split pieces' partial rows in fp32 or in out's dtype (the versions with a main kernel for it).
  PartialFormat partials = PartialFormat::fp32;
  // Where the grid's columns (h_kv x M tiles) do not divide the SMs: one more, shorter row of
  // parts on the SMs the full rows leave idle (SplitSchedule::tail_waves).
  bool tail_parts = false;

  [[nodiscard]] std::string name() const;
  [[nodiscard]] bool operator==(const TuneConfig&) const = default;
};

// The plan of one decode step: the split schedule of its lengths and the scratch its split
// requests write partials into. Made once (device buffers sized for the runner's largest batch),
// refilled by Runner::plan_step at every step, read by every layer's call of that step. A plan
// serves one stream at a time (its layers run one after another).
class StepPlan {
 public:
  // Batch and lengths tensor of the last plan_step (0 / null before the first).
  [[nodiscard]] int batch() const noexcept { return b_; }
  [[nodiscard]] const void* seqlens() const noexcept { return seqlens_; }
  // Whether a call since the last plan_step met lengths whose page counts differ from the ones
  // planned (its outputs for those requests were written as NaN). Synchronizes `stream`.
  // Returns the problem in words, or an empty string.
  [[nodiscard]] std::string reuse_error(cudaStream_t stream) const;
  // The planned page count of each request (a device read; synchronizes `stream`).
  [[nodiscard]] std::vector<int> planned_blocks(cudaStream_t stream) const;

 private:
  friend class Runner;
  StepPlan(const MlaDecodeDims& runner_dims, int num_parts, int rows_per_head);

  MlaDecodeDims runner_dims_;  // the shape of the runner that made it (b = its largest batch)
  int num_parts_ = 0;
  int b_ = 0;
  const void* seqlens_ = nullptr;
  DeviceBuffer parts_, requests_, partial_out_, partial_lse_, error_flag_;
};

// Why a design that loads Q tiles by TMA (MainKernel::q_map) cannot serve a shape, or nothing: a
// box of whole query tokens covers a 64-row tile exactly when the heads per KV head divide 64 or
// are a multiple of it, or when a request has at most 64 packed rows.
[[nodiscard]] std::optional<std::string> q_tile_refusal(int heads_per_kv, int s_q);

// Whether `kv` is the cache in q's dtype (what the bf16/f16 versions read).
[[nodiscard]] inline bool same_as_q(DType dtype, KvFormat kv) {
  return (dtype == DType::bf16 && kv == KvFormat::bf16) || (dtype == DType::f16 && kv == KvFormat::f16);
}

// Everything one call needs, checked and encoded once: a launch only enqueues kernels.
struct PreparedCall {
  Params params;
  KvMaps kv_maps;
  MlaDecodeDims dims;
  void* out = nullptr;
};

// The host API object of a design for one model shape (s_q, h_q, h_kv, dtype) and batches up to
// dims.b. Per decode step: plan_step(plan, seqlens) enqueues the schedule. Per layer: prepare()
// validates the arguments against the shape and the plan (host-side checks only unless `checked`:
// no device reads, no sync), rejects views the kernels cannot address (they need contiguous q,
// KV cache, block table, out and lse) and encodes the call; launch() only enqueues main +
// combine. run() is prepare + launch; a lengths change that alters a request's page count
// without a new plan_step is caught on the device (outputs NaN, StepPlan::reuse_error says it)
// or, in checked mode, refused before anything runs.
class Runner {
 public:
  Runner(const MlaDecodeDims& dims, const DeviceInfo& dev, const TuneConfig& config, MainKernel main);

  [[nodiscard]] std::unique_ptr<StepPlan> make_step_plan() const;
  // Enqueues the split schedule of `seqlens` ([b] int32, b <= the runner's batch) into `plan`.
  void plan_step(StepPlan& plan, const TensorView& seqlens, cudaStream_t stream) const;

  [[nodiscard]] PreparedCall prepare(const StepPlan& plan, const MlaDecodeArgs& args, bool checked = false,
                                     cudaStream_t stream = nullptr) const;
  void launch(const PreparedCall& call, cudaStream_t stream) const;
  void run(const StepPlan& plan, const MlaDecodeArgs& args, cudaStream_t stream) const {
    launch(prepare(plan, args), stream);
  }
  // Throws UsageError unless `plan` was made by a runner of this one's shape and size.
  void require_own(const StepPlan& plan) const;

  [[nodiscard]] const MlaDecodeDims& dims() const noexcept { return dims_; }
  [[nodiscard]] std::vector<FunctionResources> resources() const;

 private:
  MlaDecodeDims dims_;  // the largest batch served; heads, s_q and dtype must match every call
  TuneConfig config_;
  MainKernel main_;
  int m_tiles_ = 0;
  int num_parts_ = 0;
  int tail_waves_ = 0;  // SplitSchedule::tail_waves (0 unless config.tail_parts)
};

// Packed query rows per KV head (Params::rows_per_head); 0 when h_kv does not divide h_q (the
// Runner and validate() name that).
[[nodiscard]] inline int rows_per_kv_head(int s_q, int h_q, int h_kv) {
  return h_kv > 0 && h_q % h_kv == 0 ? s_q * (h_q / h_kv) : 0;
}

// M tiles of kBlockM packed query rows per KV head, and the grid's columns: h_kv x M tiles.
[[nodiscard]] inline int m_tiles_of(int s_q, int h_q, int h_kv) {
  return ceil_div(rows_per_kv_head(s_q, h_q, h_kv), kBlockM);
}

// The grid a Runner launches for `units` = h_kv x M tiles columns on `sm_count` SMs: full rows of
// parts, plus with `tail_parts` (where SMs are left over) a last row of shorter parts run in
// `tail_waves` waves on them.
struct PartGrid {
  int num_parts = 1;
  int tail_waves = 0;
};
[[nodiscard]] PartGrid part_grid(int units, int sm_count, bool tail_parts);

// The family's Decoder over a Runner and the one StepPlan it refills at every step.
class RunnerDecoder final : public Decoder {
 public:
  explicit RunnerDecoder(Runner runner) : runner_(std::move(runner)), step_(runner_.make_step_plan()) {}
  void plan_step(const TensorView& seqlens, cudaStream_t stream) override {
    runner_.plan_step(*step_, seqlens, stream);
  }
  void run(const MlaDecodeArgs& args, bool checked, cudaStream_t stream) const override {
    runner_.launch(runner_.prepare(*step_, args, checked, stream), stream);
  }
  [[nodiscard]] int batch() const override { return step_->batch(); }
  [[nodiscard]] std::string reuse_error(cudaStream_t stream) const override {
    return step_->reuse_error(stream);
  }

 private:
  Runner runner_;
  std::unique_ptr<StepPlan> step_;
};

}  // namespace cutelab::mla::paged_sm90
