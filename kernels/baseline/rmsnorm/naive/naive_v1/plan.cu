// The KernelPlan of baseline/rmsnorm/naive/v1.

#include <memory>

#include "baseline/rmsnorm/naive/naive_v1/config.hpp"
#include "baseline/rmsnorm/naive/naive_v1/launch.cuh"
#include "cutelab/runtime/registry.hpp"
#include "rmsnorm/common/plan_base.hpp"
#include "rmsnorm/common/workspace.hpp"
#include "rmsnorm/reference/reference.hpp"

namespace cutelab::rmsnorm::naive_v1 {
namespace {

class NaiveV1Plan final : public RmsNormPlanBase<Config> {
 public:
  [[nodiscard]] KernelId id() const override { return {"baseline", "rmsnorm", "naive", "v1"}; }
  [[nodiscard]] ArchRequirement arch() const override { return {8, 0, false}; }
  [[nodiscard]] std::string summary() const override {
    return "RMSNorm bf16, plain CUDA, a block per row, two scalar passes";
  }

 protected:
  [[nodiscard]] std::vector<Config> make_configs(const RmsNormProblem& /*p*/,
                                                 const DeviceInfo& /*dev*/) const override {
    return all_configs();
  }
  [[nodiscard]] Kernel make_kernel(const RmsNormProblem& p, const Config& c, RmsNormWorkspace& ws,
                                   const DeviceInfo& /*dev*/) const override {
    CUTELAB_REQUIRE(ws.rows() == p.rows && ws.cols() == p.cols, "rmsnorm naive v1: workspace holds ",
                    ws.rows(), "x", ws.cols(), ", problem is ", p.rows, "x", p.cols);
    return plan_launch(ws.x(), ws.w(), ws.y(), c);
  }
};

}  // namespace

CUTELAB_REGISTER_PLAN(NaiveV1Plan);

}  // namespace cutelab::rmsnorm::naive_v1
