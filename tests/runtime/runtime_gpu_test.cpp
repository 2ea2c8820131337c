// Device fills, copies, checks and timing on a real GPU; skipped, with the reason, without one.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "cutelab/runtime/ceilings.hpp"
#include "cutelab/runtime/check.hpp"
#include "cutelab/runtime/device.hpp"
#include "cutelab/runtime/energy.hpp"
#include "cutelab/runtime/tensor.hpp"
#include "cutelab/runtime/timing.hpp"
#include "cutelab/runtime/tuner.hpp"

namespace cutelab {
namespace {

class RuntimeGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (cuda_device_count(&why) == 0) GTEST_SKIP() << why;
    dev = query_device(0, DeviceDb::load_default());
  }
  DeviceInfo dev;
};

TEST_F(RuntimeGpu, SameSeedSameValuesAnyDtype) {
  // Odd sizes: tails of every grid-stride loop.
  for (DType t : {DType::bf16, DType::f16, DType::f32, DType::f64, DType::e4m3, DType::e5m2, DType::i32, DType::u8}) {
    DeviceTensor a(t, {3, 1001}), b(t, {3, 1001}), c(t, {3, 1001});
    fill_uniform(a.view(), 42, -2.0, 2.0);
    fill_uniform(b.view(), 42, -2.0, 2.0);
    fill_uniform(c.view(), 43, -2.0, 2.0);
    const auto ha = copy_to_host_bytes(a.view()), hb = copy_to_host_bytes(b.view()), hc = copy_to_host_bytes(c.view());
    EXPECT_EQ(ha, hb) << dtype_name(t);
    EXPECT_NE(ha, hc) << dtype_name(t);
  }
}

TEST_F(RuntimeGpu, UniformStaysInRangeAndNormalHasItsMoments) {
  DeviceTensor u(DType::f32, {1 << 20});
  fill_uniform(u.view(), 7, -0.5, 1.5);
  const std::vector<float> hu = copy_to_host<float>(u.view());
  const auto [lo, hi] = std::minmax_element(hu.begin(), hu.end());
  EXPECT_GE(*lo, -0.5f);
  EXPECT_LT(*hi, 1.5f);
  EXPECT_LT(*lo, -0.49f);  // the range is actually covered
  EXPECT_GT(*hi, 1.49f);

  DeviceTensor n(DType::f32, {1 << 20});
  fill_normal(n.view(), 9, 1.0, 2.0);
  const std::vector<float> hn = copy_to_host<float>(n.view());
  double sum = 0, sum2 = 0;
  for (float v : hn) sum += v, sum2 += static_cast<double>(v) * v;
  const double mean = sum / hn.size(), var = sum2 / hn.size() - mean * mean;
  EXPECT_NEAR(mean, 1.0, 0.02);           // 6 standard errors of the mean (2/1024)
  EXPECT_NEAR(std::sqrt(var), 2.0, 0.02);

  DeviceTensor ints(DType::i32, {4099});
  fill_uniform(ints.view(), 3, 0, 9);
  const std::vector<int> hi32 = copy_to_host<int>(ints.view());
  EXPECT_EQ(*std::min_element(hi32.begin(), hi32.end()), 0);
  EXPECT_EQ(*std::max_element(hi32.begin(), hi32.end()), 9);
}

TEST_F(RuntimeGpu, PoisonIsDetectedAfterCopyBack) {
  for (DType t : {DType::bf16, DType::f16, DType::f32, DType::e4m3, DType::i32}) {
    DeviceTensor y(t, {257});
    fill_poison(y.view());
    const auto bytes = copy_to_host_bytes(y.view());
    for (std::size_t i = 0; i < 257; ++i) ASSERT_TRUE(is_poison(t, bytes.data(), i)) << dtype_name(t) << " " << i;
    const std::vector<float> ref(257, 1.0f);
    const CheckResult r = check_output("y", t, bytes.data(), ref, {1e-2, 1e-2, 1e-2});
    EXPECT_EQ(r.unwritten, 257u) << dtype_name(t);
    EXPECT_FALSE(r.passed);
  }
  // A strided view poisons only its own elements.
  DeviceTensor base(DType::f32, {4, 8});
  fill_constant(base.view(), 0.0);
  TensorView column{base.data(), DType::f32, {4}, {8}};
  fill_poison(column);
  const std::vector<std::uint8_t> all = copy_to_host_bytes(base.view());
  for (std::size_t i = 0; i < 32; ++i) EXPECT_EQ(is_poison(DType::f32, all.data(), i), i % 8 == 0) << i;
}

