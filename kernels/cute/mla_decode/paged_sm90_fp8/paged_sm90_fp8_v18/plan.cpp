// The KernelPlan of paged_sm90_fp8 v18 (the shared paged_sm90 plan with this version's main kernel).

#include <algorithm>

#include "cute/mla_decode/paged_sm90/common/plan.hpp"
#include "cute/mla_decode/paged_sm90_fp8/common/tensor_core_version.hpp"
#include "cute/mla_decode/paged_sm90_fp8/paged_sm90_fp8_v17/api.hpp"
#include "cute/mla_decode/paged_sm90_fp8/paged_sm90_fp8_v17/config.hpp"
#include "cute/mla_decode/paged_sm90_fp8/paged_sm90_fp8_v18/api.hpp"
#include "cute/mla_decode/paged_sm90_fp8/paged_sm90_fp8_v18/config.hpp"
#include "cutelab/runtime/registry.hpp"

namespace cutelab::mla::paged_sm90_fp8_v18 {
namespace {

struct Version : paged_sm90_fp8::TensorCoreVersion<Traits> {
  static KernelId id() { return {"cute", "mla_decode", "paged_sm90_fp8", "v18"}; }
  static std::string summary() {
    return "FP8 KV (fp8_token) on FP8 tensor cores without requantisation at 64 query rows a CTA: S from two "
           "accumulators with the group scales applied between the group products, O^T = V^T P^T split by "
           "scale group between both consumer warpgroups; up to 32 rows a KV head run v17's kernel; "
           "split-KV on the GPU";
  }
  // v17's kernel serves tiles of at most 32 live rows without padding half of O^T's N.
  static paged_sm90::MainKernel main_kernel_for_rows(DType dtype, KvFormat kv, int rows) {
    return rows > paged_sm90_fp8_v17::Traits::kRows ? main_kernel(dtype, kv)
                                                    : paged_sm90_fp8_v17::main_kernel(dtype, kv);
  }
  static paged_sm90::MainKernel main_kernel(DType dtype, KvFormat kv) {
    return paged_sm90_fp8_v18::main_kernel(dtype, kv);
  }
  static constexpr int kRegistersPerSm =
      std::max(TensorCoreVersion<Traits>::kRegistersPerSm,
               TensorCoreVersion<paged_sm90_fp8_v17::Traits>::kRegistersPerSm);
};

CUTELAB_REGISTER_PLAN(paged_sm90::VersionPlan<Version>);

}  // namespace
}  // namespace cutelab::mla::paged_sm90_fp8_v18
