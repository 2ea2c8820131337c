#pragma once
// MLA decode for callers outside the harness (the Python package, serving engines): a Decoder
// runs a design on the caller's own tensors, with a KV cache in q's dtype or in an FP8 format. Per decode
// step plan_step() enqueues the split schedule of that step's lengths; per layer run() enqueues the kernels.
// A design offers one by having its KernelPlan also derive from DecoderSource; open_decoder() picks the
// kernel and its config (the tuning cache's winner when there is one) the way `cutelab run` does.

#include <cuda_runtime_api.h>

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cutelab/runtime/device.hpp"
#include "cutelab/runtime/plan.hpp"
#include "mla_decode/common/args.hpp"
#include "mla_decode/common/problem.hpp"

namespace cutelab::mla {

// What stays fixed over the life of a decoder: the model's shape and the largest batch.
struct DecoderShape {
  int max_batch = 1;
  int s_q = 1;
  int h_q = 128;
  int h_kv = 1;
  DType dtype = DType::bf16;          // of q and out
  std::optional<KvFormat> kv_format;  // of the KV cache; empty: q's dtype (FP8 formats take bf16 q)

  // The cache format every call must pass: kv_format, or the one of q's dtype.
  [[nodiscard]] KvFormat cache_format() const noexcept;
  // Throws UsageError naming the field outside what the family supports.
  void validate() const;
};

class Decoder {
 public:
  virtual ~Decoder() = default;
  // Enqueues the split schedule of `seqlens` ([b] int32 on the device, b <= max_batch). The
  // lengths may change between steps; a call that meets lengths other than the planned ones
  // writes NaN for those requests and reuse_error() says so (checked calls refuse instead).
  virtual void plan_step(const TensorView& seqlens, cudaStream_t stream) = 0;
  // Enqueues one layer. args.seqlens must be the tensor of the last plan_step. Host-side checks
  // only; `checked` also reads lengths and block ids back (a sync) and refuses bad ones.
  virtual void run(const MlaDecodeArgs& args, bool checked, cudaStream_t stream) const = 0;
  // Batch of the last plan_step (0 before the first).
  [[nodiscard]] virtual int batch() const = 0;
  // Empty, or what went wrong when a call since the last plan_step met other lengths (syncs).
  [[nodiscard]] virtual std::string reuse_error(cudaStream_t stream) const = 0;
};

// Implemented next to KernelPlan by designs whose kernels serve callers' tensors.
class DecoderSource {
 public:
  virtual ~DecoderSource() = default;
  // `config` is one of the plan's configs; it has been validated for the shape.
  [[nodiscard]] virtual std::unique_ptr<Decoder> make_decoder(const DecoderShape& shape,
                                                              const ConfigDesc& config,
                                                              const DeviceInfo& dev) const = 0;
  // Whether its decoders take q of `dtype` with a cache in format `kv`.
  [[nodiscard]] virtual bool serves(DType dtype, KvFormat kv) const = 0;
  // What its kernel for `shape` rounds before the tensor cores (sets the outputs' tolerances).
  [[nodiscard]] virtual MlaArithmetic arithmetic(const DecoderShape& shape) const = 0;
};

// The problem a decoder's configs are chosen for: the shape at its largest batch, with the
// lengths when known (the tuning cache keys on them) or t = max_seqlen otherwise.
[[nodiscard]] Problem decoder_problem(const DecoderShape& shape, bool causal, const std::vector<int>& lens,
                                      int max_seqlen);

struct DecoderChoice {
  std::string kernel;                                     // "cute/mla_decode/paged_sm90/v3"
  std::string config;                                     // "fo8_mb1_evictfirst"
  std::string config_source;  // "given", "cache", "cache (rotating)" (a winner ranked by the rotating
                              // figure, preferred when there is one) or "first valid"
  MlaArithmetic arithmetic = MlaArithmetic::q_precision;  // out_tolerance / lse_tolerance take it
  std::unique_ptr<Decoder> decoder;
};

struct DecoderRequest {
  std::string kernel;  // a registry query ("cute/mla_decode/paged_sm90/v2", "mla_decode"); empty: best
                       // cached, else the family default, else (a format it does not read) the newest
                       // version of the one design that serves the format
  std::string config;  // a config name; empty: the tuning cache's winner, else the first valid config
  bool causal = false;
  std::vector<int> lens;  // the step's lengths when the caller knows them on the host (cache key)
  int max_seqlen = 0;     // else the longest length expected (cache key t); 0: 4096
  std::string cache_dir;  // empty: TuneCache::default_dir()
};

// Throws UsageError when the kernel is unknown, is not an MLA decode kernel, serves no callers'
// tensors or not the shape's cache format, or the config is unknown or cannot run the shape on
// this device (with the reason).
[[nodiscard]] DecoderChoice open_decoder(const DecoderShape& shape, const DecoderRequest& request,
                                         const DeviceInfo& dev);
// Names of the registered kernels that offer a Decoder: for q of `dtype` with a cache in `kv`, or
// (no format given) for any.
[[nodiscard]] std::vector<std::string> decoder_kernels(std::optional<std::pair<DType, KvFormat>> served = {});

}  // namespace cutelab::mla