TEST_F(RuntimeGpu, DeviceTensorRoundTripChecksClean) {
  std::vector<float> host(1000);
  for (std::size_t i = 0; i < host.size(); ++i) host[i] = std::sin(0.01f * static_cast<float>(i));
  const DeviceTensor t = DeviceTensor::from_host(DType::f32, {10, 100}, host);
  const auto bytes = copy_to_host_bytes(t.view());
  const CheckResult r = check_output("t", DType::f32, bytes.data(), host, {0, 0, 1e-12});
  EXPECT_TRUE(r.passed) << r.reason;
  EXPECT_EQ(r.rel_l2, 0.0);
  EXPECT_EQ(copy_to_host_float(t.view()), host);
}

TEST_F(RuntimeGpu, TimeLaunchGivesSaneStats) {
  DeviceTensor x(DType::f32, {1 << 22});  // 16 MiB
  TimingOptions o;
  o.min_samples = 20;
  o.max_seconds = 0.5;
  const TimingStats s = time_launch([&](cudaStream_t st) { fill_constant(x.view(), 1.0, st); }, dev, o, nullptr);
  EXPECT_GE(s.n, 20);
  EXPECT_GT(s.median_us, 0);
  EXPECT_LT(s.median_us, 100000);
  EXPECT_LE(s.p10_us, s.median_us);
  EXPECT_LE(s.median_us, s.p90_us);
  EXPECT_LE(s.min_us, s.p10_us);
  EXPECT_EQ(s.stop_reason.find("direct launches"), std::string::npos) << s.stop_reason;  // the graph captured
  EXPECT_TRUE(s.stop_reason.rfind("converged", 0) == 0 || s.stop_reason.rfind("time cap", 0) == 0 ||
              s.stop_reason.rfind("sample cap", 0) == 0)
      << s.stop_reason;

  // A launch that cannot be captured (it synchronizes its stream, which capture forbids; a
  // legacy-stream cudaMemcpy is not enough: it simply runs outside the graph) falls back and says so.
  const TimingStats d = time_launch(
      [&](cudaStream_t st) {
        fill_constant(x.view(), 1.0, st);
        CUTELAB_CUDA(cudaStreamSynchronize(st));
      },
      dev, o, nullptr);
  EXPECT_GE(d.n, 20);
  EXPECT_NE(d.stop_reason.find("direct launches"), std::string::npos) << d.stop_reason;
}

TEST_F(RuntimeGpu, QueryDeviceMergesLiveValues) {
  EXPECT_TRUE(dev.present);
  EXPECT_FALSE(dev.name.empty());
  EXPECT_GT(dev.sm_count, 0);
  EXPECT_GT(dev.smem_per_block_optin, 0u);
  EXPECT_EQ(dev.source.at("sm_count"), "live");
  EXPECT_FALSE(dev.runtime_version.empty());
}

