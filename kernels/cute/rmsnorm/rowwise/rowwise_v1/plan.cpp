// The KernelPlan of cute/rmsnorm/rowwise/v1, and the family's default design.

#include <memory>
#include <utility>

#include <nlohmann/json.hpp>

#include "cute/rmsnorm/rowwise/rowwise_v1/config.hpp"
#include "cute/rmsnorm/rowwise/rowwise_v1/launch.hpp"
#include "cutelab/runtime/registry.hpp"
#include "rmsnorm/common/plan_base.hpp"
#include "rmsnorm/common/workspace.hpp"
#include "rmsnorm/reference/reference.hpp"

namespace cutelab::rmsnorm::rowwise_v1 {

nlohmann::json Config::to_json() const {
  return {{"threads_per_row", threads_per_row},
          {"vecs_per_thread", vecs},
          {"rows_per_cta", rows_per_cta},
          {"block_threads", block_threads()},
          {"max_cols", max_cols()}};
}

namespace {

// Runtime config -> the compiled variant.
template <std::size_t I = 0>
PlannedLaunch dispatch(const Args& args, const Config& c) {
  if constexpr (I == kCompiled.size()) {
    throw Error(concat("rmsnorm rowwise v1: config ", c.name(), " is not compiled in"));
  } else {
    constexpr Variant v = kCompiled[I];
    if (c.threads_per_row == v.threads_per_row && c.vecs == v.vecs && c.rows_per_cta == v.rows_per_cta)
      return plan_launch<v.threads_per_row, v.vecs, v.rows_per_cta>(args);
    return dispatch<I + 1>(args, c);
  }
}

class RowwiseV1Plan final : public RmsNormPlanBase<Config> {
 public:
  [[nodiscard]] KernelId id() const override { return {"cute", "rmsnorm", "rowwise", "v1"}; }
  [[nodiscard]] ArchRequirement arch() const override { return {8, 0, false}; }
  [[nodiscard]] std::string summary() const override {
    return "RMSNorm bf16, a row per warp or block kept in registers, CuTe 16-byte vectors";
  }

 protected:
  [[nodiscard]] std::vector<Config> make_configs(const RmsNormProblem& p,
                                                 const DeviceInfo& /*dev*/) const override {
    return ranked_configs(p);
  }
  [[nodiscard]] Kernel make_kernel(const RmsNormProblem& p, const Config& c, RmsNormWorkspace& ws,
                                   const DeviceInfo& /*dev*/) const override {
    CUTELAB_REQUIRE(ws.rows() == p.rows && ws.cols() == p.cols, "rmsnorm rowwise v1: workspace holds ",
                    ws.rows(), "x", ws.cols(), ", problem is ", p.rows, "x", p.cols);
    PlannedLaunch planned = dispatch(Args{ws.x().data, ws.w().data, ws.y().data, p.rows, p.cols, kEps}, c);
    Kernel k;
    k.launch = std::move(planned.launch);
    k.resources = {std::move(planned.resources)};
    return k;
  }
};

}  // namespace

CUTELAB_REGISTER_PLAN(RowwiseV1Plan);
CUTELAB_FAMILY_DEFAULT("rmsnorm", "cute/rmsnorm/rowwise");

}  // namespace cutelab::rmsnorm::rowwise_v1
