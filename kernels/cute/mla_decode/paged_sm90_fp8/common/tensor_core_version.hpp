#pragma once
// What the KernelPlan (paged_sm90::VersionPlan) of an FP8-tensor-core design (v2, v3, v9, v10) reads
// off its Traits: one CTA's registers after setmaxnreg, threads, stages, the shortest parts to tune
// over and the arithmetic. A design's Version derives from it and adds its id, summary and
// main kernel.

#include "cute/mla_decode/paged_sm90/common/plan.hpp"

namespace cutelab::mla::paged_sm90_fp8 {

template <class Traits>
struct TensorCoreVersion {
  // After setmaxnreg (v9-v11 split the consumers' share between them, the same sum).
  static constexpr int kRegistersPerSm =
      128 * Traits::kProducerRegisters + 128 * Traits::kWarpgroups * Traits::kConsumerRegisters;
  static constexpr int kThreads = Traits::kThreads;
  static constexpr int kStages = Traits::kStages;
  static constexpr int kMinBlocksPerPart[3] = {1, 4, 16};
  // q and P are rounded to e4m3 before the tensor cores: the outputs carry that error too.
  static constexpr MlaArithmetic kArithmetic = MlaArithmetic::e4m3_q_and_p;
  // Untuned default: their 64-row kernels (v10's, v18's) run as fast or faster with KV evicted first at
  // any batch (0.945-1.005x the normal hint's time over the FP8 suites' sweeps), their <= 32-row ones
  // slower (as bf16's at one M tile).
  static constexpr int kEvictFirstAboveRows = 32;
};

}  // namespace cutelab::mla::paged_sm90_fp8
