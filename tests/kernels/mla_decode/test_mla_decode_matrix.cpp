// Every registered plan of family mla_decode, every config that validates, against the fp32
// GPU reference through the runtime's checker: a cross-section of the issue's matrix (b, s_q,
// lengths around page borders, h_q, h_kv, causal, empty requests, f16), always with shuffled
// page order and NaN in every slot no request owns; the bf16 cases again over each FP8 KV
// format (NaN codes and NaN scales in those slots; the reference on the dequantised cache).

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <iostream>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "cutelab/core/dtype.hpp"
#include "cutelab/core/error.hpp"
#include "cutelab/runtime/check.hpp"
#include "cutelab/runtime/registry.hpp"
#include "kernels/mla_decode/mla_test_util.hpp"
#include "mla_decode/common/plan_base.hpp"
#include "mla_decode/common/workspace.hpp"

namespace cutelab::mla {
namespace {

struct MatrixCase {
  std::string name;
  MlaDecodeCase c;
  std::uint64_t seed = 0;
};

// Lengths drawn uniformly from [lo, hi], every `zero_every`-th request empty (0: none).
std::vector<int> random_lens(int b, int lo, int hi, int zero_every, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> dist(lo, hi);
  std::vector<int> lens(b);
  for (int i = 0; i < b; ++i) lens[i] = (zero_every > 0 && i % zero_every == zero_every - 1) ? 0 : dist(rng);
  return lens;
}

// Lengths ~ N(mean, mean / 2), clipped to [s_q, 4 * mean]: the suite's varlen shape.
std::vector<int> normal_lens(int b, int mean, int s_q, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> dist(mean, mean / 2.0);
  std::vector<int> lens(b);
  for (int& l : lens) l = static_cast<int>(std::clamp(std::round(dist(rng)), double(s_q), 4.0 * mean));
  return lens;
}

std::vector<MatrixCase> matrix_cases() {
  std::vector<MatrixCase> v;
  const auto add = [&](std::string tag, int b, int s_q, int h_q, int h_kv, bool causal, std::vector<int> lens,
                       DType dt = DType::bf16) {
    std::string name = concat("b", b, "_s", s_q, "_h", h_q, "_kv", h_kv, causal ? "_causal" : "", "_", tag,
                              dt == DType::f16 ? "_f16" : "");
    const std::uint64_t seed = 1000 + v.size();  // a fresh seed per case, reproducible
    v.push_back({std::move(name), make_case(b, s_q, h_q, h_kv, causal, dt, std::move(lens)), seed});
  };
  // One request: the page borders and the head counts of the issue.
  add("len1", 1, 1, 1, 1, false, {1});
  add("len20", 1, 1, 16, 1, false, {20});
  add("len63", 1, 2, 64, 1, true, {63});
  add("len64", 1, 4, 128, 1, true, {64});
  add("len65", 1, 1, 128, 1, false, {65});
  add("len140", 1, 1, 16, 1, false, {140});
  add("len4096", 1, 1, 128, 1, false, {4096});
  add("len4096", 1, 2, 128, 1, false, {4096});
  add("len2", 1, 4, 1, 1, true, {2});  // rows 0 and 1 see no key
  add("len100", 1, 4, 16, 1, false, {100});
  // Two requests: empty ones, a length below s_q, mixed page counts.
  add("len0_65", 2, 1, 16, 1, false, {0, 65});
  add("len140_1", 2, 2, 16, 1, true, {140, 1});
  add("len63_64", 2, 4, 64, 1, true, {63, 64});
  add("len4096_20", 2, 1, 128, 1, false, {4096, 20});
  add("len65_300", 2, 2, 64, 2, true, {65, 300});
  add("len0_0", 2, 1, 1, 1, false, {0, 0});
  add("len65_4096", 2, 2, 64, 1, true, {65, 4096}, DType::f16);
  // Six requests, every length of the issue among them.
  add("mixed", 6, 1, 64, 1, false, {1, 20, 63, 64, 65, 140});
  add("mixed", 6, 2, 128, 1, true, {0, 140, 4096, 1, 64, 65});
  add("mixed", 6, 4, 16, 1, true, {5, 0, 77, 130, 4, 200});
  add("mixed", 6, 1, 1, 1, false, {3, 64, 128, 129, 0, 1000});
  add("mixed", 6, 2, 16, 2, true, {20, 63, 0, 65, 140, 257});
  add("mixed", 6, 1, 64, 4, false, {64, 1, 500, 0, 191, 192});
  add("mixed", 6, 4, 128, 2, true, {4096, 3, 64, 65, 0, 700});
  add("mixed", 6, 1, 16, 8, false, {140, 1, 65, 63, 0, 20});
  add("group3", 6, 2, 12, 4, true, {33, 0, 128, 200, 64, 1});
  add("mixed", 6, 1, 128, 1, false, {1, 20, 63, 64, 65, 140}, DType::f16);
  // Sixty-four requests: varied lengths with empty ones; 4096 only twice.
  add("var600", 64, 1, 128, 1, false, random_lens(64, 1, 600, 7, 1));
  add("var1500", 64, 2, 64, 1, true, random_lens(64, 1, 1500, 9, 2));
  add("var300", 64, 4, 16, 1, true, random_lens(64, 0, 300, 0, 3));
  add("var200", 64, 1, 1, 1, false, random_lens(64, 0, 200, 5, 4));
  add("len4096", 64, 1, 16, 1, false, std::vector<int>(64, 4096));
  add("normal4096", 64, 2, 128, 1, true, normal_lens(64, 4096, 2, 5));
  // No more requests than parts, each fitting in one: the schedule gives each request a part of
  // its own and splits nothing (with and without empty requests).
  add("len256", 128, 1, 32, 1, false, std::vector<int>(128, 256));
  add("var256", 100, 1, 16, 1, false, random_lens(100, 1, 256, 9, 6));
  // Pages shared between requests (the kv-pool diagnostic; a serving engine's shared prefix):
  // 20 page reads over 5 pages, tails included.
  add("pool5", 6, 2, 64, 1, true, {300, 64, 0, 130, 1, 640});
  v.back().c.kv_pool_pages = 5;
  // More requests than parts (h_q = 128: 66 parts on 132 SMs; s_q = 2: 33): the cuts move to
  // request boundaries when that costs no more than a split (fixed overhead 8), else several
  // whole requests and pieces of split ones share a part (fixed overhead 2).
  add("len300", 160, 1, 128, 1, false, std::vector<int>(160, 300));
  add("var400", 150, 2, 128, 1, true, random_lens(150, 2, 400, 7, 8));
  // 8 M tiles a request: 8 columns of 16 parts leave 4 of 132 SMs, which the `_tail` configs give
  // a last row of half parts (pieces cut there, merged by the combine).
  add("var900", 40, 4, 128, 1, true, random_lens(40, 1, 900, 6, 9));
  const std::size_t bf16_cache = v.size();
  for (KvFormat f : {KvFormat::fp8_tensor, KvFormat::fp8_token})
    for (std::size_t i = 0; i < bf16_cache; ++i) {
      if (v[i].c.dtype != DType::bf16) continue;
      MatrixCase mc = v[i];
      mc.name += concat("_", kv_format_name(f));
      mc.c.kv_format = f;
      mc.seed += 100000;
      v.push_back(std::move(mc));
    }
  return v;
}

// gtest prints a parameter with this instead of its bytes.
void PrintTo(const MatrixCase& mc, std::ostream* os) { *os << mc.name << " (seed " << mc.seed << ")"; }

// Runs every config of `plan` that validates for `problem` on `ws` (its inputs) and checks each output
// against `ref` (the reference on those inputs); the refused configs' reasons go into `invalid`.
struct ConfigRuns {
  int valid = 0, runs = 0;
};
ConfigRuns run_every_config(const KernelPlan& plan, const Problem& problem, Workspace& ws,
                            const std::vector<std::vector<float>>& ref, const std::string& label,
                            std::string& invalid) {
  const std::vector<OutputSpec> outputs = ws.outputs();
  ConfigRuns n;
  for (const ConfigDesc& config : plan.configs(problem, device())) {
    if (auto why = plan.validate(problem, config, device())) {
      invalid += concat(config.name, ": ", *why, "; ");
      continue;
    }
    ++n.valid;
    const std::string what = concat(plan.id().full(), " config ", config.name, label);
    try {
      ws.poison(nullptr);
      const Kernel kernel = plan.plan(problem, config, ws, device());
      kernel.launch(nullptr);
      CUTELAB_CUDA_LAUNCH();
      CUTELAB_CUDA(cudaDeviceSynchronize());
    } catch (const Error& e) {
      ADD_FAILURE() << what << ": " << e.message();
      continue;
    }
    for (std::size_t i = 0; i < outputs.size(); ++i) {
      const std::vector<std::uint8_t> got = copy_to_host_bytes(outputs[i].view);
      const CheckResult r =
          check_output(outputs[i].name, outputs[i].view.dtype, got.data(), ref[i], outputs[i].tol);
      EXPECT_TRUE(r.passed) << what << ": " << r.reason << "\n  " << r.to_json().dump();
    }
    ++n.runs;
  }
  return n;
}

class MlaDecodeMatrix : public ::testing::TestWithParam<MatrixCase> {};

TEST_P(MlaDecodeMatrix, EveryPlanMatchesTheReference) {
  CUTELAB_REQUIRE_GPU();
  const MatrixCase& mc = GetParam();
  const std::vector<const KernelPlan*> plans = family_plans();
  ASSERT_FALSE(plans.empty()) << "no plan of family mla_decode is registered";
  const Problem problem = problem_for(mc.c);
  // The problem names every length, so each plan's inputs are exactly this case.
  ASSERT_EQ(MlaDecodeCase::from_problem(MlaDecodeProblem::from(problem), 0).seqlens, mc.c.seqlens);

  int runs = 0;
  std::string skipped;
  for (const KernelPlan* plan : plans) {
    const std::string name = plan->id().full();
    if (auto why = arch_mismatch(plan->arch(), device())) {
      skipped += concat(name, ": ", *why, "; ");
      continue;
    }
    if (!reads_format(*plan, mc.c)) continue;  // e.g. a bf16 design on an FP8 cache
    // Each plan's own inputs and reference: a design may read another form of the same case
    // (the FP8-KV baseline: an e4m3 cache, its reference on the dequantised one).
    const std::unique_ptr<Workspace> ws = plan->inputs(problem, mc.seed);
    const std::vector<std::vector<float>> ref = plan->reference(problem, *ws);
    ASSERT_EQ(ref.size(), ws->outputs().size()) << name;
    std::string invalid;
    const ConfigRuns done = run_every_config(*plan, problem, *ws, ref, concat(" seed ", mc.seed), invalid);
    const int valid = done.valid;
    runs += done.runs;
    // The issue asks every lab design to take every size of the family; a public kernel wrapped
    // as a baseline refuses what it cannot do, with the reason (printed here).
    if (plan->id().tier == "baseline" && valid == 0) {
      std::cout << "[ refused  ] " << name << " on " << mc.name << ": " << invalid << "\n";
    } else {
      EXPECT_GT(valid, 0) << name << " has no valid config for " << problem.key() << ": " << invalid;
    }
  }
  if (runs == 0 && !skipped.empty()) GTEST_SKIP() << skipped;
  // An FP8 case must have run some kernel: if every plan stopped reading the format, this case
  // would otherwise pass having checked nothing.
  if (mc.c.kv_format == KvFormat::fp8_tensor || mc.c.kv_format == KvFormat::fp8_token)
    EXPECT_GT(runs, 0) << "no plan read the " << kv_format_name(mc.c.kv_format) << " cache";
}

INSTANTIATE_TEST_SUITE_P(Issue3, MlaDecodeMatrix, ::testing::ValuesIn(matrix_cases()),
                         [](const auto& info) { return info.param.name; });

// Logits that keep rising along each request: page j's RoPE key columns (K only, not V) scaled by
// 1 + j / 2, so a row's max passes any earlier one by more than 2^8 (log2 units) every dozen or so
// pages. N(0, 1) inputs almost never do, and the kernels whose running max is a lazy reference
// (paged_sm90::kLazyMaxSlack) move it, and rescale O and the row sums, only there. Small batches:
// each request is cut into pieces that start with references of their own.
struct RisingCase {
  std::string name;
  MlaDecodeCase c;
};
void PrintTo(const RisingCase& rc, std::ostream* os) { *os << rc.name; }

std::vector<RisingCase> rising_cases() {
  return {
      {"b3_s1_h128", make_case(3, 1, 128, 1, false, DType::bf16, {2000, 700, 4100})},
      {"b2_s2_h64_causal", make_case(2, 2, 64, 1, true, DType::bf16, {3000, 1500})},
      {"b3_s1_h16", make_case(3, 1, 16, 1, false, DType::bf16, {2500, 64, 4000})},  // v8's S^T at <= 32 rows
      {"b2_s1_h32_f16", make_case(2, 1, 32, 1, false, DType::f16, {3000, 900})}};
}

// Scales the RoPE columns of every owned slot of page j of each request by 1 + j / 2 (in place,
// through the host; the workspace's reference then reads the scaled cache).
void raise_logits_along_requests(MlaDecodeWorkspace& ws) {
  const MlaDecodeCase& c = ws.spec();
  const std::vector<int>& table = ws.host_block_table();
  const int width = c.blocks_per_seq();
  std::vector<std::uint16_t> kv = copy_to_host<std::uint16_t>(ws.kv_cache.view());
  for (int i = 0; i < c.b; ++i)
    for (int j = 0; j * kPageSize < c.seqlens[i]; ++j) {
      const float f = 1.f + 0.5f * static_cast<float>(j);
      const int page = table[static_cast<std::size_t>(i) * width + j];
      const int tokens = std::min(kPageSize, c.seqlens[i] - j * kPageSize);
      for (int t = 0; t < tokens; ++t)
        for (int h = 0; h < c.h_kv; ++h) {
          std::uint16_t* row =
              kv.data() + ((static_cast<std::size_t>(page) * kPageSize + t) * c.h_kv + h) * kHeadDimQK;
          for (int e = kHeadDimV; e < kHeadDimQK; ++e) {
            const float v = c.dtype == DType::bf16 ? bf16_bits_to_float(row[e]) : f16_bits_to_float(row[e]);
            row[e] = c.dtype == DType::bf16 ? float_to_bf16_bits(v * f) : float_to_f16_bits(v * f);
          }
        }
    }
  ws.kv_cache.upload(kv.data(), kv.size() * sizeof(std::uint16_t));
}

class MlaDecodeRisingLogits : public ::testing::TestWithParam<RisingCase> {};

TEST_P(MlaDecodeRisingLogits, EveryPlanMatchesTheReference) {
  CUTELAB_REQUIRE_GPU();
  const RisingCase& rc = GetParam();
  const Problem problem = problem_for(rc.c);
  int runs = 0;
  for (const KernelPlan* plan : family_plans()) {
    const std::string name = plan->id().full();
    // The lab's designs: a baseline may copy the cache into a form of its own at construction.
    if (plan->id().tier == "baseline" || arch_mismatch(plan->arch(), device()) || !reads_format(*plan, rc.c))
      continue;
    const std::unique_ptr<Workspace> ws = plan->inputs(problem, 77);
    auto* mla = dynamic_cast<MlaDecodeWorkspace*>(ws.get());
    ASSERT_NE(mla, nullptr) << name << ": inputs are not an MlaDecodeWorkspace";
    raise_logits_along_requests(*mla);
    const std::vector<std::vector<float>> ref = plan->reference(problem, *ws);
    ASSERT_EQ(ref.size(), ws->outputs().size()) << name;
    std::string invalid;
    const ConfigRuns done = run_every_config(*plan, problem, *ws, ref, concat(" on ", rc.name), invalid);
    EXPECT_GT(done.valid, 0) << name << " has no valid config for " << problem.key() << ": " << invalid;
    runs += done.runs;
  }
  EXPECT_GT(runs, 0) << "no plan ran " << rc.name;
}

INSTANTIATE_TEST_SUITE_P(Slack, MlaDecodeRisingLogits, ::testing::ValuesIn(rising_cases()),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace cutelab::mla
