// The KernelPlan of paged_sm90_fp8 v12 (the shared paged_sm90 plan with this version's main kernel).

#include "cute/mla_decode/paged_sm90/common/plan.hpp"
#include "cute/mla_decode/paged_sm90_fp8/common/tensor_core_version.hpp"
#include "cute/mla_decode/paged_sm90_fp8/paged_sm90_fp8_v12/api.hpp"
#include "cute/mla_decode/paged_sm90_fp8/paged_sm90_fp8_v12/config.hpp"
#include "cutelab/runtime/registry.hpp"

namespace cutelab::mla::paged_sm90_fp8_v12 {
namespace {

struct Version : paged_sm90_fp8::TensorCoreVersion<Traits> {
  static KernelId id() { return {"cute", "mla_decode", "paged_sm90_fp8", "v12"}; }
  static std::string summary() {
    return "FP8 KV (fp8_tensor) on FP8 tensor cores, v11 with the part's first request guessed (its "
           "schedule entry, length and first page id loaded beside the part's entry); split-KV on the GPU";
  }
  static paged_sm90::MainKernel main_kernel(DType dtype, KvFormat kv) {
    return paged_sm90_fp8_v12::main_kernel(dtype, kv);
  }
};

CUTELAB_REGISTER_PLAN(paged_sm90::VersionPlan<Version>);

}  // namespace
}  // namespace cutelab::mla::paged_sm90_fp8_v12
