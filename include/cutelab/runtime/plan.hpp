#pragma once
// KernelPlan: what every kernel design provides to the runtime (inputs, reference, configs,
// cost, plan), and TypedPlan, which lets a design write it against its own problem, config
// and workspace types.

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "cutelab/core/error.hpp"
#include "cutelab/runtime/check.hpp"
#include "cutelab/runtime/device.hpp"
#include "cutelab/runtime/kernel.hpp"
#include "cutelab/runtime/problem.hpp"
#include "cutelab/runtime/tensor.hpp"

namespace cutelab {

struct KernelId {
  std::string tier;     // cutlass | cute | baseline
  std::string family;   // mla_decode, gemm, rmsnorm, elementwise
  std::string design;   // paged_sm90, wgmma_tma_sm90, ...
  std::string version;  // v1, v2, ...

  [[nodiscard]] std::string full() const;  // "cute/mla_decode/paged_sm90/v1"
  [[nodiscard]] int version_number() const;  // 1 for "v1"; 0 when not of the form vN
  static std::optional<KernelId> parse(std::string_view full);
};

struct ConfigDesc {
  std::string name;        // stable, short: "rows4_vec8"
  nlohmann::json params;   // every knob, for reports
};

struct OutputSpec {
  std::string name;
  TensorView view;
  Tolerance tol;
};

// Device buffers of one problem instance: inputs, outputs, scratch. Owned by the caller of
// KernelPlan::inputs(); a Kernel planned on it launches on these buffers.
class Workspace {
 public:
  virtual ~Workspace() = default;
  // Outputs in the order the reference returns them.
  [[nodiscard]] virtual std::vector<OutputSpec> outputs() const = 0;
  // Writes the poison pattern into every output. Override to poison scratch too.
  virtual void poison(cudaStream_t stream);
};

class KernelPlan {
 public:
  virtual ~KernelPlan() = default;

  [[nodiscard]] virtual KernelId id() const = 0;
  [[nodiscard]] virtual const Family& family() const = 0;
  [[nodiscard]] virtual ArchRequirement arch() const = 0;
  [[nodiscard]] virtual std::string summary() const = 0;  // one line for `cutelab list`

  // Throws UsageError when the problem cannot be run by this design at all.
  virtual void check_problem(const Problem& problem) const = 0;
  [[nodiscard]] virtual std::unique_ptr<Workspace> inputs(const Problem& problem, std::uint64_t seed) const = 0;
  // Higher-precision result, one host array per output of Workspace::outputs().
  [[nodiscard]] virtual std::vector<std::vector<float>> reference(const Problem& problem, Workspace& ws) const = 0;
  [[nodiscard]] virtual std::vector<ConfigDesc> configs(const Problem& problem, const DeviceInfo& dev) const = 0;
  // Why this config cannot run this problem on this device; nothing when it can.
  [[nodiscard]] virtual std::optional<std::string> validate(const Problem& problem, const ConfigDesc& config,
                                                            const DeviceInfo& dev) const = 0;
  [[nodiscard]] virtual Cost cost(const Problem& problem) const = 0;
  // Throws UsageError when validate() would give a reason.
  [[nodiscard]] virtual Kernel plan(const Problem& problem, const ConfigDesc& config, Workspace& ws,
                                    const DeviceInfo& dev) const = 0;
};

// ProblemT: static const Family& family(); static ProblemT from(const Problem&) (throws UsageError).
// ConfigT:  std::string name() const; nlohmann::json to_json() const;
//           std::optional<std::string> validate(const ProblemT&, const DeviceInfo&) const.
// WorkspaceT: derives from Workspace.
template <class ProblemT, class ConfigT, class WorkspaceT>
class TypedPlan : public KernelPlan {
 public:
  [[nodiscard]] const Family& family() const final { return ProblemT::family(); }
  void check_problem(const Problem& problem) const final { (void)ProblemT::from(problem); }

  [[nodiscard]] std::unique_ptr<Workspace> inputs(const Problem& problem, std::uint64_t seed) const final {
    return make_inputs(ProblemT::from(problem), seed);
  }
  [[nodiscard]] std::vector<std::vector<float>> reference(const Problem& problem, Workspace& ws) const final {
    return make_reference(ProblemT::from(problem), downcast(ws));
  }
  [[nodiscard]] std::vector<ConfigDesc> configs(const Problem& problem, const DeviceInfo& dev) const final {
    std::vector<ConfigDesc> out;
    for (const ConfigT& c : make_configs(ProblemT::from(problem), dev)) out.push_back({c.name(), c.to_json()});
    return out;
  }
  [[nodiscard]] std::optional<std::string> validate(const Problem& problem, const ConfigDesc& config,
                                                    const DeviceInfo& dev) const final {
    const ProblemT p = ProblemT::from(problem);
    const std::optional<ConfigT> c = find_config(p, config.name, dev);
    if (!c) return concat("unknown config '", config.name, "' for ", id().full());
    return c->validate(p, dev);
  }
  [[nodiscard]] Cost cost(const Problem& problem) const final { return make_cost(ProblemT::from(problem)); }
  [[nodiscard]] Kernel plan(const Problem& problem, const ConfigDesc& config, Workspace& ws,
                            const DeviceInfo& dev) const final {
    const ProblemT p = ProblemT::from(problem);
    const std::optional<ConfigT> c = find_config(p, config.name, dev);
    if (!c) throw UsageError(concat("unknown config '", config.name, "' for ", id().full()));
    if (auto why = c->validate(p, dev)) throw UsageError(concat("config ", config.name, " cannot run: ", *why));
    Kernel k = make_kernel(p, *c, downcast(ws), dev);
    k.name = id().full();
    k.config = c->name();
    k.arch = arch();
    k.cost = make_cost(p);
    return k;
  }

 protected:
  [[nodiscard]] virtual std::unique_ptr<WorkspaceT> make_inputs(const ProblemT& p, std::uint64_t seed) const = 0;
  [[nodiscard]] virtual std::vector<std::vector<float>> make_reference(const ProblemT& p, WorkspaceT& ws) const = 0;
  // Every config worth trying for this problem, valid or not (the tuner reports the invalid ones).
  [[nodiscard]] virtual std::vector<ConfigT> make_configs(const ProblemT& p, const DeviceInfo& dev) const = 0;
  [[nodiscard]] virtual Cost make_cost(const ProblemT& p) const = 0;
  [[nodiscard]] virtual Kernel make_kernel(const ProblemT& p, const ConfigT& c, WorkspaceT& ws,
                                           const DeviceInfo& dev) const = 0;

 private:
  [[nodiscard]] std::optional<ConfigT> find_config(const ProblemT& p, const std::string& name,
                                                   const DeviceInfo& dev) const {
    for (const ConfigT& c : make_configs(p, dev))
      if (c.name() == name) return c;
    return std::nullopt;
  }
  static WorkspaceT& downcast(Workspace& ws) {
    auto* typed = dynamic_cast<WorkspaceT*>(&ws);
    if (!typed) throw Error("workspace of the wrong type passed to a kernel plan");
    return *typed;
  }
};

}  // namespace cutelab