// A "kernel" made of runtime fills, so the tuner's bookkeeping can be checked on any GPU.
struct FillProblem {
  std::int64_t n = 0;
  static const Family& family() {
    static const Family f{"fill", "test", {{"n", "size", ParamSpec::Kind::integer, "10007", 1, 1 << 28, {}}}, {}};
    return f;
  }
  static FillProblem from(const Problem& p) { return {p.integer("n")}; }
};
struct FillConfig {
  std::string kind;  // good | wrong | half | huge
  [[nodiscard]] std::string name() const { return kind; }
  [[nodiscard]] nlohmann::json to_json() const { return {{"kind", kind}}; }
  [[nodiscard]] std::optional<std::string> validate(const FillProblem&, const DeviceInfo& dev) const {
    if (kind == "huge") return concat("needs more shared memory than ", dev.smem_per_block_optin, " B");
    return std::nullopt;
  }
};
class FillWorkspace : public Workspace {
 public:
  explicit FillWorkspace(std::int64_t n) : y(DType::bf16, {n}) {}
  [[nodiscard]] std::vector<OutputSpec> outputs() const override { return {{"y", y.view(), {1e-2, 1e-2, 1e-2}}}; }
  DeviceTensor y;
};
class FillPlan : public TypedPlan<FillProblem, FillConfig, FillWorkspace> {
 public:
  [[nodiscard]] KernelId id() const override { return {"baseline", "fill", "constant", "v1"}; }
  [[nodiscard]] ArchRequirement arch() const override { return {8, 0, false}; }
  [[nodiscard]] std::string summary() const override { return "fills y with 1"; }

 protected:
  std::unique_ptr<FillWorkspace> make_inputs(const FillProblem& p, std::uint64_t) const override {
    return std::make_unique<FillWorkspace>(p.n);
  }
  std::vector<std::vector<float>> make_reference(const FillProblem& p, FillWorkspace&) const override {
    return {std::vector<float>(static_cast<std::size_t>(p.n), 1.0f)};
  }
  std::vector<FillConfig> make_configs(const FillProblem&, const DeviceInfo&) const override {
    return {{"huge"}, {"wrong"}, {"half"}, {"good"}};
  }
  Cost make_cost(const FillProblem& p) const override { return {0, 2.0 * static_cast<double>(p.n)}; }
  Kernel make_kernel(const FillProblem& p, const FillConfig& c, FillWorkspace& ws, const DeviceInfo&) const override {
    Kernel k;
    TensorView v = ws.y.view();
    if (c.kind == "half") v.shape = {p.n / 2};
    const double value = c.kind == "wrong" ? 2.0 : 1.0;
    k.launch = [v, value](cudaStream_t s) { fill_constant(v, value, s); };
    return k;
  }
};

TEST_F(RuntimeGpu, TunerRecordsEveryConfigAndCachesTheWinner) {
  const std::string cache_dir = (std::filesystem::temp_directory_path() / "cutelab-runtime-gpu-test").string();
  std::filesystem::remove_all(cache_dir);
  const FillPlan plan;
  const Problem p = make_problem(plan.family(), std::map<std::string, std::string>{});
  RunOptions o;
  o.tune = true;
  o.cache_dir = cache_dir;
  o.timing.max_seconds = 0.2;
  std::vector<std::string> progress;
  const RunResult tuned = run_kernel(plan, p, dev, o, std::nullopt, [&](const std::string& m) { progress.push_back(m); });
  ASSERT_EQ(tuned.status, RunResult::Status::ok) << tuned.message;
  ASSERT_EQ(tuned.tuning.size(), 4u);
  EXPECT_EQ(tuned.tuning[0].status, ConfigOutcome::Status::invalid);
  EXPECT_EQ(tuned.tuning[1].status, ConfigOutcome::Status::check_failed);
  EXPECT_EQ(tuned.tuning[2].status, ConfigOutcome::Status::check_failed);
  EXPECT_NE(tuned.tuning[2].reason.find("never written"), std::string::npos) << tuned.tuning[2].reason;
  EXPECT_EQ(tuned.tuning[3].status, ConfigOutcome::Status::ok);
  EXPECT_EQ(tuned.config_source, "tuned");
  EXPECT_EQ(tuned.config->name, "good");
  ASSERT_EQ(tuned.checks.size(), 1u);
  EXPECT_TRUE(tuned.checks[0].passed);
  ASSERT_TRUE(tuned.timing);
  EXPECT_GT(tuned.timing->median_us, 0);
  EXPECT_FALSE(progress.empty());
  EXPECT_EQ(tuned.to_json().at("tuning").size(), 4u);

  o.tune = false;
  const RunResult cached = run_kernel(plan, p, dev, o, std::nullopt);
  EXPECT_EQ(cached.config_source, "cache") << cached.message;
  EXPECT_EQ(cached.config->name, "good");

  o.config = "wrong";
  const RunResult forced = run_kernel(plan, p, dev, o, std::nullopt);
  EXPECT_EQ(forced.status, RunResult::Status::check_failed);
  EXPECT_TRUE(forced.timing);  // measured all the same
  o.config = "huge";
  EXPECT_THROW((void)run_kernel(plan, p, dev, o, std::nullopt), UsageError);
  o.config = "nonexistent";
  EXPECT_THROW((void)run_kernel(plan, p, dev, o, std::nullopt), UsageError);
  std::filesystem::remove_all(cache_dir);
}

