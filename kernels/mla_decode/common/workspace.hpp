#pragma once
// Device buffers of one MLA decode case, filled from a seed: q and the KV cache ~ N(0, 1),
// block tables shuffled, unowned pages and page tails NaN, outputs poisoned. An FP8 case
// (kv_format fp8_tensor / fp8_token) also holds that cache quantised from the bf16 one.

#include <cstdint>
#include <vector>

#include "cutelab/runtime/plan.hpp"
#include "mla_decode/common/args.hpp"
#include "mla_decode/common/problem.hpp"

namespace cutelab::mla {

class MlaDecodeWorkspace : public Workspace {
 public:
  MlaDecodeWorkspace(MlaDecodeCase c, std::uint64_t seed);

  // out, lse; for an FP8 case checked against the reference on the dequantised cache (the
  // kernel's arithmetic error only: the bf16 tolerances, fp8_token's widened by the bf16
  // rounding of its dequantised tile).
  [[nodiscard]] std::vector<OutputSpec> outputs() const override;
  // The arguments a kernel runs on: the FP8 cache (and fp8_tensor's kv_scale) for an FP8 case.
  [[nodiscard]] MlaDecodeArgs args() const;
  // The same with the bf16 original cache: a reference on it measures the quantisation error.
  [[nodiscard]] MlaDecodeArgs original_args() const;
  [[nodiscard]] const MlaDecodeCase& spec() const noexcept { return case_; }
  [[nodiscard]] int num_blocks() const noexcept { return num_blocks_; }
  // Host copies, for references.
  [[nodiscard]] const std::vector<int>& host_block_table() const noexcept { return host_block_table_; }

  DeviceTensor q, kv_cache, block_table, seqlens, out, lse;
  // FP8 cases only (empty otherwise), both quantised from kv_cache by quantize_kv over every slot:
  // kv_fp8: e4m3 [num_blocks, 64, h_kv, 576] (fp8_tensor) or u8 [num_blocks, 64, h_kv, 656]
  //   (fp8_token); NaN values stay NaN (e4m3 0x7F / 0xFF) and, with nan_unowned, every fp8_token
  //   scale of an unowned slot (pages nobody owns, page tails) is NaN too.
  // kv_scale: f32 [1], fp8_tensor: the largest finite |x| of kv_cache / 448.
  DeviceTensor kv_fp8, kv_scale;

 private:
  MlaDecodeCase case_;
  int num_blocks_ = 0;
  std::vector<int> host_block_table_;
};

// Tolerances for bf16/f16 outputs and the fp32 lse (MEASURE.md); fp8_token's are wider by the
// bf16 rounding of the dequantised tile its kernels multiply (derivations in workspace.cu).
// e4m3_q_and_p: the rounding of q and P to e4m3 on top; e4m3_requantised: and the cache's codes
// rounded again against a per-page reference scale (derivations in workspace.cu).
[[nodiscard]] Tolerance out_tolerance(DType dtype, KvFormat kv = KvFormat::bf16,
                                      MlaArithmetic arithmetic = MlaArithmetic::q_precision);
[[nodiscard]] Tolerance lse_tolerance(KvFormat kv = KvFormat::bf16,
                                      MlaArithmetic arithmetic = MlaArithmetic::q_precision);
// Whether the tolerances' relative L2 bounds are a statistic on this case: at least 64 query rows
// see a key, or every row that does sees 64 or more. Otherwise the workspace's outputs are held
// to the element-wise bounds alone (a few-key row's outputs are O(1), where a wrong page or scale
// is far outside atol).
[[nodiscard]] bool relative_l2_is_a_statistic(const MlaDecodeCase& c);

}  // namespace cutelab::mla
