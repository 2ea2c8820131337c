// The KernelPlan of paged_sm90 v8 (the shared paged_sm90 plan with v8's main kernels; v3's above 32
// query rows a KV head and for f16).

#include "cute/mla_decode/paged_sm90/common/plan.hpp"
#include "cute/mla_decode/paged_sm90/paged_sm90_v3/api.hpp"
#include "cute/mla_decode/paged_sm90/paged_sm90_v3/config.hpp"
#include "cute/mla_decode/paged_sm90/paged_sm90_v8/api.hpp"
#include "cutelab/runtime/registry.hpp"

namespace cutelab::mla::paged_sm90_v8 {
namespace {

struct Version {
  static KernelId id() { return {"cute", "mla_decode", "paged_sm90", "v8"}; }
  static std::string summary() {
    return "up to 32 query rows a KV head: S^T = K Q^T and O^T = V^T P^T with N = the rows (no padded m64 "
           "tile), one warpgroup owns S^T and the softmax, the other all of O^T; v3's kernel above 32 rows "
           "and for f16; split-KV on the GPU";
  }
  // `rows`: query rows a KV head (0 where no problem is known: v3's kernel answers what is served).
  static paged_sm90::MainKernel main_kernel(DType dtype, KvFormat kv, PartialFormat partials, int rows) {
    if (!paged_sm90::same_as_q(dtype, kv)) return {};
    const paged_sm90::MainKernel own =
        rows > 0 ? paged_sm90_v8::main_kernel(dtype, partials, rows) : paged_sm90::MainKernel{};
    return own.function != nullptr ? own : paged_sm90_v3::main_kernel(dtype, partials);
  }
  // v3's figures (the larger of the two designs' needs: v8's kernels need less).
  static constexpr int kRegistersPerSm = paged_sm90_v3::Traits<cute::bfloat16_t>::kThreads * 255;
  static constexpr int kThreads = paged_sm90_v3::Traits<cute::bfloat16_t>::kThreads;
  static constexpr int kStages = 2;
  static constexpr int kMinBlocksPerPart[] = {1, 4, 16};
};

CUTELAB_REGISTER_PLAN(paged_sm90::VersionPlan<Version>);

}  // namespace
}  // namespace cutelab::mla::paged_sm90_v8