// A "kernel" with a setup: `setup` fills a scratch buffer that `launch_reusing_setup` copies to
// the output, so the second without the first copies poison. Config "forgets" has a `setup` that
// does nothing (its `launch` is right): only the reusing way can catch it.
struct SetupConfig {
  std::string kind;  // good | forgets
  [[nodiscard]] std::string name() const { return kind; }
  [[nodiscard]] nlohmann::json to_json() const { return {{"kind", kind}}; }
  [[nodiscard]] std::optional<std::string> validate(const FillProblem&, const DeviceInfo&) const {
    return {};
  }
};
class SetupWorkspace : public Workspace {
 public:
  explicit SetupWorkspace(std::int64_t n) : y(DType::bf16, {n}), scratch(DType::bf16, {n}) {}
  [[nodiscard]] std::vector<OutputSpec> outputs() const override {
    return {{"y", y.view(), {1e-2, 1e-2, 1e-2}}};
  }
  void poison(cudaStream_t stream) override {
    Workspace::poison(stream);
    fill_poison(scratch.view(), stream);
  }
  DeviceTensor y, scratch;
};
class SetupPlan : public TypedPlan<FillProblem, SetupConfig, SetupWorkspace> {
 public:
  mutable int inputs_made = 0;  // input sets made (the run's own and the rotating ones)

  [[nodiscard]] KernelId id() const override { return {"baseline", "fill", "with_setup", "v1"}; }
  [[nodiscard]] ArchRequirement arch() const override { return {8, 0, false}; }
  [[nodiscard]] std::string summary() const override { return "copies a scratch buffer its setup fills"; }

 protected:
  std::unique_ptr<SetupWorkspace> make_inputs(const FillProblem& p, std::uint64_t) const override {
    ++inputs_made;
    auto ws = std::make_unique<SetupWorkspace>(p.n);
    ws->poison(nullptr);
    return ws;
  }
  std::vector<std::vector<float>> make_reference(const FillProblem& p, SetupWorkspace&) const override {
    return {std::vector<float>(static_cast<std::size_t>(p.n), 1.0f)};
  }
  std::vector<SetupConfig> make_configs(const FillProblem&, const DeviceInfo&) const override {
    return {{"forgets"}, {"good"}};
  }
  Cost make_cost(const FillProblem& p) const override { return {0, 4.0 * static_cast<double>(p.n)}; }
  Kernel make_kernel(const FillProblem&, const SetupConfig& c, SetupWorkspace& ws,
                     const DeviceInfo&) const override {
    const TensorView y = ws.y.view(), scratch = ws.scratch.view();
    const auto fill = [scratch](cudaStream_t s) { fill_constant(scratch, 1.0, s); };
    const auto copy = [y, scratch](cudaStream_t s) {
      CUTELAB_CUDA(cudaMemcpyAsync(y.data, scratch.data, y.bytes(), cudaMemcpyDeviceToDevice, s));
    };
    Kernel k;
    k.launch = [fill, copy](cudaStream_t s) {
      fill(s);
      copy(s);
    };
    k.setup = c.kind != "forgets" ? std::function<void(cudaStream_t)>(fill) : [](cudaStream_t) {};
    k.launch_reusing_setup = copy;
    return k;
  }
};

