#include "cli/fake_plan.hpp"

#include "cutelab/runtime/registry.hpp"

namespace cutelab::testing {

const Family& FakeProblem::family() {
  static const Family f = [] {
    Family fam;
    fam.name = "testfam";
    fam.description = "a family for the CLI tests";
    ParamSpec n;
    n.name = "n";
    n.help = "elements";
    n.default_value = "1024";
    n.min = 1;
    n.max = 1 << 20;
    ParamSpec mode;
    mode.name = "mode";
    mode.help = "how";
    mode.kind = ParamSpec::Kind::choice;
    mode.default_value = "fast";
    mode.choices = {"fast", "exact"};
    ParamSpec flag;
    flag.name = "flag";
    flag.help = "a switch";
    flag.kind = ParamSpec::Kind::boolean;
    flag.default_value = "false";
    // "h" as in attention heads: a long flag "--h" next to the short help flag "-h".
    ParamSpec h;
    h.name = "h";
    h.help = "heads";
    h.default_value = "1";
    h.min = 1;
    h.max = 128;
    fam.params = {n, mode, flag, h};
    fam.sanitize_problem = {{"n", "64"}};
    return fam;
  }();
  return f;
}

FakeProblem FakeProblem::from(const Problem& p) {
  FakeProblem out{p.integer("n"), p.choice("mode"), p.boolean("flag")};
  CUTELAB_REQUIRE(out.n % 8 == 0, "n (", out.n, ") must be a multiple of 8");
  return out;
}

std::optional<std::string> FakeConfig::validate(const FakeProblem& p, const DeviceInfo&) const {
  if (p.n % vec != 0) return concat("n (", p.n, ") is not a multiple of vec (", vec, ")");
  return std::nullopt;
}

namespace {

// Needs an architecture no GPU has, so even on a machine with a GPU the CLI stops at the
// arch gate and never reaches make_inputs().
template <int Version, const char* Tier, const char* Design>
class FakePlan final : public TypedPlan<FakeProblem, FakeConfig, FakeWorkspace> {
 public:
  [[nodiscard]] KernelId id() const override {
    return {Tier, "testfam", Design, "v" + std::to_string(Version)};
  }
  [[nodiscard]] ArchRequirement arch() const override { return {99, 0, true}; }
  [[nodiscard]] std::string summary() const override { return "fake kernel for the CLI tests"; }

 protected:
  std::unique_ptr<FakeWorkspace> make_inputs(const FakeProblem&, std::uint64_t) const override {
    throw Error("the fake plan cannot make inputs");
  }
  std::vector<std::vector<float>> make_reference(const FakeProblem&, FakeWorkspace&) const override {
    return {};
  }
  std::vector<FakeConfig> make_configs(const FakeProblem&, const DeviceInfo&) const override {
    return {FakeConfig{1}, FakeConfig{8}};
  }
  Cost make_cost(const FakeProblem& p) const override { return {0.0, 4.0 * static_cast<double>(p.n)}; }
  Kernel make_kernel(const FakeProblem&, const FakeConfig&, FakeWorkspace&,
                     const DeviceInfo&) const override {
    throw Error("the fake plan cannot make kernels");
  }
};

constexpr char kCute[] = "cute";
constexpr char kBaseline[] = "baseline";
constexpr char kFast[] = "fast";
constexpr char kNaive[] = "naive";
using FastV1 = FakePlan<1, kCute, kFast>;
using FastV2 = FakePlan<2, kCute, kFast>;
using NaiveV1 = FakePlan<1, kBaseline, kNaive>;

}  // namespace

CUTELAB_REGISTER_PLAN(FastV1);
CUTELAB_REGISTER_PLAN(FastV2);
CUTELAB_REGISTER_PLAN(NaiveV1);
CUTELAB_FAMILY_DEFAULT("testfam", "cute/testfam/fast");

}  // namespace cutelab::testing
