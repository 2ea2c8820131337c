#pragma once
// Device buffers of one MLA decode case, filled from a seed: q and the KV cache ~ N(0, 1),
// block tables shuffled, unowned pages and page tails NaN, outputs poisoned.

#include <cstdint>
#include <vector>

#include "cutelab/runtime/plan.hpp"
#include "mla_decode/common/args.hpp"
#include "mla_decode/common/problem.hpp"

namespace cutelab::mla {

class MlaDecodeWorkspace : public Workspace {
 public:
  MlaDecodeWorkspace(MlaDecodeCase c, std::uint64_t seed);

  [[nodiscard]] std::vector<OutputSpec> outputs() const override;  // out, lse
  [[nodiscard]] MlaDecodeArgs args() const;
  [[nodiscard]] const MlaDecodeCase& spec() const noexcept { return case_; }
  [[nodiscard]] int num_blocks() const noexcept { return num_blocks_; }
  // Host copies, for references.
  [[nodiscard]] const std::vector<int>& host_block_table() const noexcept { return host_block_table_; }

  DeviceTensor q, kv_cache, block_table, seqlens, out, lse;

 private:
  MlaDecodeCase case_;
  int num_blocks_ = 0;
  std::vector<int> host_block_table_;
};

// Tolerances for bf16/f16 outputs and the fp32 lse (MEASURE.md).
[[nodiscard]] Tolerance out_tolerance(DType dtype);
[[nodiscard]] Tolerance lse_tolerance();

}  // namespace cutelab::mla
