#pragma once
// A kernel plan that needs no GPU: its configs differ in shared memory so validate() can be
// exercised against made-up devices, and its name is settable for registry tests.

#include <memory>
#include <string>

#include "cutelab/runtime/plan.hpp"

namespace cutelab::testing {

struct FakeProblem {
  std::int64_t n = 0;
  static const Family& family() {
    static const Family f{"fake", "test family", {{"n", "size", ParamSpec::Kind::integer, "1024", 1, 1 << 30, {}}}, {}};
    return f;
  }
  static FakeProblem from(const Problem& p) {
    FakeProblem f;
    f.n = p.integer("n");
    CUTELAB_REQUIRE(f.n % 8 == 0, "n (", f.n, ") must be a multiple of 8");
    return f;
  }
};

struct FakeConfig {
  int tile = 64;
  std::size_t smem = 0;
  int regs = 128;
  [[nodiscard]] std::string name() const { return "tile" + std::to_string(tile); }
  [[nodiscard]] nlohmann::json to_json() const { return {{"tile", tile}, {"smem", smem}, {"regs", regs}}; }
  [[nodiscard]] std::optional<std::string> validate(const FakeProblem& p, const DeviceInfo& dev) const {
    if (smem > dev.smem_per_block_optin)
      return concat("needs ", smem, " B of shared memory, the device allows ", dev.smem_per_block_optin, " per block");
    if (regs > dev.max_regs_per_thread)
      return concat("needs ", regs, " registers per thread, the device allows ", dev.max_regs_per_thread);
    if (p.n % tile != 0) return concat("n (", p.n, ") is not a multiple of the tile (", tile, ")");
    return std::nullopt;
  }
};

class FakeWorkspace : public Workspace {
 public:
  [[nodiscard]] std::vector<OutputSpec> outputs() const override { return {}; }
};

class FakePlan : public TypedPlan<FakeProblem, FakeConfig, FakeWorkspace> {
 public:
  explicit FakePlan(std::string full = "cute/fake/smem_sweep/v1", ArchRequirement arch = {8, 0, false})
      : id_(*KernelId::parse(full)), arch_(arch) {}
  [[nodiscard]] KernelId id() const override { return id_; }
  [[nodiscard]] ArchRequirement arch() const override { return arch_; }
  [[nodiscard]] std::string summary() const override { return "fake"; }

 protected:
  std::unique_ptr<FakeWorkspace> make_inputs(const FakeProblem&, std::uint64_t) const override {
    return std::make_unique<FakeWorkspace>();
  }
  std::vector<std::vector<float>> make_reference(const FakeProblem&, FakeWorkspace&) const override { return {}; }
  std::vector<FakeConfig> make_configs(const FakeProblem&, const DeviceInfo&) const override {
    // 96 KB fits every device listed; 160 KB fits sm_80 (163 KB) and sm_90 (227 KB);
    // 200 KB only sm_90; 255+ registers nowhere.
    return {{64, 96 * 1024, 128}, {128, 160 * 1024, 168}, {256, 200 * 1024, 232}, {512, 16 * 1024, 256}};
  }
  Cost make_cost(const FakeProblem& p) const override {
    return {2.0 * static_cast<double>(p.n), 4.0 * static_cast<double>(p.n)};
  }
  Kernel make_kernel(const FakeProblem&, const FakeConfig&, FakeWorkspace&, const DeviceInfo&) const override {
    Kernel k;
    k.launch = [](cudaStream_t) {};
    return k;
  }

 private:
  KernelId id_;
  ArchRequirement arch_;
};

}  // namespace cutelab::testing
