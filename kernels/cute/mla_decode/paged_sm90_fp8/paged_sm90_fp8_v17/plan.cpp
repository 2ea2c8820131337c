// The KernelPlan of paged_sm90_fp8 v17 (the shared paged_sm90 plan with this version's main kernel).

#include <algorithm>

#include "cute/mla_decode/paged_sm90/common/plan.hpp"
#include "cute/mla_decode/paged_sm90_fp8/common/tensor_core_version.hpp"
#include "cute/mla_decode/paged_sm90_fp8/paged_sm90_fp8_v17/api.hpp"
#include "cute/mla_decode/paged_sm90_fp8/paged_sm90_fp8_v17/config.hpp"
#include "cute/mla_decode/paged_sm90_fp8/paged_sm90_fp8_v4/api.hpp"
#include "cute/mla_decode/paged_sm90_fp8/paged_sm90_fp8_v4/config.hpp"
#include "cutelab/runtime/registry.hpp"

namespace cutelab::mla::paged_sm90_fp8_v17 {
namespace {

struct Version : paged_sm90_fp8::TensorCoreVersion<Traits> {
  static KernelId id() { return {"cute", "mla_decode", "paged_sm90_fp8", "v17"}; }
  static std::string summary() {
    return "FP8 KV (fp8_token) on FP8 tensor cores without requantisation: up to 32 query rows a KV head, "
           "S from one accumulator per scale group plus the bf16 RoPE one, P^T per group carrying the "
           "group's scales into O^T = V^T P^T (v13's roles); more rows run v4's kernel; split-KV on the GPU";
  }
  // O^T's N is the tile's live rows: more rows a KV head than Traits::kRows run v4's kernel (the
  // lab's other fp8_token design; `cutelab run` names the kernel it launched).
  static paged_sm90::MainKernel main_kernel_for_rows(DType dtype, KvFormat kv, int rows) {
    return rows > Traits::kRows ? paged_sm90_fp8_v4::main_kernel(dtype, kv) : main_kernel(dtype, kv);
  }
  static paged_sm90::MainKernel main_kernel(DType dtype, KvFormat kv) {
    return paged_sm90_fp8_v17::main_kernel(dtype, kv);
  }
  // The larger of the two kernels' needs (v4's setmaxnreg split is its own).
  static constexpr int kRegistersPerSm = std::max(
      TensorCoreVersion<Traits>::kRegistersPerSm,
      128 * (paged_sm90_fp8_v4::Traits::kProducerRegisters + paged_sm90_fp8_v4::Traits::kTransposerRegisters +
             paged_sm90_fp8_v4::Traits::kOwnerRegisters));
  // Its own kernel rounds q and P (P with the group scales on it) to e4m3; v4's also requantises
  // the cache's codes.
  static MlaArithmetic arithmetic_for_rows(int rows) {
    return rows > Traits::kRows ? MlaArithmetic::e4m3_requantised : MlaArithmetic::e4m3_q_and_p;
  }
};

CUTELAB_REGISTER_PLAN(paged_sm90::VersionPlan<Version>);

}  // namespace
}  // namespace cutelab::mla::paged_sm90_fp8_v17