TEST_F(RuntimeGpu, KernelWithSetupIsCheckedAndTimedBothWaysAndRotates) {
  const std::string cache_dir =
      (std::filesystem::temp_directory_path() / "cutelab-runtime-gpu-setup-test").string();
  std::filesystem::remove_all(cache_dir);
  const SetupPlan plan;
  const Problem p =
      make_problem(plan.family(), std::map<std::string, std::string>{{"n", "4194304"}});  // 8 MiB
  RunOptions o;
  o.cache_dir = cache_dir;
  o.timing.max_seconds = 0.2;
  o.timing_mode = TimingMode::both;

  o.tune = true;
  const RunResult tuned = run_kernel(plan, p, dev, o, std::nullopt);
  ASSERT_EQ(tuned.status, RunResult::Status::ok) << tuned.message;
  ASSERT_EQ(tuned.tuning.size(), 2u);
  EXPECT_EQ(tuned.tuning[0].status, ConfigOutcome::Status::check_failed);
  EXPECT_NE(tuned.tuning[0].reason.find("setup reused"), std::string::npos) << tuned.tuning[0].reason;
  EXPECT_EQ(tuned.tuning[0].reason.find("setup in each call"), std::string::npos) << tuned.tuning[0].reason;
  EXPECT_EQ(tuned.tuning[1].status, ConfigOutcome::Status::ok);
  EXPECT_EQ(tuned.config->name, "good");

  // Both ways checked and passed; three figures, the rotating one over K >= 2 sets.
  EXPECT_TRUE(tuned.has_setup);
  ASSERT_EQ(tuned.checks.size(), 1u);
  ASSERT_EQ(tuned.checks_reusing_setup.size(), 1u);
  EXPECT_TRUE(tuned.checks[0].passed);
  EXPECT_TRUE(tuned.checks_reusing_setup[0].passed);
  ASSERT_TRUE(tuned.timing);
  ASSERT_TRUE(tuned.timing_with_setup);
  EXPECT_GT(tuned.timing->median_us, 0);
  EXPECT_GT(tuned.timing_with_setup->median_us, 0);
  ASSERT_TRUE(tuned.rotating);
  EXPECT_TRUE(tuned.rotating->skipped.empty()) << tuned.rotating->skipped;
  EXPECT_GE(tuned.rotating->sets, 2);
  EXPECT_LE(tuned.rotating->sets, 32);
  EXPECT_GE(tuned.rotating->set_bytes, 4.0 * 4194304);
  EXPECT_TRUE(tuned.rotating->reuses_setup);
  ASSERT_TRUE(tuned.rotating->stats);
  EXPECT_GE(tuned.rotating->stats->n, o.timing.min_samples);
  EXPECT_GT(tuned.rotating->stats->median_us, 0);
  EXPECT_EQ(tuned.rotating->stats->stop_reason.find("direct launches"), std::string::npos)
      << tuned.rotating->stats->stop_reason;
  const nlohmann::json j = tuned.to_json();
  EXPECT_EQ(j.at("rotating").at("sets"), tuned.rotating->sets);
  EXPECT_FALSE(j.at("timing_with_setup").is_null());

  // Forced onto the config whose setup does nothing: the whole call passes, the reusing way
  // fails, and the run says which.
  o.tune = false;
  o.config = "forgets";
  o.timing_mode = TimingMode::flush;
  const RunResult forced = run_kernel(plan, p, dev, o, std::nullopt);
  EXPECT_EQ(forced.status, RunResult::Status::check_failed);
  ASSERT_EQ(forced.checks.size(), 1u);
  ASSERT_EQ(forced.checks_reusing_setup.size(), 1u);
  EXPECT_TRUE(forced.checks[0].passed);
  EXPECT_FALSE(forced.checks_reusing_setup[0].passed);
  EXPECT_NE(forced.message.find("setup reused"), std::string::npos) << forced.message;
  EXPECT_FALSE(forced.rotating);  // flush only

  // A kernel without a setup rotates too, capturing its whole launch.
  const FillPlan fill;
  RunOptions f;
  f.config = "good";
  f.cache_dir = cache_dir;
  f.timing.max_seconds = 0.2;
  f.timing_mode = TimingMode::rotating;
  const RunResult rotated = run_kernel(
      fill, make_problem(fill.family(), std::map<std::string, std::string>{}), dev, f, std::nullopt);
  ASSERT_EQ(rotated.status, RunResult::Status::ok) << rotated.message;
  EXPECT_FALSE(rotated.timing);
  EXPECT_FALSE(rotated.timing_with_setup);
  ASSERT_TRUE(rotated.rotating && rotated.rotating->stats)
      << (rotated.rotating ? rotated.rotating->skipped : "");
  EXPECT_GE(rotated.rotating->sets, 2);
  EXPECT_FALSE(rotated.rotating->reuses_setup);
  EXPECT_EQ(rotated.rate_timing(), &*rotated.rotating->stats);
  std::filesystem::remove_all(cache_dir);
}

