// The KernelPlan of paged_sm90_fp8 v9 (the shared paged_sm90 plan with this version's main kernel).

#include "cute/mla_decode/paged_sm90/common/plan.hpp"
#include "cute/mla_decode/paged_sm90_fp8/common/tensor_core_version.hpp"
#include "cute/mla_decode/paged_sm90_fp8/paged_sm90_fp8_v9/api.hpp"
#include "cute/mla_decode/paged_sm90_fp8/paged_sm90_fp8_v9/config.hpp"
#include "cutelab/runtime/registry.hpp"

namespace cutelab::mla::paged_sm90_fp8_v9 {
namespace {

struct Version : paged_sm90_fp8::TensorCoreVersion<Traits> {
  static KernelId id() { return {"cute", "mla_decode", "paged_sm90_fp8", "v9"}; }
  static std::string summary() {
    return "FP8 KV (fp8_tensor) on FP8 tensor cores, v3 with Q's rows spread (half the softmax at <= 32 "
           "rows), Q's last k-steps in registers, 248 / 232 registers and a one-round transpose; split-KV "
           "on the GPU";
  }
  static paged_sm90::MainKernel main_kernel(DType dtype, KvFormat kv) {
    return paged_sm90_fp8_v9::main_kernel(dtype, kv);
  }
};

CUTELAB_REGISTER_PLAN(paged_sm90::VersionPlan<Version>);

}  // namespace
}  // namespace cutelab::mla::paged_sm90_fp8_v9
