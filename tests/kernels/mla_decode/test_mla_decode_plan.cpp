// The plan / run split of the paged_sm90 host API on the GPU, for every version that uses it:
// one step plan serving several layers (other q and KV, same lengths), plans refused when reused
// wrongly (other batch, other lengths tensor, lengths whose page counts changed, other shape),
// and bitwise-identical outputs over repeated runs of one config.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cute/mla_decode/paged_sm90/common/host.hpp"
#include "cute/mla_decode/paged_sm90/paged_sm90_v1/api.hpp"
#include "cute/mla_decode/paged_sm90/paged_sm90_v2/api.hpp"
#include "cute/mla_decode/paged_sm90/paged_sm90_v3/api.hpp"
#include "cute/mla_decode/paged_sm90/paged_sm90_v8/api.hpp"
#include "cute/mla_decode/paged_sm90_fp8/paged_sm90_fp8_v1/api.hpp"
#if CUTELAB_SUPERSEDED_KERNELS
#include "cute/mla_decode/paged_sm90_fp8/paged_sm90_fp8_v2/api.hpp"
#endif
#include "cute/mla_decode/paged_sm90_fp8/paged_sm90_fp8_v3/api.hpp"
#include "cute/mla_decode/paged_sm90_fp8/paged_sm90_fp8_v4/api.hpp"
#if CUTELAB_SUPERSEDED_KERNELS
#include "cute/mla_decode/paged_sm90_fp8/paged_sm90_fp8_v9/api.hpp"
#endif
#include "cute/mla_decode/paged_sm90_fp8/paged_sm90_fp8_v10/api.hpp"
#if CUTELAB_SUPERSEDED_KERNELS
#include "cute/mla_decode/paged_sm90_fp8/paged_sm90_fp8_v11/api.hpp"
#include "cute/mla_decode/paged_sm90_fp8/paged_sm90_fp8_v12/api.hpp"
#endif
#include "cute/mla_decode/paged_sm90_fp8/paged_sm90_fp8_v13/api.hpp"
#include "cute/mla_decode/paged_sm90_fp8/paged_sm90_fp8_v17/api.hpp"
#include "cute/mla_decode/paged_sm90_fp8/paged_sm90_fp8_v18/api.hpp"
#include "cute/mla_decode/paged_sm90_pairs/paged_sm90_pairs_v2/api.hpp"
#include "cute/mla_decode/paged_sm90_pairs/paged_sm90_pairs_v3/api.hpp"
#include "cute/mla_decode/paged_sm90_pairs/paged_sm90_pairs_v4/api.hpp"
#include "cutelab/core/error.hpp"
#include "cutelab/runtime/check.hpp"
#include "cutelab/runtime/registry.hpp"
#include "kernels/mla_decode/mla_test_util.hpp"
#include "mla_decode/common/plan_base.hpp"
#include "mla_decode/common/workspace.hpp"
#include "mla_decode/reference/reference.hpp"

