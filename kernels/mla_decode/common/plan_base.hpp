#pragma once
// What every MLA decode plan shares: inputs, reference and cost. A design derives from
// MlaDecodePlanBase<ItsConfig> and adds id(), arch(), summary(), make_configs() and
// make_kernel(); make_kernel takes every size from ws.args() (the lengths actually drawn),
// not from the problem, which only picks and validates configs.

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "cutelab/runtime/plan.hpp"
#include "mla_decode/common/args.hpp"
#include "mla_decode/common/problem.hpp"
#include "mla_decode/common/workspace.hpp"

namespace cutelab::mla {

// Sequence lengths of a varlen problem are drawn with this seed, not the run's: every config,
// every check and the cost model then see the same lengths (the run's seed still draws q, the
// KV cache and the page order). Timing configs on different draws would compare noise:
// at b = 128 the mean of N(t, t/2) moves by ~4% from draw to draw.
inline constexpr std::uint64_t kLengthSeed = 0x6D6C615F6C656E73ull;

// The case a plan runs for a problem.
[[nodiscard]] MlaDecodeCase problem_case(const MlaDecodeProblem& p);
// DESIGN.md's cost model on problem_case(p).
[[nodiscard]] Cost problem_cost(const MlaDecodeProblem& p);
// reference_gpu on the workspace's inputs (ws.args(): for an FP8 case its dequantised cache),
// downloaded: {out [b*s_q*h_q*512], lse [b*h_q*s_q]}.
[[nodiscard]] std::vector<std::vector<float>> reference_outputs(const MlaDecodeWorkspace& ws,
                                                                cudaStream_t stream = nullptr);
// validate_args in checked mode: reads seqlens, the block table and the FP8 scales (a sync), so
// call it at plan time, never in a launch closure. `formats`: the KV formats the caller's kernel
// reads (default: the cache in q's dtype), so a workspace in another format is refused here too,
// not only by the config's validate().
[[nodiscard]] MlaDecodeDims checked_dims(const MlaDecodeWorkspace& ws, cudaStream_t stream = nullptr,
                                         KvFormats formats = {});

template <class ConfigT>
class MlaDecodePlanBase : public TypedPlan<MlaDecodeProblem, ConfigT, MlaDecodeWorkspace> {
 protected:
  [[nodiscard]] std::unique_ptr<MlaDecodeWorkspace> make_inputs(const MlaDecodeProblem& p,
                                                                std::uint64_t seed) const override {
    MlaDecodeCase c = problem_case(p);
    c.arithmetic = arithmetic(p);
    return std::make_unique<MlaDecodeWorkspace>(std::move(c), seed);
  }
  // What the design rounds before its tensor cores on problem p (its outputs' tolerances follow; a
  // design whose kernel depends on the problem's shape may round less on some).
  [[nodiscard]] virtual MlaArithmetic arithmetic(const MlaDecodeProblem&) const {
    return MlaArithmetic::q_precision;
  }
  [[nodiscard]] std::vector<std::vector<float>> make_reference(const MlaDecodeProblem&,
                                                               MlaDecodeWorkspace& ws) const override {
    return reference_outputs(ws);
  }
  [[nodiscard]] Cost make_cost(const MlaDecodeProblem& p) const override { return problem_cost(p); }
};

}  // namespace cutelab::mla
