// MLA decode on the GPU: the test inputs themselves (NaN where nothing may be read), the fp32
// reference against the fp64 one, checked-mode rejections, and every registered plan of the
// family against the reference over a cross-section of the matrix.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <iostream>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "cute/mla_decode/paged_sm90/common/host.hpp"
#include "cute/mla_decode/paged_sm90/paged_sm90_v1/api.hpp"
#include "cutelab/core/error.hpp"
#include "cutelab/core/math.hpp"
#include "cutelab/runtime/check.hpp"
#include "cutelab/runtime/device.hpp"
#include "cutelab/runtime/registry.hpp"
#include "kernels/mla_decode/mla_test_util.hpp"
#include "mla_decode/common/args.hpp"
#include "mla_decode/common/plan_base.hpp"
#include "mla_decode/common/problem.hpp"
#include "mla_decode/common/workspace.hpp"
#include "mla_decode/reference/reference.hpp"
#if CUTELAB_WITH_FLASHINFER
#include <cuda_bf16.h>
#include <cuda_fp8.h>

#include "baseline/mla_decode/flashinfer_sm90_fp8kv/flashinfer_sm90_fp8kv_v1/workspace.hpp"
#endif

namespace cutelab::mla {
namespace {

using ::testing::HasSubstr;

bool is_nan_bits(std::uint16_t bits, DType dt) {
  return dt == DType::bf16 ? (bits & 0x7F80) == 0x7F80 && (bits & 0x7F) != 0 : (bits & 0x7C00) == 0x7C00 && (bits & 0x3FF) != 0;
}

bool all_poisoned(const TensorView& t) {
  const std::vector<std::uint8_t> bytes = copy_to_host_bytes(t);
  for (std::int64_t i = 0; i < t.numel(); ++i)
    if (!is_poison(t.dtype, bytes.data(), static_cast<std::size_t>(i))) return false;
  return true;
}

// ---------------------------------------------------------------------------------------------
// The inputs: a kernel that reads a slot it does not own must meet NaN.

TEST(MlaDecodeWorkspaceGpu, NanFillsExactlyTheSlotsNoRequestOwns) {
  CUTELAB_REQUIRE_GPU();
  MlaDecodeCase c = make_case(3, 1, 4, 2, false, DType::bf16, {0, 65, 130});
  c.max_blocks_per_seq = 5;
  const MlaDecodeWorkspace ws(c, 11);
  const int nb = ws.num_blocks();
  EXPECT_EQ(nb, 0 + 2 + 3 + 1 + c.spare_blocks);  // owned pages, the filler, the spares

  const std::vector<std::uint16_t> kv = copy_to_host<std::uint16_t>(ws.kv_cache.view());
  const std::vector<int> table = copy_to_host<int>(ws.block_table.view());
  EXPECT_EQ(table, ws.host_block_table());
  const std::size_t token = static_cast<std::size_t>(c.h_kv) * kHeadDimQK;

  std::vector<int> valid(nb, 0);  // tokens owned per page
  std::set<int> owned_pages;
  int filler = -1;
  for (int i = 0; i < c.b; ++i) {
    for (int j = 0; j < 5; ++j) {
      const int page = table[i * 5 + j];
      ASSERT_GE(page, 0);
      ASSERT_LT(page, nb);
      if (j < ceil_div(c.seqlens[i], kPageSize)) {
        EXPECT_TRUE(owned_pages.insert(page).second) << "page " << page << " owned twice";
        valid[page] = std::min(kPageSize, c.seqlens[i] - j * kPageSize);
      } else {
        if (filler < 0) filler = page;
        EXPECT_EQ(page, filler) << "unused slots point at one filler page";
      }
    }
  }
  EXPECT_EQ(owned_pages.count(filler), 0u);
  for (int page = 0; page < nb; ++page) {
    for (int t = 0; t < kPageSize; ++t) {
      const std::uint16_t* slot = kv.data() + (static_cast<std::size_t>(page) * kPageSize + t) * token;
      const bool want_nan = t >= valid[page];
      std::size_t nans = 0;
      for (std::size_t e = 0; e < token; ++e) nans += is_nan_bits(slot[e], c.dtype) ? 1 : 0;
      ASSERT_EQ(nans, want_nan ? token : 0) << "page " << page << " token " << t << " (owned " << valid[page] << ")";
    }
  }
  EXPECT_TRUE(all_poisoned(ws.out.view()));
  EXPECT_TRUE(all_poisoned(ws.lse.view()));
}

TEST(MlaDecodeWorkspaceGpu, KvPoolSharesPagesAndKeepsEveryReadSlotFinite) {
  CUTELAB_REQUIRE_GPU();
  MlaDecodeCase c = make_case(4, 1, 4, 1, false, DType::bf16, {300, 64, 1, 130});  // 5 + 1 + 1 + 3 page reads
  c.kv_pool_pages = 3;
  const MlaDecodeWorkspace ws(c, 12);
  EXPECT_EQ(ws.num_blocks(), 3 + 1 + c.spare_blocks);  // the pool, the filler, the spares
  const std::vector<int> table = ws.host_block_table();
  const int width = c.blocks_per_seq();
  std::vector<int> valid(ws.num_blocks(), 0);  // the most tokens any request reads of a page
  std::set<int> used;
  for (int i = 0; i < c.b; ++i)
    for (int j = 0; j < ceil_div(c.seqlens[i], kPageSize); ++j) {
      const int page = table[static_cast<std::size_t>(i) * width + j];
      used.insert(page);
      valid[page] = std::max(valid[page], std::min(kPageSize, c.seqlens[i] - j * kPageSize));
    }
  EXPECT_EQ(used.size(), 3u);
  const std::vector<std::uint16_t> kv = copy_to_host<std::uint16_t>(ws.kv_cache.view());
  for (int page = 0; page < ws.num_blocks(); ++page)
    for (int t = 0; t < kPageSize; ++t) {
      const std::uint16_t* slot = kv.data() + (static_cast<std::size_t>(page) * kPageSize + t) * kHeadDimQK;
      std::size_t nans = 0;
      for (int e = 0; e < kHeadDimQK; ++e) nans += is_nan_bits(slot[e], c.dtype) ? 1 : 0;
      ASSERT_EQ(nans, t >= valid[page] ? std::size_t(kHeadDimQK) : 0u) << "page " << page << " token " << t;
    }
}

#if CUTELAB_WITH_FLASHINFER
// The FP8-KV baseline's inputs: the bf16 cache holds exactly what FlashInfer dequantises
// (bf16(e4m3 * scale)), NaN stays NaN, and the scale uses e4m3's range.
TEST(MlaDecodeWorkspaceGpu, Fp8KvCacheIsTheDequantisedBf16Cache) {
  CUTELAB_REQUIRE_GPU();
  const flashinfer_sm90_fp8kv_v1::Fp8KvWorkspace ws(make_case(2, 1, 16, 1, false, DType::bf16, {100, 70}),
                                                    13);
  const float scale = ws.kv_scale;
  EXPECT_EQ(__bfloat162float(__float2bfloat16_rn(scale)), scale) << "the scale is a bf16 value";
  const std::vector<std::uint16_t> kv = copy_to_host<std::uint16_t>(ws.kv_cache.view());
  std::vector<__nv_fp8_e4m3> q(kv.size());
  ASSERT_EQ(ws.kv_e4m3.bytes(), q.size());
  CUTELAB_CUDA(cudaMemcpy(q.data(), ws.kv_e4m3.data(), q.size(), cudaMemcpyDeviceToHost));
  std::size_t nans = 0, mismatches = 0;
  float largest = 0;
  for (std::size_t i = 0; i < kv.size(); ++i) {
    const float e = static_cast<float>(q[i]);
    const bool nan = is_nan_bits(kv[i], DType::bf16);
    ASSERT_EQ(nan, std::isnan(e)) << "element " << i;
    if (nan) {
      ++nans;
      continue;
    }
    largest = std::max(largest, std::fabs(e));
    __nv_bfloat16 want = __float2bfloat16_rn(e * scale);
    mismatches += std::memcmp(&want, &kv[i], sizeof(want)) != 0;
  }
  EXPECT_EQ(mismatches, 0u);
  EXPECT_GT(nans, 0u) << "page tails and unowned pages hold NaN";
  EXPECT_GT(largest, 224.f) << "the scale maps the largest value near e4m3's 448";
  EXPECT_LE(largest, 448.f);
}
#endif

// ---------------------------------------------------------------------------------------------
// fp32 GPU reference against fp64 on the CPU.

struct RefCase {
  std::string name;
  MlaDecodeCase c;
};

void PrintTo(const RefCase& rc, std::ostream* os) { *os << rc.name; }

class MlaDecodeReferenceGpu : public ::testing::TestWithParam<RefCase> {};

TEST_P(MlaDecodeReferenceGpu, MatchesCpuFp64) {
  CUTELAB_REQUIRE_GPU();
  const MlaDecodeWorkspace ws(GetParam().c, 21);
  const MlaDecodeArgs args = ws.args();
  DeviceTensor out(DType::f32, ws.out.shape()), lse(DType::f32, ws.lse.shape());
  fill_poison(out.view());
  fill_poison(lse.view());
  reference_gpu(args, out.as<float>(), lse.as<float>());
  CUTELAB_CUDA_LAUNCH();
  CUTELAB_CUDA(cudaDeviceSynchronize());

  std::vector<float> cpu_out, cpu_lse;
  reference_cpu(args, download_inputs(args), cpu_out, cpu_lse);
  const std::vector<std::uint8_t> gpu_out = copy_to_host_bytes(out.view()), gpu_lse = copy_to_host_bytes(lse.view());
  const Tolerance fp32{.atol = 1e-5, .rtol = 1e-4, .max_rel_l2 = 1e-5};
  const CheckResult r_out = check_output("out", DType::f32, gpu_out.data(), cpu_out, fp32);
  const CheckResult r_lse = check_output("lse", DType::f32, gpu_lse.data(), cpu_lse, fp32);
  EXPECT_TRUE(r_out.passed) << r_out.reason << " rel_l2 " << r_out.rel_l2;
  EXPECT_TRUE(r_lse.passed) << r_lse.reason << " rel_l2 " << r_lse.rel_l2;
}

std::vector<RefCase> reference_cases() {
  std::vector<RefCase> v;
  v.push_back({"causal_s2_h16_empty_request", make_case(3, 2, 16, 1, true, DType::bf16, {0, 70, 130})});
  // seqlen 3 < s_q 4: the first causal row sees no key.
  v.push_back({"causal_s4_hkv2_f16_short", make_case(2, 4, 8, 2, true, DType::f16, {3, 200})});
  MlaDecodeCase scaled = make_case(2, 1, 4, 4, false, DType::bf16, {1, 64});
  scaled.softmax_scale = 0.1f;
  v.push_back({"hkv4_custom_scale", scaled});
  v.push_back({"noncausal_s2_long", make_case(1, 2, 2, 1, false, DType::bf16, {1000})});
  return v;
}

INSTANTIATE_TEST_SUITE_P(Small, MlaDecodeReferenceGpu, ::testing::ValuesIn(reference_cases()),
                         [](const auto& info) { return info.param.name; });

// ---------------------------------------------------------------------------------------------
// Checked mode: device values the host API must refuse, and nothing written when it does.

struct Corruption {
  std::string what;
  std::vector<int> lens;      // uploaded as seqlens
  int row = -1, col = -1, id = 0;  // block_table[row][col] = id when row >= 0
  std::string message;        // empty: must be accepted
};

// b = 3, lengths {100, 64, 150}, table width 3 (capacity 192), 2 + 1 + 3 + 1 + 2 = 9 pages. The
// width is the one the lengths need, so a plan's own inputs for problem_for() are this case.
MlaDecodeCase checked_case() { return make_case(3, 1, 16, 1, false, DType::bf16, {100, 64, 150}); }

std::vector<Corruption> corruptions(int num_blocks) {
  return {
      {"negative_seqlen", {100, -1, 5}, -1, -1, 0, "seqlens[1] = -1 is negative"},
      {"seqlen_beyond_table", {100, 64, 193}, -1, -1, 0, "seqlens[2] = 193 exceeds max_blocks * 64 = 192"},
      {"block_id_too_large", {100, 64, 5}, 0, 1, num_blocks,
       concat("block_table[0][1] = ", num_blocks, " is outside [0, ", num_blocks, ")")},
      {"block_id_negative", {100, 64, 5}, 2, 0, -3, concat("block_table[2][0] = -3 is outside [0, ", num_blocks, ")")},
  };
}

void apply(MlaDecodeWorkspace& ws, const Corruption& k) {
  ws.seqlens.upload(k.lens.data(), k.lens.size() * sizeof(int));
  std::vector<int> table = ws.host_block_table();
  if (k.row >= 0) table[k.row * ws.spec().blocks_per_seq() + k.col] = k.id;
  ws.block_table.upload(table.data(), table.size() * sizeof(int));
}

TEST(MlaDecodeChecked, RejectsBadDeviceValuesNamingThem) {
  CUTELAB_REQUIRE_GPU();
  MlaDecodeWorkspace ws(checked_case(), 31);
  EXPECT_NO_THROW((void)validate_args(ws.args(), /*checked=*/true));
  for (const Corruption& k : corruptions(ws.num_blocks())) {
    apply(ws, k);
    try {
      (void)validate_args(ws.args(), /*checked=*/true);
      ADD_FAILURE() << k.what << ": accepted";
    } catch (const UsageError& e) {
      EXPECT_THAT(e.message(), HasSubstr(k.message)) << k.what;
    }
    // Unchecked mode does not read device values.
    EXPECT_NO_THROW((void)validate_args(ws.args(), /*checked=*/false)) << k.what;
  }
  // Slots past a request's last page are never read, so any value there is fine.
  apply(ws, {"unused_slot", {100, 64, 5}, 2, 2, 999999, ""});
  EXPECT_NO_THROW((void)validate_args(ws.args(), /*checked=*/true));
}

TEST(MlaDecodeChecked, EveryPlanRejectsBeforeWritingAnything) {
  CUTELAB_REQUIRE_GPU();
  const std::vector<const KernelPlan*> plans = family_plans();
  ASSERT_FALSE(plans.empty()) << "no plan of family mla_decode is registered";
  int ran = 0;
  std::set<KvFormat> formats_run;
  for (const KernelPlan* plan : plans)
    for (KvFormat format : {KvFormat::bf16, KvFormat::fp8_tensor, KvFormat::fp8_token}) {
      MlaDecodeCase form = checked_case();
      form.kv_format = format;
      const Problem problem = problem_for(form);
      const std::string name = concat(plan->id().full(), " (", kv_format_name(format), " cache)");
      if (auto why = arch_mismatch(plan->arch(), device())) {
        std::cout << "[ INFO ] " << name << " skipped: " << *why << "\n";
        continue;
      }
      if (!reads_format(*plan, form)) continue;
      // The plan's own inputs (a design may read another form of the case: an e4m3 cache).
      const std::unique_ptr<Workspace> own = plan->inputs(problem, 41);
      auto* family_ws = dynamic_cast<MlaDecodeWorkspace*>(own.get());
      ASSERT_NE(family_ws, nullptr) << name << ": its workspace is not an MLA decode workspace";
      MlaDecodeWorkspace& ws = *family_ws;
      ASSERT_EQ(ws.spec().blocks_per_seq(), 3) << name;
      std::optional<ConfigDesc> config;
      for (const ConfigDesc& c : plan->configs(problem, device()))
        if (!plan->validate(problem, c, device())) {
          config = c;
          break;
        }
      ASSERT_TRUE(config) << name << ": no valid config for " << problem.key();
      for (const Corruption& k : corruptions(ws.num_blocks())) {
        apply(ws, k);
        ws.poison(nullptr);
        CUTELAB_CUDA(cudaDeviceSynchronize());
        try {
          const Kernel kernel = plan->plan(problem, *config, ws, device());
          kernel.launch(nullptr);
          CUTELAB_CUDA(cudaDeviceSynchronize());
          ADD_FAILURE() << name << " " << config->name << ": " << k.what << " was accepted";
        } catch (const UsageError& e) {
          EXPECT_THAT(e.message(), HasSubstr(k.message)) << name << " " << k.what;
        }
        CUTELAB_CUDA(cudaDeviceSynchronize());
        EXPECT_TRUE(all_poisoned(ws.out.view())) << name << " wrote out after rejecting " << k.what;
        EXPECT_TRUE(all_poisoned(ws.lse.view())) << name << " wrote lse after rejecting " << k.what;
      }
      ++ran;
      formats_run.insert(format);
    }
  if (ran == 0) GTEST_SKIP() << "no mla_decode plan runs on " << device().name;
  // Some plan must have taken every format: a format no plan reads would be checked by nothing.
  EXPECT_EQ(formats_run.size(), 3u) << "a KV format that no plan read";
}

// validate_args accepts padded rows (the family's contract); the paged_sm90 kernels address q,
// out and lse as dense arrays, so their Runner must refuse such views before encoding anything.
TEST(MlaDecodePagedSm90, RunnerRejectsPaddedViews) {
  CUTELAB_REQUIRE_GPU();
  if (auto why = arch_mismatch({9, 0, true}, device())) GTEST_SKIP() << *why;
  MlaDecodeWorkspace ws(checked_case(), 43);
  const MlaDecodeDims dims = validate_args(ws.args(), /*checked=*/false);
  const paged_sm90::Runner runner(dims, device(), paged_sm90::TuneConfig{},
                                  paged_sm90_v1::main_kernel(dims.dtype));
  std::unique_ptr<paged_sm90::StepPlan> plan = runner.make_step_plan();
  runner.plan_step(*plan, ws.seqlens.view(), nullptr);
  EXPECT_NO_THROW((void)runner.prepare(*plan, ws.args()));
  const std::int64_t h = dims.h_q, s = dims.s_q;
  struct Padding {
    std::string what;
    void (*pad)(MlaDecodeArgs&, std::int64_t h, std::int64_t s);
  };
  const std::vector<Padding> paddings = {
      {"q",
       [](MlaDecodeArgs& a, std::int64_t h, std::int64_t s) {
         a.q.stride = {s * h * 584, h * 584, 584, 1};
       }},
      {"out",
       [](MlaDecodeArgs& a, std::int64_t h, std::int64_t s) {
         a.out.stride = {s * h * 520, h * 520, 520, 1};
       }},
      {"block_table",
       [](MlaDecodeArgs& a, std::int64_t, std::int64_t) {
         a.block_table.stride = {a.block_table.shape[1] + 4, 1};
       }},
  };
  for (const Padding& p : paddings) {
    MlaDecodeArgs args = ws.args();
    p.pad(args, h, s);
    EXPECT_NO_THROW((void)validate_args(args, /*checked=*/false)) << p.what;
    try {
      (void)runner.prepare(*plan, args);
      ADD_FAILURE() << p.what << ": padded view accepted";
    } catch (const UsageError& e) {
      EXPECT_THAT(e.message(), HasSubstr(p.what + " must be contiguous")) << p.what;
    }
  }
}

}  // namespace
}  // namespace cutelab::mla