namespace cutelab::mla {
namespace {

using ::testing::HasSubstr;

struct Version {
  std::string name;
  paged_sm90::MainKernel (*main_kernel)(DType);
  KvFormat kv = KvFormat::bf16;  // the cache format its cases use (bf16: the cache in q's dtype)
  MlaArithmetic arithmetic = MlaArithmetic::q_precision;  // what it rounds to e4m3 (tolerances)
  PartialFormat partials = PartialFormat::fp32;           // what its split pieces write
  int max_rows = 0;  // query rows a KV head it serves (0: any); its cases take fewer heads
};

void PrintTo(const Version& v, std::ostream* os) { *os << v.name; }

// v8's kernel for 16 or 32 rows a KV head: bf16 only (f16 calls run v3's kernel), so its cases are bf16.
paged_sm90::MainKernel v8_kernel(PartialFormat partials, int rows) {
  return paged_sm90_v8::main_kernel(DType::bf16, partials, rows);
}

// The list as written (clang-format would reflow every entry of it).
// clang-format off
std::vector<Version> versions() {
  return {
      {"paged_sm90_v1", [](DType d) { return paged_sm90_v1::main_kernel(d); }},
      {"paged_sm90_v2", [](DType d) { return paged_sm90_v2::main_kernel(d); }},
      {"paged_sm90_v3", [](DType d) { return paged_sm90_v3::main_kernel(d, PartialFormat::fp32); }},
      {"paged_sm90_v3_p16", [](DType d) { return paged_sm90_v3::main_kernel(d, PartialFormat::out_dtype); },
       KvFormat::bf16, MlaArithmetic::q_precision, PartialFormat::out_dtype},
      {"paged_sm90_pairs_v2", [](DType d) { return paged_sm90_pairs_v2::main_kernel(d, PartialFormat::fp32); }},
      {"paged_sm90_pairs_v2_p16", [](DType d) { return paged_sm90_pairs_v2::main_kernel(d, PartialFormat::out_dtype); },
       KvFormat::bf16, MlaArithmetic::q_precision, PartialFormat::out_dtype},
      {"paged_sm90_pairs_v3", [](DType d) { return paged_sm90_pairs_v3::main_kernel(d, PartialFormat::fp32); }},
      {"paged_sm90_pairs_v3_p16", [](DType d) { return paged_sm90_pairs_v3::main_kernel(d, PartialFormat::out_dtype); },
       KvFormat::bf16, MlaArithmetic::q_precision, PartialFormat::out_dtype},
      {"paged_sm90_pairs_v4", [](DType d) { return paged_sm90_pairs_v4::main_kernel(d, PartialFormat::fp32); }},
      {"paged_sm90_pairs_v4_p16", [](DType d) { return paged_sm90_pairs_v4::main_kernel(d, PartialFormat::out_dtype); },
       KvFormat::bf16, MlaArithmetic::q_precision, PartialFormat::out_dtype},
      {"paged_sm90_v8_n16", [](DType) { return v8_kernel(PartialFormat::fp32, 16); }, KvFormat::bf16,
       MlaArithmetic::q_precision, PartialFormat::fp32, 16},
      {"paged_sm90_v8_n32", [](DType) { return v8_kernel(PartialFormat::fp32, 32); }, KvFormat::bf16,
       MlaArithmetic::q_precision, PartialFormat::fp32, 32},
      {"paged_sm90_v8_n32_p16", [](DType) { return v8_kernel(PartialFormat::out_dtype, 32); }, KvFormat::bf16,
       MlaArithmetic::q_precision, PartialFormat::out_dtype, 32},
      {"paged_sm90_fp8_v1_fp8_tensor",
       [](DType d) { return paged_sm90_fp8_v1::main_kernel(d, KvFormat::fp8_tensor); }, KvFormat::fp8_tensor},
      {"paged_sm90_fp8_v1_fp8_token",
       [](DType d) { return paged_sm90_fp8_v1::main_kernel(d, KvFormat::fp8_token); }, KvFormat::fp8_token},
#if CUTELAB_SUPERSEDED_KERNELS
      {"paged_sm90_fp8_v2_fp8_tensor",
       [](DType d) { return paged_sm90_fp8_v2::main_kernel(d, KvFormat::fp8_tensor); }, KvFormat::fp8_tensor,
       MlaArithmetic::e4m3_q_and_p},
#endif
      {"paged_sm90_fp8_v3_fp8_tensor",
       [](DType d) { return paged_sm90_fp8_v3::main_kernel(d, KvFormat::fp8_tensor); }, KvFormat::fp8_tensor,
       MlaArithmetic::e4m3_q_and_p},
#if CUTELAB_SUPERSEDED_KERNELS
      {"paged_sm90_fp8_v9_fp8_tensor",
       [](DType d) { return paged_sm90_fp8_v9::main_kernel(d, KvFormat::fp8_tensor); }, KvFormat::fp8_tensor,
       MlaArithmetic::e4m3_q_and_p},
#endif
      {"paged_sm90_fp8_v10_fp8_tensor",
       [](DType d) { return paged_sm90_fp8_v10::main_kernel(d, KvFormat::fp8_tensor); }, KvFormat::fp8_tensor,
       MlaArithmetic::e4m3_q_and_p},
#if CUTELAB_SUPERSEDED_KERNELS
      {"paged_sm90_fp8_v11_fp8_tensor",
       [](DType d) { return paged_sm90_fp8_v11::main_kernel(d, KvFormat::fp8_tensor); }, KvFormat::fp8_tensor,
       MlaArithmetic::e4m3_q_and_p},
      {"paged_sm90_fp8_v12_fp8_tensor",
       [](DType d) { return paged_sm90_fp8_v12::main_kernel(d, KvFormat::fp8_tensor); }, KvFormat::fp8_tensor,
       MlaArithmetic::e4m3_q_and_p},
#endif
      {"paged_sm90_fp8_v13_fp8_tensor",
       [](DType d) { return paged_sm90_fp8_v13::main_kernel(d, KvFormat::fp8_tensor); }, KvFormat::fp8_tensor,
       MlaArithmetic::e4m3_q_and_p, PartialFormat::fp32, 32},
      {"paged_sm90_fp8_v4_fp8_token",
       [](DType d) { return paged_sm90_fp8_v4::main_kernel(d, KvFormat::fp8_token); }, KvFormat::fp8_token,
       MlaArithmetic::e4m3_requantised},
      {"paged_sm90_fp8_v17_fp8_token",
       [](DType d) { return paged_sm90_fp8_v17::main_kernel(d, KvFormat::fp8_token); }, KvFormat::fp8_token,
       MlaArithmetic::e4m3_q_and_p, PartialFormat::fp32, 32},
      {"paged_sm90_fp8_v18_fp8_token",
       [](DType d) { return paged_sm90_fp8_v18::main_kernel(d, KvFormat::fp8_token); }, KvFormat::fp8_token,
       MlaArithmetic::e4m3_q_and_p}};
}
// clang-format on

class MlaDecodeStepPlan : public ::testing::TestWithParam<Version> {
 protected:
  void SetUp() override {
    std::string why;
    if (cuda_device_count(&why) == 0) GTEST_SKIP() << "no CUDA device: " << why;
    if (auto mismatch = arch_mismatch({9, 0, true}, device())) GTEST_SKIP() << *mismatch;
  }
  [[nodiscard]] paged_sm90::Runner runner(const MlaDecodeWorkspace& ws, paged_sm90::TuneConfig config = {}) const {
    config.partials = GetParam().partials;
    return paged_sm90::Runner(validate_args(ws.args(), /*checked=*/false, nullptr, KvFormats::all()),
                              device(), config, GetParam().main_kernel(ws.spec().dtype));
  }
  // A case in the version's cache format.
  [[nodiscard]] static MlaDecodeCase form(MlaDecodeCase c) {
    c.kv_format = GetParam().kv;
    c.arithmetic = GetParam().arithmetic;
    // A version that serves fewer rows: a quarter of the heads until they fit (other head counts stay other).
    while (GetParam().max_rows > 0 && c.s_q * c.h_q / c.h_kv > GetParam().max_rows) c.h_q /= 4;
    return c;
  }
};

// Both outputs of `ws` against the fp32 reference of `args` (which may differ from ws.args()).
void expect_matches_reference(const MlaDecodeWorkspace& ws, const MlaDecodeArgs& args, const std::string& what) {
  DeviceTensor out(DType::f32, ws.out.shape()), lse(DType::f32, ws.lse.shape());
  reference_gpu(args, out.as<float>(), lse.as<float>());
  CUTELAB_CUDA_LAUNCH();
  CUTELAB_CUDA(cudaDeviceSynchronize());
  const std::vector<std::vector<float>> ref = {copy_to_host<float>(out.view()), copy_to_host<float>(lse.view())};
  const std::vector<OutputSpec> outputs = ws.outputs();
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    const std::vector<std::uint8_t> got = copy_to_host_bytes(outputs[i].view);
    const CheckResult r = check_output(outputs[i].name, outputs[i].view.dtype, got.data(), ref[i], outputs[i].tol);
    EXPECT_TRUE(r.passed) << what << ": " << r.reason << "\n  " << r.to_json().dump();
  }
}

// An H200's limits, as far as configs() and validate() ask (host-only tests).
DeviceInfo h200_limits() {
  DeviceInfo dev;
  dev.cc_major = 9;
  dev.sm_count = 132;
  dev.regs_per_sm = 65536;
  dev.smem_per_block_optin = 232448;
  return dev;
}

MlaDecodeCase step_case() { return make_case(5, 2, 64, 1, true, DType::bf16, {100, 64, 0, 700, 1}); }

// One plan, three layers: other q, KV cache and page order, the same lengths tensor.
TEST_P(MlaDecodeStepPlan, OnePlanServesEveryLayerOfAStep) {
  std::vector<std::unique_ptr<MlaDecodeWorkspace>> layers;
  for (std::uint64_t seed : {51, 52, 53})
    layers.push_back(std::make_unique<MlaDecodeWorkspace>(form(step_case()), seed));
  const paged_sm90::Runner r = runner(*layers[0]);
  std::unique_ptr<paged_sm90::StepPlan> plan = r.make_step_plan();
  r.plan_step(*plan, layers[0]->seqlens.view(), nullptr);
  for (std::size_t l = 0; l < layers.size(); ++l) {
    MlaDecodeArgs args = layers[l]->args();
    args.seqlens = layers[0]->seqlens.view();  // equal values; the plan's tensor
    layers[l]->poison(nullptr);
    r.run(*plan, args, nullptr);
    CUTELAB_CUDA(cudaDeviceSynchronize());
    expect_matches_reference(*layers[l], args, concat("layer ", l));
  }
  EXPECT_EQ(plan->reuse_error(nullptr), "");
}

TEST_P(MlaDecodeStepPlan, RefusesAnotherBatchOrLengthsTensorOrShape) {
  MlaDecodeWorkspace ws(form(step_case()), 61);
  const paged_sm90::Runner r = runner(ws);
  std::unique_ptr<paged_sm90::StepPlan> plan = r.make_step_plan();
  MlaDecodeArgs args = ws.args();
  try {
    (void)r.prepare(*plan, args);
    ADD_FAILURE() << "a plan never planned was accepted";
  } catch (const UsageError& e) {
    EXPECT_THAT(e.message(), HasSubstr("never planned"));
  }
  r.plan_step(*plan, ws.seqlens.view(), nullptr);
  EXPECT_NO_THROW((void)r.prepare(*plan, args));

  MlaDecodeWorkspace smaller(form(make_case(4, 2, 64, 1, true, DType::bf16, {100, 64, 0, 700})), 62);
  try {
    (void)r.prepare(*plan, smaller.args());
    ADD_FAILURE() << "another batch was accepted";
  } catch (const UsageError& e) {
    EXPECT_THAT(e.message(), HasSubstr("batch 4 differs from the batch 5 the step plan was made for"));
  }
  MlaDecodeWorkspace twin(form(step_case()), 63);  // same lengths, another tensor
  try {
    (void)r.prepare(*plan, twin.args());
    ADD_FAILURE() << "another lengths tensor was accepted";
  } catch (const UsageError& e) {
    EXPECT_THAT(e.message(), HasSubstr("is not the tensor the step plan was made from"));
  }
  if (GetParam().kv != KvFormat::bf16) {  // an FP8 runner given the same case's bf16 cache
    try {
      (void)r.prepare(*plan, ws.original_args());
      ADD_FAILURE() << "a bf16 cache was accepted by an FP8 kernel";
    } catch (const UsageError& e) {
      EXPECT_THAT(e.message(), HasSubstr("kv_cache"));
    }
  }
  MlaDecodeWorkspace other_heads(form(make_case(5, 2, 32, 1, true, DType::bf16, {100, 64, 0, 700, 1})), 64);
  MlaDecodeArgs heads_args = other_heads.args();
  heads_args.seqlens = ws.seqlens.view();
  try {
    (void)r.prepare(*plan, heads_args);
    ADD_FAILURE() << "another head count was accepted";
  } catch (const UsageError& e) {
    EXPECT_THAT(e.message(), HasSubstr("differs from the planned one"));
  }
  // A lengths tensor of another batch cannot be planned by a runner sized for fewer requests.
  const paged_sm90::Runner small_runner = runner(smaller);
  std::unique_ptr<paged_sm90::StepPlan> small_plan = small_runner.make_step_plan();
  EXPECT_THROW(small_runner.plan_step(*small_plan, ws.seqlens.view(), nullptr), UsageError);
  // A plan of a runner of another shape: its partial scratch is laid out for other rows.
  const paged_sm90::Runner heads_runner = runner(other_heads);
  for (const auto& [what, call] : std::vector<std::pair<std::string, std::function<void()>>>{
           {"plan_step", [&] { heads_runner.plan_step(*plan, ws.seqlens.view(), nullptr); }},
           {"prepare", [&] { (void)heads_runner.prepare(*plan, heads_args); }}}) {
    try {
      call();
      ADD_FAILURE() << what << " accepted a plan made by a runner of another shape";
    } catch (const UsageError& e) {
      EXPECT_THAT(e.message(), HasSubstr("made by a runner of another shape")) << what;
    }
  }
}

// Lengths rewritten after plan_step. Same page counts: served, and correct for the new lengths.
// Other page counts: checked mode refuses before anything runs; unchecked mode writes NaN for
// exactly those requests and says so through reuse_error().
TEST_P(MlaDecodeStepPlan, LengthsChangedAfterPlanning) {
  MlaDecodeWorkspace ws(form(step_case()), 71);
  const paged_sm90::Runner r = runner(ws);
  std::unique_ptr<paged_sm90::StepPlan> plan = r.make_step_plan();
  r.plan_step(*plan, ws.seqlens.view(), nullptr);

  const std::vector<int> same_pages = {90, 63, 0, 641, 1};  // 2, 1, 0, 11, 1 pages as planned
  ws.seqlens.upload(same_pages.data(), same_pages.size() * sizeof(int));
  ws.poison(nullptr);
  EXPECT_NO_THROW((void)r.prepare(*plan, ws.args(), /*checked=*/true));
  r.run(*plan, ws.args(), nullptr);
  CUTELAB_CUDA(cudaDeviceSynchronize());
  expect_matches_reference(ws, ws.args(), "same page counts");
  EXPECT_EQ(plan->reuse_error(nullptr), "");

  const std::vector<int> other_pages = {100, 64, 0, 640, 1};  // request 3: 10 pages, planned 11
  ws.seqlens.upload(other_pages.data(), other_pages.size() * sizeof(int));
  ws.poison(nullptr);
  CUTELAB_CUDA(cudaDeviceSynchronize());
  try {
    (void)r.prepare(*plan, ws.args(), /*checked=*/true);
    ADD_FAILURE() << "checked mode accepted lengths of other page counts";
  } catch (const UsageError& e) {
    EXPECT_THAT(e.message(), HasSubstr("seqlens[3] = 640 needs 10 pages, the step plan was made for 11"));
  }
  r.run(*plan, ws.args(), nullptr);
  CUTELAB_CUDA(cudaDeviceSynchronize());
  EXPECT_THAT(plan->reuse_error(nullptr), HasSubstr("page counts differ"));
  const std::vector<float> out = copy_to_host_float(ws.out.view());
  const std::size_t row = static_cast<std::size_t>(ws.spec().s_q) * ws.spec().h_q * kHeadDimV;
  for (int req = 0; req < ws.spec().b; ++req) {
    int nans = 0;
    for (std::size_t i = req * row; i < (req + 1) * row; ++i) nans += std::isnan(out[i]) ? 1 : 0;
    if (req == 3)
      EXPECT_EQ(nans, static_cast<int>(row)) << "request 3 (stale) must be NaN";
    else
      EXPECT_EQ(nans, 0) << "request " << req << " (unchanged) must not be NaN";
  }
  // A new plan_step clears the error and serves the new lengths.
  r.plan_step(*plan, ws.seqlens.view(), nullptr);
  ws.poison(nullptr);
  r.run(*plan, ws.args(), nullptr);
  CUTELAB_CUDA(cudaDeviceSynchronize());
  EXPECT_EQ(plan->reuse_error(nullptr), "");
  expect_matches_reference(ws, ws.args(), "lengths re-planned");
}

// Every config, run twice on the same inputs: the same bytes (no atomics, fixed merge order).
TEST_P(MlaDecodeStepPlan, RepeatedRunsAreBitwiseIdentical) {
  MlaDecodeWorkspace ws(form(make_case(3, 1, 128, 1, false, DType::bf16, {4096, 777, 3000})), 81);
  for (int fixed : {2, 8})
    for (int min_blocks : {1, 4}) {
      const paged_sm90::Runner r = runner(ws, paged_sm90::TuneConfig{fixed, true, min_blocks});
      std::unique_ptr<paged_sm90::StepPlan> plan = r.make_step_plan();
      r.plan_step(*plan, ws.seqlens.view(), nullptr);
      std::vector<std::vector<std::uint8_t>> runs;
      for (int rep = 0; rep < 3; ++rep) {
        ws.poison(nullptr);
        r.run(*plan, ws.args(), nullptr);
        CUTELAB_CUDA(cudaDeviceSynchronize());
        std::vector<std::uint8_t> bytes = copy_to_host_bytes(ws.out.view());
        const std::vector<std::uint8_t> lse = copy_to_host_bytes(ws.lse.view());
        bytes.insert(bytes.end(), lse.begin(), lse.end());
        runs.push_back(std::move(bytes));
      }
      EXPECT_EQ(runs[0], runs[1]) << "fixed " << fixed << " min_blocks " << min_blocks;
      EXPECT_EQ(runs[0], runs[2]) << "fixed " << fixed << " min_blocks " << min_blocks;
    }
}

INSTANTIATE_TEST_SUITE_P(PagedSm90, MlaDecodeStepPlan, ::testing::ValuesIn(versions()),
                         [](const auto& info) { return info.param.name; });

// Partial rows in out's dtype are a tuning choice where a version has a main kernel that writes
// them (v3): its configs name the format and carry it in their params; the other versions offer
// fp32 rows only. Configs are listed without a device.
TEST(MlaDecodePartialFormat, OfferedOnlyWhereAMainKernelWritesIt) {
  const Problem problem = problem_for(make_case(4, 1, 128, 1, false, DType::bf16, {2048, 2048, 2048, 2048}));
  const DeviceInfo dev;
  const auto formats = [&](const char* id) {
    std::map<std::string, int> count;
    for (const ConfigDesc& c : Registry::instance().find(id).configs(problem, dev)) {
      const std::string format = c.params.at("partials").get<std::string>();
      EXPECT_EQ(c.name.ends_with("_p16"), format == "out_dtype") << c.name;
      ++count[format];
    }
    return count;
  };
  const std::map<std::string, int> v3 = formats("cute/mla_decode/paged_sm90/v3");
  EXPECT_GT(v3.at("fp32"), 0);
  EXPECT_EQ(v3.at("out_dtype"), v3.at("fp32"));  // the same schedule knobs for both
  for (const char* id : {"cute/mla_decode/paged_sm90/v2", "cute/mla_decode/paged_sm90/v1"}) {
    const std::map<std::string, int> other = formats(id);
    EXPECT_EQ(other.count("out_dtype"), 0u) << id;
    EXPECT_GT(other.at("fp32"), 0) << id;
  }
  // A cache v3 does not read: its fp32 configs are listed and refused with the reason.
  MlaDecodeCase fp8 = make_case(4, 1, 128, 1, false, DType::bf16, {2048, 2048, 2048, 2048});
  fp8.kv_format = KvFormat::fp8_tensor;
  const Problem fp8_problem = problem_for(fp8);
  const KernelPlan& v3_plan = Registry::instance().find("cute/mla_decode/paged_sm90/v3");
  const std::vector<ConfigDesc> fp8_configs = v3_plan.configs(fp8_problem, dev);
  ASSERT_FALSE(fp8_configs.empty());
  for (const ConfigDesc& c : fp8_configs) {
    EXPECT_EQ(c.params.at("partials").get<std::string>(), "fp32") << c.name;
    const std::optional<std::string> why = v3_plan.validate(fp8_problem, c, dev);
    ASSERT_TRUE(why.has_value()) << c.name;
    EXPECT_THAT(*why, HasSubstr("reads no fp8_tensor KV cache")) << c.name;
  }
}

// Where the grid's columns (h_kv x M tiles) leave SMs idle, every config is also offered with a
// last, shorter row of parts on those SMs (`_tail`): its parts cost 1 / waves of the others, the
// waves being how many rounds the spare SMs need for the row. Elsewhere nothing changes.
TEST(MlaDecodeTailParts, ALastRowOfShortPartsWhereColumnsLeaveSmsIdle) {
  using paged_sm90::part_grid;
  const auto grid = [](int units, int sms, bool tail) {
    const paged_sm90::PartGrid g = part_grid(units, sms, tail);
    return std::pair{g.num_parts, g.tail_waves};
  };
  EXPECT_EQ(grid(8, 132, false), std::pair(16, 0));
  EXPECT_EQ(grid(8, 132, true), std::pair(17, 2));   // 4 spare SMs, 8 columns: two waves of half parts
  EXPECT_EQ(grid(16, 132, true), std::pair(9, 4));   // 4 spare SMs, 16 columns
  EXPECT_EQ(grid(5, 132, true), std::pair(27, 3));   // 2 spare SMs, 5 columns
  EXPECT_EQ(grid(2, 132, true), std::pair(66, 0));   // nothing spare
  EXPECT_EQ(grid(200, 132, true), std::pair(1, 0));  // more columns than SMs
  const DeviceInfo dev = h200_limits();
  const auto count = [&](const char* id, const Problem& problem) {
    std::map<bool, int> n;
    for (const ConfigDesc& c : Registry::instance().find(id).configs(problem, dev)) {
      const bool tail = c.params.at("tail_parts").get<bool>();
      EXPECT_EQ(c.name.ends_with("_tail"), tail) << c.name;
      ++n[tail];
    }
    return n;
  };
  const Problem s4 = problem_for(make_case(64, 4, 128, 1, true, DType::bf16, std::vector<int>(64, 2000)));
  for (const char* id : {"cute/mla_decode/paged_sm90/v3", "cute/mla_decode/paged_sm90/v1"}) {
    const std::map<bool, int> n = count(id, s4);
    EXPECT_GT(n.at(false), 0) << id;
    EXPECT_EQ(n.at(true), n.at(false)) << id;
  }
  const Problem s1 = problem_for(make_case(64, 1, 128, 1, false, DType::bf16, std::vector<int>(64, 2000)));
  EXPECT_EQ(count("cute/mla_decode/paged_sm90/v3", s1).count(true), 0u);
}

// A step plan whose schedule has a tail row (8 columns on 132 SMs: 16 full rows + a row of half
// parts, pieces cut into it): it serves two layers, runs bitwise-repeatably, and a request whose
// page count changed after planning is written as NaN and reported, the others stay correct.
TEST(MlaDecodeTailParts, StepPlanWithATailRow) {
  std::string why;
  if (cuda_device_count(&why) == 0) GTEST_SKIP() << "no CUDA device: " << why;
  if (auto mismatch = arch_mismatch({9, 0, true}, device())) GTEST_SKIP() << *mismatch;
  if (paged_sm90::part_grid(8, device().sm_count, true).tail_waves == 0)
    GTEST_SKIP() << device().sm_count << " SMs: 8 columns leave none idle, no tail row";
  // Costs (pages + fixed overhead 2) 49, 12, 0, 81, 23: 165 on a line of 16 x 2 + 1 half parts, 10
  // each, leaves the last 5 (request 4's end) to the tail row.
  const MlaDecodeCase c = make_case(5, 4, 128, 1, true, DType::bf16, {3000, 640, 0, 5000, 1344});
  MlaDecodeWorkspace layer0(c, 101), layer1(c, 102);
  paged_sm90::TuneConfig config;
  config.fixed_overhead_blocks = 2;
  config.partials = PartialFormat::out_dtype;
  config.tail_parts = true;
  const paged_sm90::Runner r(validate_args(layer0.args(), /*checked=*/false, nullptr, KvFormats::all()),
                             device(), config,
                             paged_sm90_v3::main_kernel(DType::bf16, PartialFormat::out_dtype));
  std::unique_ptr<paged_sm90::StepPlan> plan = r.make_step_plan();
  r.plan_step(*plan, layer0.seqlens.view(), nullptr);
  std::vector<std::uint8_t> first;
  for (MlaDecodeWorkspace* ws : {&layer0, &layer1, &layer0}) {
    MlaDecodeArgs args = ws->args();
    args.seqlens = layer0.seqlens.view();
    ws->poison(nullptr);
    r.run(*plan, args, nullptr);
    CUTELAB_CUDA(cudaDeviceSynchronize());
    expect_matches_reference(*ws, args, ws == &layer0 ? "layer 0" : "layer 1");
    if (ws != &layer0) continue;
    const std::vector<std::uint8_t> bytes = copy_to_host_bytes(ws->out.view());
    if (first.empty())
      first = bytes;
    else
      EXPECT_EQ(bytes, first) << "layer 0 run twice";
  }
  EXPECT_EQ(plan->reuse_error(nullptr), "");

  const std::vector<int> other_pages = {3000, 640, 0, 4990, 1344};  // request 3: 78 pages, planned 79
  layer0.seqlens.upload(other_pages.data(), other_pages.size() * sizeof(int));
  layer0.poison(nullptr);
  r.run(*plan, layer0.args(), nullptr);
  CUTELAB_CUDA(cudaDeviceSynchronize());
  EXPECT_THAT(plan->reuse_error(nullptr), HasSubstr("page counts differ"));
  const std::vector<float> out = copy_to_host_float(layer0.out.view());
  const std::size_t row = static_cast<std::size_t>(c.s_q) * c.h_q * kHeadDimV;
  for (int req = 0; req < 5; ++req) {
    int nans = 0;
    for (std::size_t i = req * row; i < (req + 1) * row; ++i) nans += std::isnan(out[i]) ? 1 : 0;
    EXPECT_EQ(nans, req == 3 ? static_cast<int>(row) : 0) << "request " << req;
  }
}

// v3 loads a Q tile as one TMA box of whole query tokens: a 64-row tile that would start inside a
// query token's heads (48 heads per KV head, s_q 2) is refused with the reason; v2, which loads Q
// row by row, serves it; 3 heads per KV head with s_q 2 (6 rows, one tile) is served by both.
TEST(MlaDecodeQTile, V3RefusesTilesThatStartInsideAQueryToken) {
  const DeviceInfo dev = h200_limits();
  const KernelPlan& v3 = Registry::instance().find("cute/mla_decode/paged_sm90/v3");
  const KernelPlan& v2 = Registry::instance().find("cute/mla_decode/paged_sm90/v2");
  const Problem across = problem_for(make_case(2, 2, 96, 2, false, DType::bf16, {300, 700}));
  for (const ConfigDesc& c : v3.configs(across, dev)) {
    const std::optional<std::string> why = v3.validate(across, c, dev);
    ASSERT_TRUE(why.has_value()) << c.name;
    EXPECT_THAT(*why, HasSubstr("h_q / h_kv = 48 with s_q = 2")) << c.name;
  }
  for (const ConfigDesc& c : v2.configs(across, dev))
    EXPECT_FALSE(v2.validate(across, c, dev).has_value()) << c.name;
  const Problem small = problem_for(make_case(2, 2, 12, 4, true, DType::bf16, {33, 200}));
  for (const ConfigDesc& c : v3.configs(small, dev))
    EXPECT_FALSE(v3.validate(small, c, dev).has_value()) << c.name;
}

// Host code only: an untuned call (no tuning-cache entry) takes the first valid config, and each
// paged_sm90 design lists first the one the tuned suites pick or come within ~1% of
// (docs/kernels/mla-decode.md, "The untuned default").
TEST(MlaDecodeConfigs, UntunedDefaultComesFirst) {
  const DeviceInfo dev = h200_limits();
  const auto first = [&](const char* id, std::map<std::string, std::string> given) {
    const Problem problem = make_problem(MlaDecodeProblem::family(), given);
    const KernelPlan& plan = Registry::instance().find(id);
    for (const ConfigDesc& c : plan.configs(problem, dev))
      if (!plan.validate(problem, c, dev)) return c.name;
    return std::string("none");
  };
  const char* v3 = "cute/mla_decode/paged_sm90/v3";
  EXPECT_EQ(first(v3, {{"b", "128"}, {"h", "16"}, {"t", "4096"}}), "fo8_mb1_evictnormal");
  EXPECT_EQ(first(v3, {{"b", "128"}, {"h", "128"}, {"t", "16384"}}), "fo8_mb1_evictnormal_p16");
  EXPECT_EQ(first(v3, {{"b", "128"}, {"h", "128"}, {"varlen", "true"}}), "fo2_mb1_evictnormal_p16");
  EXPECT_EQ(first(v3, {{"b", "1"}, {"h", "128"}, {"t", "4096"}}), "fo8_mb1_evictfirst_p16");
  EXPECT_EQ(first(v3, {{"b", "1"}, {"h", "16"}, {"t", "1024"}}), "fo2_mb1_evictfirst");  // 16 pages
  EXPECT_EQ(first(v3, {{"b", "32"}, {"h", "16"}, {"t", "2048"}}), "fo8_mb1_evictfirst");
  EXPECT_EQ(
      first(v3, {{"b", "4"}, {"s", "4"}, {"h", "16"}, {"causal", "true"}, {"lens", "4641,45118,1730,1696"}}),
      "fo2_mb1_evictfirst");
  EXPECT_EQ(first(v3, {{"b", "4"}, {"h", "16"}, {"lens", "1500,1500,1500,1500"}}), "fo8_mb1_evictfirst");
  EXPECT_EQ(first(v3, {{"b", "4"}, {"h", "16"}, {"lens", "700,700,700,700"}}), "fo2_mb1_evictfirst");
  // 8 M tiles a request leave SMs idle: the tail row's variant.
  EXPECT_EQ(first(v3, {{"b", "64"}, {"s", "4"}, {"h", "128"}, {"causal", "true"}, {"varlen", "true"}}),
            "fo2_mb1_evictnormal_p16_tail");
  // The FP8 tensor-core designs: no 16-bit partial rows; KV evicted first above 32 rows a KV head.
  const char* v18 = "cute/mla_decode/paged_sm90_fp8/v18";
  EXPECT_EQ(first(v18, {{"b", "128"}, {"h", "128"}, {"kv-dtype", "fp8_token"}}), "fo8_mb1_evictfirst");
  EXPECT_EQ(first(v18, {{"b", "128"}, {"h", "32"}, {"kv-dtype", "fp8_token"}}), "fo8_mb1_evictnormal");
}

// v11 and v12 tune their main kernel where a KV head has more than v8's 32 rows: every schedule
// config once with v3's one S owner and once with the pairs ("_pairs", params.main_kernel; v11:
// paged_sm90_pairs/v3's kernel, v12: pairs/v4's); at <= 32 rows the pairs configs are refused with
// the reason (v8's kernel runs). The untuned default takes the pairs, with pieces costed at 8 pages
// and the KV evicted first, for bf16 where each SM visits >= 192 pages at >= 128 rows.
void expect_main_kernel_by_config(const std::string& id) {
  SCOPED_TRACE(id);
  const DeviceInfo dev = h200_limits();
  const KernelPlan& plan = Registry::instance().find(id);
  const auto problem = [](std::map<std::string, std::string> given) {
    return make_problem(MlaDecodeProblem::family(), given);
  };
  const auto kernels = [&](const Problem& p) {
    std::map<std::string, int> n;
    for (const ConfigDesc& c : plan.configs(p, dev)) {
      const std::string k = c.params.at("main_kernel").get<std::string>();
      EXPECT_EQ(c.name.ends_with("_pairs"), k == "pairs") << c.name;
      ++n[k];
    }
    return n;
  };
  const Problem h128 = problem({{"b", "128"}, {"h", "128"}, {"t", "16384"}});
  const std::map<std::string, int> both = kernels(h128);
  EXPECT_GT(both.at("owner"), 0);
  EXPECT_EQ(both.at("pairs"), both.at("owner"));
  const Problem h16 = problem({{"b", "128"}, {"h", "16"}, {"t", "4096"}});
  for (const ConfigDesc& c : plan.configs(h16, dev)) {
    const std::optional<std::string> why = plan.validate(h16, c, dev);
    if (c.name.ends_with("_pairs")) {
      ASSERT_TRUE(why.has_value()) << c.name;
      EXPECT_THAT(*why, HasSubstr("its pairs main kernel serves no 16 query rows a KV head")) << c.name;
    } else {
      EXPECT_FALSE(why.has_value()) << c.name << ": " << *why;
    }
  }
  for (const ConfigDesc& c : plan.configs(h128, dev))
    EXPECT_FALSE(plan.validate(h128, c, dev).has_value()) << c.name;

  const auto first = [&](std::map<std::string, std::string> given) {
    const Problem p = problem(given);
    for (const ConfigDesc& c : plan.configs(p, dev))
      if (!plan.validate(p, c, dev)) return c.name;
    return std::string("none");
  };
  EXPECT_EQ(first({{"b", "128"}, {"h", "128"}, {"t", "16384"}}), "fo8_mb1_evictfirst_p16_pairs");
  EXPECT_EQ(first({{"b", "128"}, {"h", "128"}, {"t", "8192"}}), "fo8_mb1_evictfirst_p16_pairs");
  // 124 pages an SM: v3's kernel
  EXPECT_EQ(first({{"b", "128"}, {"h", "128"}, {"t", "4096"}}), "fo8_mb1_evictnormal_p16");
  EXPECT_EQ(first({{"b", "1"}, {"h", "128"}, {"t", "4096"}}), "fo8_mb1_evictfirst_p16");
  EXPECT_EQ(first({{"b", "128"}, {"h", "64"}, {"t", "16384"}}), "fo8_mb1_evictnormal");  // one M tile
  EXPECT_EQ(
      first({{"b", "128"}, {"s", "2"}, {"h", "128"}, {"t", "4096"}, {"causal", "true"}, {"varlen", "true"}}),
      "fo8_mb1_evictfirst_p16_pairs");
  EXPECT_EQ(first({{"b", "64"}, {"s", "4"}, {"h", "128"}, {"causal", "true"}, {"varlen", "true"}}),
            "fo8_mb1_evictfirst_p16_tail_pairs");
  EXPECT_EQ(first({{"b", "128"}, {"h", "16"}, {"t", "4096"}}), "fo8_mb1_evictnormal");
  // Two KV heads: 64 rows each, below the pairs' rows; f16: v3's kernel by default (the pairs were
  // measured on bf16), its pairs refused at <= 32 rows like bf16's.
  EXPECT_EQ(first({{"b", "128"}, {"h", "128"}, {"hkv", "2"}, {"t", "16384"}}).ends_with("_pairs"), false);
  EXPECT_EQ(first({{"b", "128"}, {"h", "128"}, {"t", "16384"}, {"dtype", "f16"}}).ends_with("_pairs"), false);
  const Problem f16_h16 = problem({{"b", "8"}, {"h", "16"}, {"t", "4096"}, {"dtype", "f16"}});
  for (const ConfigDesc& c : plan.configs(f16_h16, dev))
    if (c.name.ends_with("_pairs")) {
      const std::optional<std::string> why = plan.validate(f16_h16, c, dev);
      ASSERT_TRUE(why.has_value()) << c.name;
      EXPECT_THAT(*why, HasSubstr("serves no 16 query rows a KV head with f16 q")) << c.name;
    }
  // An FP8 cache: neither kernel reads it, every config refused with the reason.
  const Problem fp8 = problem({{"b", "128"}, {"h", "128"}, {"t", "16384"}, {"kv-dtype", "fp8_tensor"}});
  for (const ConfigDesc& c : plan.configs(fp8, dev)) {
    const std::optional<std::string> why = plan.validate(fp8, c, dev);
    ASSERT_TRUE(why.has_value()) << c.name;
    EXPECT_THAT(*why, HasSubstr("reads no fp8_tensor KV cache")) << c.name;
  }
}

TEST(MlaDecodeConfigs, V11ChoosesItsMainKernelByConfig) {
  expect_main_kernel_by_config("cute/mla_decode/paged_sm90/v11");
}

// v12's configs name each main kernel's block: v3's 256 threads, the pair kernel's 384 (a producer
// warpgroup).
TEST(MlaDecodeConfigs, V12ChoosesItsMainKernelByConfig) {
  expect_main_kernel_by_config("cute/mla_decode/paged_sm90/v12");
  const DeviceInfo dev = h200_limits();
  const Problem h128 = make_problem(MlaDecodeProblem::family(), {{"b", "128"}, {"h", "128"}, {"t", "16384"}});
  for (const ConfigDesc& c : Registry::instance().find("cute/mla_decode/paged_sm90/v12").configs(h128, dev))
    EXPECT_EQ(c.params.at("threads").get<int>(), c.name.ends_with("_pairs") ? 384 : 256) << c.name;
}

TEST(MlaDecodeConfigs, OneMainKernelVersionsKeepTheirParams) {
  const DeviceInfo dev = h200_limits();
  const Problem h128 = make_problem(MlaDecodeProblem::family(), {{"b", "128"}, {"h", "128"}, {"t", "16384"}});
  // The versions with one main kernel keep their configs' params as before (no main_kernel).
  for (const char* id : {"cute/mla_decode/paged_sm90/v8", "cute/mla_decode/paged_sm90/v3",
                         "cute/mla_decode/paged_sm90_pairs/v3", "cute/mla_decode/paged_sm90_pairs/v4"})
    for (const ConfigDesc& c : Registry::instance().find(id).configs(h128, dev)) {
      EXPECT_FALSE(c.params.contains("main_kernel")) << id << " " << c.name;
      EXPECT_FALSE(c.name.ends_with("_pairs")) << id << " " << c.name;
    }
}

}  // namespace
}  // namespace cutelab::mla
