// The KernelPlan of paged_sm90_fp8 v13 (the shared paged_sm90 plan with this version's main kernel).

#include "cute/mla_decode/paged_sm90/common/plan.hpp"
#include "cute/mla_decode/paged_sm90_fp8/common/tensor_core_version.hpp"
#include "cute/mla_decode/paged_sm90_fp8/paged_sm90_fp8_v10/api.hpp"
#include "cute/mla_decode/paged_sm90_fp8/paged_sm90_fp8_v13/api.hpp"
#include "cute/mla_decode/paged_sm90_fp8/paged_sm90_fp8_v13/config.hpp"
#include "cutelab/runtime/registry.hpp"

namespace cutelab::mla::paged_sm90_fp8_v13 {
namespace {

struct Version : paged_sm90_fp8::TensorCoreVersion<Traits> {
  static KernelId id() { return {"cute", "mla_decode", "paged_sm90_fp8", "v13"}; }
  static std::string summary() {
    return "FP8 KV (fp8_tensor) on FP8 tensor cores: up to 32 query rows a KV head, one warpgroup owns S and "
           "the softmax, the other all of P V as O^T = V^T P^T (V^T straight from the staged page into its "
           "registers, no V^T copy); more rows run v10's kernel; split-KV on the GPU";
  }
  // O^T's N is the tile's live rows: more rows a KV head than Traits::kRows run v10's kernel (the
  // fastest there; `cutelab run` names the kernel it launched).
  static paged_sm90::MainKernel main_kernel_for_rows(DType dtype, KvFormat kv, int rows) {
    return rows > Traits::kRows ? paged_sm90_fp8_v10::main_kernel(dtype, kv) : main_kernel(dtype, kv);
  }
  static paged_sm90::MainKernel main_kernel(DType dtype, KvFormat kv) {
    return paged_sm90_fp8_v13::main_kernel(dtype, kv);
  }
};

CUTELAB_REGISTER_PLAN(paged_sm90::VersionPlan<Version>);

}  // namespace
}  // namespace cutelab::mla::paged_sm90_fp8_v13