// The read floor: the case's bytes (whole 16-byte vectors) read the way the flush figure is timed, and
// a run that asks for it carries it beside that figure (and only there).
TEST_F(RuntimeGpu, ReadFloorReadsTheCasesBytesTimedLikeTheCall) {
  TimingOptions o;
  o.max_seconds = 0.2;
  const ReadFloor f = measure_read_floor(8.0 * (1 << 20) + 7, dev, o, nullptr);
  EXPECT_EQ(f.bytes, 8.0 * (1 << 20));
  EXPECT_TRUE(f.skipped.empty()) << f.skipped;
  ASSERT_TRUE(f.stats);
  EXPECT_GE(f.stats->n, o.min_samples);
  EXPECT_GT(f.stats->median_us, 0);
  EXPECT_EQ(f.stats->stop_reason.find("direct launches"), std::string::npos) << f.stats->stop_reason;
  EXPECT_EQ(f.to_json().at("bytes"), 8.0 * (1 << 20));
  // Bulk copies from sm_90 on (the faster read), 16-byte loads before.
  EXPECT_NE(f.method.find(dev.cc_major >= 9 ? "bulk copies" : "16-byte loads"), std::string::npos) << f.method;
  // A size that is not a whole number of bulk chunks: the last chunk is short, nothing hangs or overreads.
  const ReadFloor odd = measure_read_floor(3.0 * 49152 + 4096 + 16, dev, o, nullptr);
  ASSERT_TRUE(odd.stats) << odd.skipped;
  EXPECT_GT(odd.stats->median_us, 0);

  // More than the device holds: skipped with the reason, the context intact.
  const ReadFloor huge = measure_read_floor(static_cast<double>(dev.global_mem_bytes) * 2, dev, o, nullptr);
  EXPECT_FALSE(huge.stats);
  EXPECT_NE(huge.skipped.find("does not fit"), std::string::npos) << huge.skipped;
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);

  const SetupPlan plan;
  const Problem p = make_problem(plan.family(), std::map<std::string, std::string>{{"n", "1048576"}});
  RunOptions r;
  r.config = "good";
  r.timing.max_seconds = 0.2;
  r.read_floor = true;
  r.timing_mode = TimingMode::both;
  const RunResult both = run_kernel(plan, p, dev, r, std::nullopt);
  ASSERT_EQ(both.status, RunResult::Status::ok) << both.message;
  ASSERT_TRUE(both.read_floor && both.read_floor->stats) << (both.read_floor ? both.read_floor->skipped : "");
  EXPECT_EQ(both.read_floor->bytes, both.cost.bytes);
  ASSERT_TRUE(both.over_read_floor());
  EXPECT_DOUBLE_EQ(*both.over_read_floor(), both.timing->median_us / both.read_floor->stats->median_us);
  const nlohmann::json j = both.to_json();
  EXPECT_FALSE(j.at("read_floor").is_null());
  EXPECT_DOUBLE_EQ(j.at("metrics").at("over_read_floor").get<double>(), *both.over_read_floor());

  r.timing_mode = TimingMode::rotating;  // no flush figure to stand beside
  const RunResult rotating = run_kernel(plan, p, dev, r, std::nullopt);
  ASSERT_EQ(rotating.status, RunResult::Status::ok) << rotating.message;
  EXPECT_FALSE(rotating.read_floor);
  EXPECT_FALSE(rotating.over_read_floor());
}

