// The KernelPlan of paged_sm90_fp8 v4 (the shared paged_sm90 plan with this version's main kernel).

#include "cute/mla_decode/paged_sm90/common/plan.hpp"
#include "cute/mla_decode/paged_sm90_fp8/common/tensor_core_version.hpp"
#include "cute/mla_decode/paged_sm90_fp8/paged_sm90_fp8_v4/api.hpp"
#include "cute/mla_decode/paged_sm90_fp8/paged_sm90_fp8_v4/config.hpp"
#include "cutelab/runtime/registry.hpp"

namespace cutelab::mla::paged_sm90_fp8_v4 {
namespace {

struct Version : paged_sm90_fp8::TensorCoreVersion<Traits> {
  static KernelId id() { return {"cute", "mla_decode", "paged_sm90_fp8", "v4"}; }
  static std::string summary() {
    return "FP8 KV (fp8_token) on FP8 tensor cores: v3's page loop, each page requantised in place to the "
           "piece's largest group scale by the third warpgroup; split-KV on the GPU";
  }
  static paged_sm90::MainKernel main_kernel(DType dtype, KvFormat kv) {
    return paged_sm90_fp8_v4::main_kernel(dtype, kv);
  }
  // One setmaxnreg per warpgroup (TensorCoreVersion's formula has one count for both consumers).
  static constexpr int kRegistersPerSm =
      128 * (Traits::kProducerRegisters + Traits::kTransposerRegisters + Traits::kOwnerRegisters);
  // K and V rounded to e4m3 a second time, against the page's reference scale.
  static constexpr MlaArithmetic kArithmetic = MlaArithmetic::e4m3_requantised;
};

CUTELAB_REGISTER_PLAN(paged_sm90::VersionPlan<Version>);

}  // namespace
}  // namespace cutelab::mla::paged_sm90_fp8_v4
