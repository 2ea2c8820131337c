#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cutelab/runtime/device.hpp"
#include "cutelab/runtime/registry.hpp"
#include "cutelab/runtime/tuner.hpp"
#include "fake_plan.hpp"

namespace cutelab {
namespace {

using testing::FakePlan;

DeviceInfo fake_device(int major, int minor) {
  const DeviceDb db = DeviceDb::load(std::string(CUTELAB_SOURCE_DIR) + "/conf/devices.json");
  LiveProperties live;
  live.name = "made-up";
  live.cc_major = major;
  live.cc_minor = minor;
  return merge_device_info(db, live);
}

std::vector<std::string> valid_configs(const KernelPlan& plan, const Problem& p, const DeviceInfo& dev,
                                       std::vector<std::string>* reasons = nullptr) {
  std::vector<std::string> ok;
  for (const ConfigDesc& c : plan.configs(p, dev)) {
    const auto why = plan.validate(p, c, dev);
    if (!why) ok.push_back(c.name);
    else if (reasons) reasons->push_back(c.name + ": " + *why);
  }
  return ok;
}

TEST(ConfigValidation, SharedMemoryLimitFollowsTheDevice) {
  const FakePlan plan;
  const Problem p = make_problem(plan.family(), std::map<std::string, std::string>{{"n", "4096"}});
  std::vector<std::string> why80;
  EXPECT_EQ(valid_configs(plan, p, fake_device(8, 0), &why80), (std::vector<std::string>{"tile64", "tile128"}));
  EXPECT_EQ(valid_configs(plan, p, fake_device(9, 0)), (std::vector<std::string>{"tile64", "tile128", "tile256"}));
  EXPECT_EQ(valid_configs(plan, p, fake_device(12, 0)), (std::vector<std::string>{"tile64"}));
  ASSERT_EQ(why80.size(), 2u);
  EXPECT_NE(why80[0].find("tile256: needs 204800 B of shared memory, the device allows 166912"), std::string::npos)
      << why80[0];
  EXPECT_NE(why80[1].find("256 registers per thread"), std::string::npos) << why80[1];
}

TEST(ConfigValidation, DivisibilityAndUnknownConfigs) {
  const FakePlan plan;
  const DeviceInfo h100 = fake_device(9, 0);
  const Problem p = make_problem(plan.family(), std::map<std::string, std::string>{{"n", "192"}});
  EXPECT_EQ(valid_configs(plan, p, h100), (std::vector<std::string>{"tile64"}));
  const auto why = plan.validate(p, ConfigDesc{"tile999", {}}, h100);
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("unknown config 'tile999'"), std::string::npos);
  auto ws = plan.inputs(p, 1);
  EXPECT_THROW((void)plan.plan(p, ConfigDesc{"tile128", {}}, *ws, h100), UsageError);
  const Kernel k = plan.plan(p, ConfigDesc{"tile64", {}}, *ws, h100);
  EXPECT_EQ(k.name, "cute/fake/smem_sweep/v1");
  EXPECT_EQ(k.config, "tile64");
  EXPECT_EQ(k.cost.flops, 2.0 * 192);
  // An impossible problem is the user's error, raised before anything runs.
  const Problem odd = make_problem(plan.family(), std::map<std::string, std::string>{{"n", "100"}});
  EXPECT_THROW(plan.check_problem(odd), UsageError);
}

TEST(KernelIdTest, ParseFullAndVersion) {
  const auto id = KernelId::parse("cute/mla_decode/paged_sm90/v12");
  ASSERT_TRUE(id);
  EXPECT_EQ(id->tier, "cute");
  EXPECT_EQ(id->design, "paged_sm90");
  EXPECT_EQ(id->version_number(), 12);
  EXPECT_EQ(id->full(), "cute/mla_decode/paged_sm90/v12");
  EXPECT_FALSE(KernelId::parse("cute/mla_decode/paged_sm90"));
  EXPECT_FALSE(KernelId::parse("cute/mla_decode//v1"));
  EXPECT_FALSE(KernelId::parse("a/b/c/d/e"));
  EXPECT_EQ(KernelId::parse("a/b/c/vx")->version_number(), 0);
}

class RegistryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* name : {"cute/gemm/wgmma_tma_sm90/v1", "cute/gemm/wgmma_tma_sm90/v2", "cute/gemm/wgmma_tma_sm90/v10",
                             "cute/gemm/simple/v1", "baseline/gemm/cublas/v1", "cute/rmsnorm/rowwise/v1",
                             "cute/rmsnorm/rowwise/v2", "cute/mla_decode/paged_sm90/v1", "cute/mla_decode/split_sm90/v3"})
      reg.add(std::make_unique<FakePlan>(name));
    reg.set_family_default("gemm", "cute/gemm/wgmma_tma_sm90");
  }
  std::string find(const std::string& q) { return reg.find(q).id().full(); }
  std::string error(const std::string& q) {
    try {
      (void)reg.find(q);
    } catch (const UsageError& e) {
      return e.message();
    }
    ADD_FAILURE() << q << " should not resolve";
    return {};
  }
  Registry reg;
};