// Fewer than one 16-byte vector is a caller's mistake, refused before the device is touched.
TEST(ReadFloor, RefusesLessThanOneVector) {
  DeviceInfo none;
  EXPECT_THROW((void)measure_read_floor(15, none, TimingOptions{}, nullptr), UsageError);
}

// A rotating loop long enough for the counter's resolution carries the board's energy a call where
// NVML has a counter; a short one says why it has none.
TEST_F(RuntimeGpu, RotatingFigureCarriesEnergyPerCall) {
  const SetupPlan plan;
  const Problem p = make_problem(plan.family(), std::map<std::string, std::string>{{"n", "4194304"}});
  RunOptions o;
  o.config = "good";
  o.check = false;
  o.cache_dir = (std::filesystem::temp_directory_path() / "cutelab-runtime-gpu-energy-test").string();
  o.timing_mode = TimingMode::rotating;
  o.timing.max_seconds = 30;
  int sets = 0;
  const auto rotating_stats = [&](int samples) {
    o.timing.min_samples = o.timing.max_samples = samples;
    const RunResult r = run_kernel(plan, p, dev, o, std::nullopt);
    EXPECT_EQ(r.status, RunResult::Status::ok) << r.message;
    EXPECT_TRUE(r.rotating && r.rotating->stats) << (r.rotating ? r.rotating->skipped : "");
    if (r.rotating) sets = r.rotating->sets;
    return r.rotating && r.rotating->stats ? *r.rotating->stats : TimingStats{};
  };
  const EnergyCounter& counter = EnergyCounter::of(dev.index);
  const TimingStats brief = rotating_stats(20);  // microseconds a sample: far under kEnergyMinSeconds
  ASSERT_GT(brief.median_us, 0);
  ASSERT_LT(20 * sets * brief.max_us * 1e-6, kEnergyMinSeconds);
  EXPECT_FALSE(brief.joules_per_call);
  if (!counter.available()) {
    EXPECT_NE(brief.energy_note.find(counter.why_unavailable()), std::string::npos) << brief.energy_note;
    GTEST_SKIP() << "no energy counter: " << counter.why_unavailable();
  }
  EXPECT_NE(brief.energy_note.find("raise --min-samples"), std::string::npos) << brief.energy_note;
  // Enough samples for twice the floor in replay time alone, whatever the board's speed.
  const int samples = static_cast<int>(2 * kEnergyMinSeconds / (sets * brief.median_us * 1e-6)) + 1;
  const TimingStats s = rotating_stats(samples);
  ASSERT_TRUE(s.joules_per_call) << s.energy_note;
  // The whole board's energy over the loop, a call: more than nothing, less than the loop's length at
  // 2 kW per call.
  EXPECT_GT(*s.joules_per_call, 0);
  EXPECT_LT(*s.joules_per_call, 2000.0 * s.max_us * 1e-6);
  ASSERT_TRUE(s.mean_watts);
  EXPECT_GT(*s.mean_watts, 10);
  EXPECT_LT(*s.mean_watts, 2000);
  std::filesystem::remove_all(o.cache_dir);
}

// SetupPlan with two configs that pass: a rotating tuning ranks both.
class TwoGoodSetupPlan : public SetupPlan {
 protected:
  std::vector<SetupConfig> make_configs(const FillProblem&, const DeviceInfo&) const override {
    return {{"forgets"}, {"good"}, {"good_too"}};
  }
};

