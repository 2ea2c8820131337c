// The KernelPlan of paged_sm90_fp8 v4 (the shared paged_sm90 plan with this version's main kernel).

#include "cute/mla_decode/paged_sm90/common/plan.hpp"
#include "cute/mla_decode/paged_sm90_fp8/paged_sm90_fp8_v4/api.hpp"
#include "cute/mla_decode/paged_sm90_fp8/paged_sm90_fp8_v4/config.hpp"
#include "cutelab/runtime/registry.hpp"

namespace cutelab::mla::paged_sm90_fp8_v4 {
namespace {

struct Version {
  static KernelId id() { return {"cute", "mla_decode", "paged_sm90_fp8", "v4"}; }
  static std::string summary() {
    return "FP8 KV (fp8_tensor) on FP8 tensor cores, v2 with the softmax of page g + 1 overlapping both P V "
           "of page g (S issued ahead of them); split-KV on the GPU";
  }
  static paged_sm90::MainKernel main_kernel(DType dtype, KvFormat kv) {
    return paged_sm90_fp8_v4::main_kernel(dtype, kv);
  }
  static constexpr int kRegistersPerSm =  // after setmaxnreg
      128 * Traits::kProducerRegisters + 128 * Traits::kWarpgroups * Traits::kConsumerRegisters;
  static constexpr int kThreads = Traits::kThreads;
  static constexpr int kStages = Traits::kStages;
  static constexpr int kMinBlocksPerPart[] = {1, 4, 16};
  // q and P are rounded to e4m3 before the tensor cores: the outputs carry that error too.
  static constexpr MlaArithmetic kArithmetic = MlaArithmetic::e4m3_q_and_p;
};

CUTELAB_REGISTER_PLAN(paged_sm90::VersionPlan<Version>);

}  // namespace
}  // namespace cutelab::mla::paged_sm90_fp8_v4