TEST_F(RegistryTest, FullNamePrefixAndFamily) {
  EXPECT_EQ(find("cute/gemm/wgmma_tma_sm90/v2"), "cute/gemm/wgmma_tma_sm90/v2");
  EXPECT_EQ(find("cute/gemm/wgmma_tma_sm90"), "cute/gemm/wgmma_tma_sm90/v10");  // newest: 10 > 2 (not text order)
  EXPECT_EQ(find("cute/gemm/wgmma_tma_sm90/"), "cute/gemm/wgmma_tma_sm90/v10");
  EXPECT_EQ(find("gemm"), "cute/gemm/wgmma_tma_sm90/v10");                   // the family default
  EXPECT_EQ(find("cute/gemm"), "cute/gemm/wgmma_tma_sm90/v10");              // one family: default decides
  EXPECT_EQ(find("rmsnorm"), "cute/rmsnorm/rowwise/v2");                      // the only design
  EXPECT_EQ(find("gemm/simple"), "cute/gemm/simple/v1");                      // without the tier
  EXPECT_EQ(find("rmsnorm/rowwise/v1"), "cute/rmsnorm/rowwise/v1");
  EXPECT_EQ(find("baseline/gemm"), "baseline/gemm/cublas/v1");
  EXPECT_EQ(find("split_sm90"), "cute/mla_decode/split_sm90/v3");             // a design name
}

TEST_F(RegistryTest, AmbiguousAndUnknownListCandidates) {
  const std::string amb = error("mla_decode");  // two designs and no default
  EXPECT_NE(amb.find("ambiguous"), std::string::npos) << amb;
  EXPECT_NE(amb.find("cute/mla_decode/paged_sm90/v1"), std::string::npos) << amb;
  EXPECT_NE(amb.find("cute/mla_decode/split_sm90/v3"), std::string::npos) << amb;
  const std::string cute = error("cute");  // several families
  EXPECT_NE(cute.find("ambiguous"), std::string::npos) << cute;
  const std::string unknown = error("rmsnrm/rowwise");
  EXPECT_NE(unknown.find("no kernel matches 'rmsnrm/rowwise'"), std::string::npos) << unknown;
  EXPECT_NE(unknown.find("cute/rmsnorm/rowwise/v1"), std::string::npos) << unknown;  // close names
  EXPECT_EQ(unknown.find("gemm"), std::string::npos) << unknown;
  EXPECT_NE(error("cute/gemm/wgmma_tma_sm90/v3").find("no kernel matches"), std::string::npos);
  EXPECT_THROW((void)reg.find(""), UsageError);
}

TEST_F(RegistryTest, RegistrationErrors) {
  EXPECT_THROW(reg.add(std::make_unique<FakePlan>("cute/gemm/simple/v1")), Error);
  EXPECT_THROW(reg.add(std::make_unique<FakePlan>("cute/gemm/simple/latest")), Error);
  EXPECT_THROW(reg.set_family_default("gemm", "cute/gemm/simple"), Error);  // a second default
  EXPECT_THROW(reg.set_family_default("rmsnorm", "cute/gemm/simple"), Error);
  const auto all = reg.all();
  ASSERT_EQ(all.size(), 9u);
  EXPECT_EQ(all.front()->id().full(), "baseline/gemm/cublas/v1");
  EXPECT_TRUE(std::is_sorted(all.begin(), all.end(), [](const KernelPlan* a, const KernelPlan* b) {
    return a->id().full() < b->id().full();
  }));
}

TEST(Registry, EmptyRegistrySaysSo) {
  Registry empty;
  try {
    (void)empty.find("gemm");
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_NE(e.message().find("no kernels are registered"), std::string::npos);
  }
}