// --timing=rotating --tune ranks every config by the rotating figure on one rotation of sets (made
// once, reused by the chosen config's own figure) and caches the winner under that basis; runs
// without --tune take their own basis's winner first.
TEST_F(RuntimeGpu, TuningByTheRotatingFigureIsCachedPerBasis) {
  const std::string cache_dir =
      (std::filesystem::temp_directory_path() / "cutelab-runtime-gpu-rotating-tune-test").string();
  std::filesystem::remove_all(cache_dir);
  const TwoGoodSetupPlan plan;
  const Problem p = make_problem(plan.family(), std::map<std::string, std::string>{{"n", "4194304"}});
  RunOptions o;
  o.cache_dir = cache_dir;
  o.timing.max_seconds = 0.2;
  o.timing_mode = TimingMode::rotating;
  o.tune = true;
  const RunResult tuned = run_kernel(plan, p, dev, o, std::nullopt);
  ASSERT_EQ(tuned.status, RunResult::Status::ok) << tuned.message;
  EXPECT_EQ(tuned.tune_basis, TuneBasis::rotating);
  ASSERT_EQ(tuned.tuning.size(), 3u);
  EXPECT_EQ(tuned.tuning[0].status, ConfigOutcome::Status::check_failed);  // checked before it is timed
  EXPECT_EQ(tuned.tuning[0].basis, TuneBasis::rotating);  // what it would have been ranked by
  for (std::size_t i : {1u, 2u}) {
    const ConfigOutcome& good = tuned.tuning[i];
    ASSERT_EQ(good.status, ConfigOutcome::Status::ok) << good.reason;
    EXPECT_EQ(good.basis, TuneBasis::rotating);
    EXPECT_GE(good.rotating_sets, 2);
    EXPECT_EQ(good.rotating_sets, tuned.tuning[1].rotating_sets);
    ASSERT_TRUE(good.timing);
    EXPECT_GE(good.timing->n, o.timing.min_samples);
  }
  const std::string winner = tuned.config->name;
  EXPECT_TRUE(winner == "good" || winner == "good_too") << winner;
  EXPECT_FALSE(tuned.timing);  // the run's own figures: rotating only, on the same sets
  ASSERT_TRUE(tuned.rotating && tuned.rotating->stats);
  EXPECT_EQ(tuned.rotating->sets, tuned.tuning[1].rotating_sets);
  // The run's workspace and K - 1 more sets, made once for both configs and the run's own figure.
  EXPECT_EQ(plan.inputs_made, tuned.rotating->sets);
  const nlohmann::json j = tuned.to_json();
  EXPECT_EQ(j.at("tune_basis"), "rotating");
  EXPECT_EQ(j.at("tuning").at(1).at("basis"), "rotating");
  EXPECT_EQ(j.at("tuning").at(1).at("rotating_sets"), tuned.tuning[1].rotating_sets);

  // Stored under the rotating key only; the flush key (the one written before bases existed) is free.
  TuneCache cache(cache_dir + "/tune.json");
  const std::optional<TuneEntry> stored = cache.lookup(tune_key(tuned));
  ASSERT_TRUE(stored);
  EXPECT_EQ(stored->config, winner);
  EXPECT_EQ(stored->extra.at("basis"), "rotating");
  EXPECT_NE(tune_key(tuned).str(), tune_key(tuned.kernel, p, dev).str());
  EXPECT_FALSE(cache.lookup(tune_key(tuned.kernel, p, dev, TuneBasis::flush)));

  // A flush run without --tune falls back to the rotating winner and says so ...
  o.tune = false;
  o.timing_mode = TimingMode::flush;
  const RunResult fallback = run_kernel(plan, p, dev, o, std::nullopt);
  EXPECT_EQ(fallback.config_source, "cache (rotating)") << fallback.message;
  EXPECT_EQ(fallback.config->name, winner);
  // ... until a flush tuning stores a winner of its own basis, which it then prefers.
  o.tune = true;
  const RunResult flush_tuned = run_kernel(plan, p, dev, o, std::nullopt);
  ASSERT_EQ(flush_tuned.status, RunResult::Status::ok) << flush_tuned.message;
  EXPECT_EQ(flush_tuned.tuning[1].basis, TuneBasis::flush);
  EXPECT_EQ(flush_tuned.tuning[1].rotating_sets, 0);
  o.tune = false;
  EXPECT_EQ(run_kernel(plan, p, dev, o, std::nullopt).config_source, "cache");
  o.timing_mode = TimingMode::rotating;
  EXPECT_EQ(run_kernel(plan, p, dev, o, std::nullopt).config_source, "cache (rotating)");
  std::filesystem::remove_all(cache_dir);
}

}  // namespace
}  // namespace cutelab