TEST(RunKernel, ArchGateSkipsBeforeAnythingRuns) {
  const FakePlan plan("cute/fake/hopper_only/v1", {9, 0, true});
  const Problem p = make_problem(plan.family(), std::map<std::string, std::string>{});
  RunOptions options;
  options.config = "does-not-matter";  // the gate comes before config checks
  const RunResult a100 = run_kernel(plan, p, fake_device(8, 0), options, std::nullopt);
  EXPECT_EQ(a100.status, RunResult::Status::skipped);
  EXPECT_EQ(a100.message, "needs sm_90a, found sm_80");
  EXPECT_FALSE(a100.timing);
  EXPECT_TRUE(a100.checks.empty());
  const RunResult none = run_kernel(plan, p, DeviceInfo{}, options, std::nullopt);
  EXPECT_EQ(none.status, RunResult::Status::skipped);
  EXPECT_EQ(none.message, "no CUDA GPU found");
  EXPECT_EQ(std::string(status_name(none.status)), "skipped");
  const nlohmann::json j = none.to_json();
  EXPECT_EQ(j.at("status"), "skipped");
  EXPECT_EQ(j.at("timing"), nullptr);
}

// Configs that refuse every problem with a reason of their own choosing.
struct RefusingConfig {
  std::string label;
  std::string reason;
  [[nodiscard]] std::string name() const { return label; }
  [[nodiscard]] nlohmann::json to_json() const { return {{"label", label}}; }
  [[nodiscard]] std::optional<std::string> validate(const testing::FakeProblem&, const DeviceInfo&) const {
    return reason;
  }
};

class RefusingPlan : public TypedPlan<testing::FakeProblem, RefusingConfig, testing::FakeWorkspace> {
 public:
  explicit RefusingPlan(std::vector<RefusingConfig> configs) : configs_(std::move(configs)) {}
  [[nodiscard]] KernelId id() const override { return *KernelId::parse("cute/fake/refusing/v1"); }
  [[nodiscard]] ArchRequirement arch() const override { return {8, 0, false}; }
  [[nodiscard]] std::string summary() const override { return "refuses everything"; }

 protected:
  std::unique_ptr<testing::FakeWorkspace> make_inputs(const testing::FakeProblem&,
                                                      std::uint64_t) const override {
    ADD_FAILURE() << "inputs made for a problem no config can serve";
    return std::make_unique<testing::FakeWorkspace>();
  }
  std::vector<std::vector<float>> make_reference(const testing::FakeProblem&,
                                                 testing::FakeWorkspace&) const override {
    return {};
  }
  std::vector<RefusingConfig> make_configs(const testing::FakeProblem&, const DeviceInfo&) const override {
    return configs_;
  }
  Cost make_cost(const testing::FakeProblem&) const override { return {1.0, 1.0}; }
  Kernel make_kernel(const testing::FakeProblem&, const RefusingConfig&, testing::FakeWorkspace&,
                     const DeviceInfo&) const override {
    return {};
  }

 private:
  std::vector<RefusingConfig> configs_;
};

// A problem no config can serve is skipped before anything is allocated (no GPU needed here: the
// inputs would be made on one), and one reason shared by several configs is given once.
TEST(RunKernel, NoValidConfigSkipsBeforeInputsAndGroupsReasons) {
  const DeviceInfo hopper = fake_device(9, 0);
  RunOptions options;
  options.tune = true;
  {
    const RefusingPlan plan({{"fo2", "reads no fp8_token KV cache"},
                             {"fo8", "reads no fp8_token KV cache"},
                             {"fo16", "reads no fp8_token KV cache"}});
    const Problem p = make_problem(plan.family(), std::map<std::string, std::string>{});
    const RunResult r = run_kernel(plan, p, hopper, options, std::nullopt);
    EXPECT_EQ(r.status, RunResult::Status::skipped);
    EXPECT_EQ(
        r.message,
        "no valid config for this problem on sm_90: all 3 configs invalid: reads no fp8_token KV cache");
    EXPECT_FALSE(r.timing);
  }
  {
    const RefusingPlan plan(
        {{"a", "needs h_q <= 64"}, {"b", "needs an FP8 cache"}, {"c", "needs h_q <= 64"}});
    const Problem p = make_problem(plan.family(), std::map<std::string, std::string>{});
    const RunResult r = run_kernel(plan, p, hopper, RunOptions{}, std::nullopt);
    EXPECT_EQ(r.status, RunResult::Status::skipped);
    EXPECT_EQ(r.message,
              "no valid config for this problem on sm_90: a, c invalid: needs h_q <= 64; b invalid: needs an "
              "FP8 cache");
  }
  {
    const RefusingPlan plan({});
    const Problem p = make_problem(plan.family(), std::map<std::string, std::string>{});
    const RunResult r = run_kernel(plan, p, hopper, options, std::nullopt);
    EXPECT_EQ(r.status, RunResult::Status::skipped);
    EXPECT_EQ(r.message, "cute/fake/refusing/v1 offers no config for this problem");
  }
}

}  // namespace
}  // namespace cutelab
