// MLA decode, host side: argument validation (unchecked mode touches no device, so fake
// pointers are enough), problem parsing and the cost model.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cutelab/core/error.hpp"
#include "kernels/mla_decode/mla_host_test_util.hpp"
#include "kernels/mla_decode/mla_test_util.hpp"
#include "mla_decode/common/args.hpp"
#include "mla_decode/common/decoder.hpp"
#include "mla_decode/common/plan_base.hpp"
#include "mla_decode/common/problem.hpp"
#include "mla_decode/common/workspace.hpp"
#include "mla_decode/fp8/kv_format.hpp"
#include "mla_decode/split/schedule.hpp"

namespace cutelab::mla {
namespace {

using ::testing::HasSubstr;

using namespace host_test;

TEST(MlaDecodeArgs, AcceptsGoodArgumentsAndReportsDims) {
  for (DType dt : {DType::bf16, DType::f16}) {
    const MlaDecodeDims d = validate_args(good_args(dt), /*checked=*/false);
    EXPECT_EQ(d.b, 2);
    EXPECT_EQ(d.s_q, 2);
    EXPECT_EQ(d.h_q, 16);
    EXPECT_EQ(d.h_kv, 2);
    EXPECT_EQ(d.num_blocks, 10);
    EXPECT_EQ(d.max_blocks, 4);
    EXPECT_EQ(d.dtype, dt);
    EXPECT_FLOAT_EQ(d.scale, 1.0f / 24.0f);
  }
  MlaDecodeArgs a = good_args();
  a.softmax_scale = 0.125f;
  EXPECT_FLOAT_EQ(validate_args(a, false).scale, 0.125f);
  // Strides left empty mean row-major.
  a.q.stride.clear();
  EXPECT_EQ(rejection(a), "(accepted)");
}

struct BadCase {
  std::string what;
  std::function<void(MlaDecodeArgs&)> mutate;
  std::string message;  // a substring the rejection must contain
};

void PrintTo(const BadCase& bc, std::ostream* os) { *os << bc.what; }

class MlaDecodeArgsRejects : public ::testing::TestWithParam<BadCase> {};

TEST_P(MlaDecodeArgsRejects, NamesTheArgument) {
  MlaDecodeArgs a = good_args();
  GetParam().mutate(a);
  EXPECT_THAT(rejection(a), HasSubstr(GetParam().message));
}

void reshape(TensorView& t, std::vector<std::int64_t> shape) {
  t.stride = contiguous_strides(shape);
  t.shape = std::move(shape);
}

const BadCase kBadCases[] = {
    // dtypes
    {"q_dtype", [](auto& a) { a.q.dtype = DType::f32; }, "q: expected dtype bf16 or f16, got f32"},
    {"kv_dtype", [](auto& a) { a.kv_cache.dtype = DType::f16; }, "kv_cache: expected dtype bf16 (same as q), got f16"},
    {"out_dtype", [](auto& a) { a.out.dtype = DType::f32; }, "out: expected dtype bf16 (same as q), got f32"},
    {"lse_dtype", [](auto& a) { a.lse.dtype = DType::bf16; }, "lse: expected dtype f32, got bf16"},
    {"table_dtype", [](auto& a) { a.block_table.dtype = DType::i64; }, "block_table: expected dtype i32, got i64"},
    {"seqlens_dtype", [](auto& a) { a.seqlens.dtype = DType::f32; }, "seqlens: expected dtype i32, got f32"},
    // rank and shape
    {"q_rank", [](auto& a) { reshape(a.q, {4, 16, 576}); }, "q: expected rank 4 [b, s_q, h_q, 576], got rank 3"},
    {"kv_rank", [](auto& a) { reshape(a.kv_cache, {640, 2, 576}); }, "kv_cache: expected rank 4"},
    {"table_rank", [](auto& a) { reshape(a.block_table, {8}); }, "block_table: expected rank 2"},
    {"out_shape", [](auto& a) { reshape(a.out, {2, 2, 16, 576}); },
     "out: expected shape [2, 2, 16, 512] [b, s_q, h_q, 512], got [2, 2, 16, 576]"},
    {"lse_shape", [](auto& a) { reshape(a.lse, {2, 2, 16}); }, "lse: expected shape [2, 16, 2] [b, h_q, s_q]"},
    {"table_rows", [](auto& a) { reshape(a.block_table, {3, 4}); }, "block_table: expected 2 rows (b from q)"},
    {"seqlens_shape", [](auto& a) { reshape(a.seqlens, {3}); }, "seqlens: expected shape [2] [b], got [3]"},
    {"kv_heads_vs_q", [](auto& a) { reshape(a.kv_cache, {10, 64, 5, 576}); }, "h_q (16) must be a multiple of h_kv (5)"},
    // head dims and page size
    {"q_head_dim", [](auto& a) { reshape(a.q, {2, 2, 16, 512}); }, "q: unsupported head dim 512, expected 576"},
    {"kv_head_dim", [](auto& a) { reshape(a.kv_cache, {10, 64, 2, 128}); },
     "kv_cache: unsupported head dim 128, expected 576"},
    {"page_size", [](auto& a) { reshape(a.kv_cache, {20, 32, 2, 576}); }, "kv_cache: expected 64 tokens per page, got 32"},
    // supported ranges
    {"b_large", [](auto& a) { reshape(a.q, {1025, 2, 16, 576}); }, "b (q dim 0) = 1025 is unsupported, expected 1..1024"},
    {"s_q_large", [](auto& a) { reshape(a.q, {2, 9, 16, 576}); }, "s_q (q dim 1) = 9 is unsupported, expected 1..8"},
    {"s_q_zero", [](auto& a) { reshape(a.q, {2, 0, 16, 576}); }, "s_q (q dim 1) = 0 is unsupported"},
    {"h_q_large", [](auto& a) { reshape(a.q, {2, 2, 129, 576}); }, "h_q (q dim 2) = 129 is unsupported, expected 1..128"},
    {"h_kv_large", [](auto& a) { reshape(a.kv_cache, {10, 64, 16, 576}); },
     "h_kv (kv_cache dim 2) = 16 is unsupported, expected 1..8"},
    {"no_blocks", [](auto& a) { reshape(a.kv_cache, {0, 64, 2, 576}); }, "kv_cache: expected 1.."},
    {"table_width", [](auto& a) { reshape(a.block_table, {2, 0}); }, "block_table: expected 1.."},
    // layout
    {"q_last_stride", [](auto& a) { a.q.stride = {2 * 2 * 16 * 1152, 16 * 1152, 1152, 2}; },
     "q: last dimension must be contiguous (stride 1), got stride 2"},
    {"out_last_stride", [](auto& a) { a.out.stride[3] = 3; }, "out: last dimension must be contiguous (stride 1), got stride 3"},
    {"lse_last_stride", [](auto& a) { a.lse.stride = {64, 1, 16}; }, "lse: last dimension must be contiguous"},
    {"q_row_stride", [](auto& a) { a.q.stride = {2 * 16 * 577 * 2, 16 * 577, 577, 1}; },
     "q: stride of dim 2 is 577 elements (1154 bytes), expected a multiple of 16 bytes"},
    {"kv_negative_stride", [](auto& a) { a.kv_cache.stride[0] = -64 * 2 * 576; }, "kv_cache: stride of dim 0 must be positive"},
    {"table_rows_overlap", [](auto& a) { a.block_table.stride = {2, 1}; },
     "block_table: row stride 2 is smaller than a row (max_blocks = 4)"},
    {"stride_count", [](auto& a) { a.out.stride = {1}; }, "out: has 1 strides for rank 4"},
    // pointers
    {"q_misaligned", [](auto& a) { a.q.data = fake_ptr(0x100002); }, "q: pointer 0x100002 is not 16-byte aligned"},
    {"kv_misaligned", [](auto& a) { a.kv_cache.data = fake_ptr(0x200008); }, "kv_cache: pointer 0x200008 is not 16-byte aligned"},
    {"out_misaligned", [](auto& a) { a.out.data = fake_ptr(0x500004); }, "out: pointer 0x500004 is not 16-byte aligned"},
    {"lse_misaligned", [](auto& a) { a.lse.data = fake_ptr(0x600002); }, "lse: pointer 0x600002 is not 4-byte aligned"},
    {"table_misaligned", [](auto& a) { a.block_table.data = fake_ptr(0x300001); }, "block_table: pointer 0x300001 is not 4-byte aligned"},
    {"seqlens_null", [](auto& a) { a.seqlens.data = nullptr; }, "seqlens: pointer is null"},
    // scale
    {"scale_nan", [](auto& a) { a.softmax_scale = NAN; }, "softmax_scale: expected a finite value > 0"},
    {"scale_negative", [](auto& a) { a.softmax_scale = -1.0f; }, "softmax_scale: expected a finite value > 0"},
};

INSTANTIATE_TEST_SUITE_P(Each, MlaDecodeArgsRejects, ::testing::ValuesIn(kBadCases),
                         [](const auto& info) { return info.param.what; });

TEST(MlaDecodeProblem, FamilyDefaults) {
  const MlaDecodeProblem p = MlaDecodeProblem::from(parse({}));
  EXPECT_EQ(p.b, 128);
  EXPECT_EQ(p.s_q, 1);
  EXPECT_EQ(p.t, 4096);
  EXPECT_EQ(p.h_q, 128);
  EXPECT_EQ(p.h_kv, 1);
  EXPECT_FALSE(p.varlen);
  EXPECT_FALSE(p.causal);
  EXPECT_EQ(p.dtype, DType::bf16);
  EXPECT_EQ(MlaDecodeProblem::family().name, "mla_decode");
}

TEST(MlaDecodeProblem, ParsesFlags) {
  const MlaDecodeProblem p = MlaDecodeProblem::from(
      parse({{"b", "6"}, {"s", "2"}, {"t", "777"}, {"h", "64"}, {"hkv", "4"}, {"varlen", "true"},
             {"causal", "true"}, {"dtype", "f16"}}));
  EXPECT_EQ(p.b, 6);
  EXPECT_EQ(p.s_q, 2);
  EXPECT_EQ(p.t, 777);
  EXPECT_EQ(p.h_q, 64);
  EXPECT_EQ(p.h_kv, 4);
  EXPECT_TRUE(p.varlen);
  EXPECT_TRUE(p.causal);
  EXPECT_EQ(p.dtype, DType::f16);
}

TEST(MlaDecodeProblem, SanitizeProblemIsValidAndSmall) {
  const MlaDecodeProblem p = MlaDecodeProblem::from(parse(MlaDecodeProblem::family().sanitize_problem));
  EXPECT_LE(p.b * p.t, 4096);
  EXPECT_GT(p.s_q, 1);
  EXPECT_TRUE(p.causal);
  EXPECT_TRUE(p.varlen);
}

TEST(MlaDecodeProblem, RejectsHeadsNotAMultipleOfKvHeads) {
  EXPECT_THAT(problem_rejection({{"h", "12"}, {"hkv", "5"}}), HasSubstr("h (12) must be a multiple of hkv (5)"));
  EXPECT_EQ(problem_rejection({{"h", "12"}, {"hkv", "4"}}), "(accepted)");
}

TEST(MlaDecodeProblem, RejectsOutOfRangeFlagsNamingThem) {
  EXPECT_THAT(problem_rejection({{"b", "1025"}}), HasSubstr("parameter 'b' of mla_decode must be in [1, 1024]"));
  EXPECT_THAT(problem_rejection({{"s", "9"}}), HasSubstr("parameter 's' of mla_decode must be in [1, 8]"));
  EXPECT_THAT(problem_rejection({{"t", "131073"}}), HasSubstr("parameter 't' of mla_decode must be in [1, 131072]"));
  EXPECT_THAT(problem_rejection({{"t", "0"}}), HasSubstr("parameter 't'"));
  EXPECT_THAT(problem_rejection({{"h", "129"}}), HasSubstr("parameter 'h' of mla_decode must be in [1, 128]"));
  EXPECT_THAT(problem_rejection({{"hkv", "9"}}), HasSubstr("parameter 'hkv' of mla_decode must be in [1, 8]"));
  EXPECT_THAT(problem_rejection({{"dtype", "f32"}}), HasSubstr("parameter 'dtype'"));
  EXPECT_EQ(problem_rejection({{"b", "1024"}, {"s", "8"}, {"t", "4096"}, {"h", "1"}, {"hkv", "1"}}), "(accepted)");
}

TEST(MlaDecodeProblem, RejectsProblemsBeyondTheMemoryCap) {
  const std::string why = problem_rejection({{"b", "1024"}, {"t", "131072"}});
  EXPECT_THAT(why, HasSubstr("b=1024"));
  EXPECT_THAT(why, HasSubstr("t=131072"));
  EXPECT_THAT(why, HasSubstr("GiB"));
  // The largest public case fits.
  EXPECT_EQ(problem_rejection({{"b", "128"}, {"s", "2"}, {"t", "32768"}, {"varlen", "true"}}), "(accepted)");
}

TEST(MlaDecodeCase, FixedLengths) {
  MlaDecodeProblem p;
  p.b = 5;
  p.t = 300;
  const MlaDecodeCase c = MlaDecodeCase::from_problem(p, 7);
  EXPECT_EQ(c.seqlens, std::vector<int>(5, 300));
  EXPECT_EQ(c.blocks_per_seq(), 5);  // ceil(300 / 64)
  EXPECT_DOUBLE_EQ(c.mean_seqlen(), 300.0);
}

TEST(MlaDecodeCase, VariableLengthsAreSeededClippedAndCentred) {
  MlaDecodeProblem p;
  p.b = 1024;
  p.s_q = 2;
  p.t = 4096;
  p.varlen = true;
  const MlaDecodeCase a = MlaDecodeCase::from_problem(p, 1);
  const MlaDecodeCase a2 = MlaDecodeCase::from_problem(p, 1);
  const MlaDecodeCase b = MlaDecodeCase::from_problem(p, 2);
  EXPECT_EQ(a.seqlens, a2.seqlens);
  EXPECT_NE(a.seqlens, b.seqlens);
  int below_t = 0;
  for (int len : a.seqlens) {
    EXPECT_GE(len, p.s_q);
    EXPECT_LE(len, 131072);
    below_t += len < 4096 ? 1 : 0;
  }
  // N(t, t/2) over 1024 draws: the mean within 3 standard errors (t/2/32 = 64) of t, a spread.
  EXPECT_NEAR(a.mean_seqlen(), 4096.0, 3 * 64.0 + 0.01 * 4096);
  EXPECT_GT(below_t, 300);
  EXPECT_LT(below_t, 724);
}

TEST(MlaDecodeCase, BlocksPerSeq) {
  MlaDecodeCase c;
  c.b = 3;
  c.seqlens = {0, 65, 64};
  EXPECT_EQ(c.blocks_per_seq(), 2);
  c.seqlens = {0, 0, 0};
  EXPECT_EQ(c.blocks_per_seq(), 1);  // never an empty table
  c.max_blocks_per_seq = 5;
  EXPECT_EQ(c.blocks_per_seq(), 5);
}

TEST(MlaDecodeCost, MatchesTheDesignFormula) {
  MlaDecodeCase c;
  c.b = 2;
  c.s_q = 2;
  c.h_q = 16;
  c.h_kv = 1;
  c.seqlens = {100, 300};  // mean 200
  // flops = b * s_q * h_q * mean * 2 * (576 + 512)
  EXPECT_DOUBLE_EQ(mla_flops(c), 2.0 * 2 * 16 * 200 * 2 * 1088);
  // bytes = b * (s_q*h_q*576*2 + mean*h_kv*576*kv_bytes + s_q*h_q*512*2)
  EXPECT_DOUBLE_EQ(mla_bytes(c), 2.0 * (2 * 16 * 576 * 2 + 200 * 1 * 576 * 2 + 2 * 16 * 512 * 2));
  c.h_kv = 2;
  c.dtype = DType::f16;
  EXPECT_DOUBLE_EQ(mla_bytes(c), 2.0 * (2 * 16 * 576 * 2 + 200 * 2 * 576 * 2 + 2 * 16 * 512 * 2));
}

TEST(MlaDecodeCost, PublicCaseMatchesAnchorThroughput) {
  // ANCHORS.md: b=128, s_q=1, h_q=128, s_k=16384 at 1047.4 us is 2341 GB/s and 558 TFLOP/s.
  const MlaDecodeProblem p = MlaDecodeProblem::from(parse({{"b", "128"}, {"t", "16384"}, {"h", "128"}}));
  const Cost cost = problem_cost(p);
  EXPECT_NEAR(cost.bytes / 1047.4e-6 / 1e9, 2341, 2);
  EXPECT_NEAR(cost.flops / 1047.4e-6 / 1e12, 558, 1);
}

TEST(MlaDecodeCost, VarlenCostUsesTheLengthsThePlanRuns) {
  const MlaDecodeProblem p =
      MlaDecodeProblem::from(parse({{"b", "128"}, {"t", "8192"}, {"varlen", "true"}, {"s", "2"}}));
  const MlaDecodeCase c = problem_case(p);
  EXPECT_DOUBLE_EQ(problem_cost(p).flops, mla_flops(c));
  EXPECT_DOUBLE_EQ(problem_cost(p).bytes, mla_bytes(c));
  EXPECT_NE(c.mean_seqlen(), 8192.0);
}

// ---- explicit lengths (--lens, suite "lens") --------------------------------------------------

TEST(MlaDecodeProblem, LensGiveEachRequestsLength) {
  const MlaDecodeProblem p =
      MlaDecodeProblem::from(parse({{"b", "4"}, {"s", "4"}, {"h", "16"}, {"lens", "4641,45118,1730,1696"}}));
  EXPECT_EQ(p.lens, (std::vector<int>{4641, 45118, 1730, 1696}));
  EXPECT_TRUE(MlaDecodeProblem::from(parse({})).lens.empty());
  // The case runs exactly these lengths, whatever the seed; t plays no part.
  const MlaDecodeCase c = MlaDecodeCase::from_problem(p, 1);
  EXPECT_EQ(c.seqlens, p.lens);
  EXPECT_EQ(MlaDecodeCase::from_problem(p, 2).seqlens, p.lens);
  EXPECT_EQ(problem_case(p).seqlens, p.lens);
  EXPECT_EQ(c.b, 4);
  EXPECT_EQ(c.s_q, 4);
  EXPECT_EQ(c.h_q, 16);
  EXPECT_EQ(c.blocks_per_seq(), 705);  // ceil(45118 / 64)
  EXPECT_DOUBLE_EQ(c.mean_seqlen(), (4641 + 45118 + 1730 + 1696) / 4.0);
  const MlaDecodeProblem other_t = MlaDecodeProblem::from(
      parse({{"b", "4"}, {"s", "4"}, {"h", "16"}, {"t", "77"}, {"lens", "4641,45118,1730,1696"}}));
  EXPECT_EQ(problem_case(other_t).seqlens, p.lens);
}

TEST(MlaDecodeProblem, LensAllowEmptyRequests) {
  const MlaDecodeProblem p =
      MlaDecodeProblem::from(parse({{"b", "3"}, {"s", "2"}, {"causal", "true"}, {"lens", "0,1,0"}}));
  EXPECT_EQ(problem_case(p).seqlens, (std::vector<int>{0, 1, 0}));
  EXPECT_EQ(problem_case(p).blocks_per_seq(), 1);
}

TEST(MlaDecodeProblem, RejectsBadLensNamingTheValue) {
  const std::map<std::string, std::string> four = {{"b", "4"}, {"s", "4"}, {"h", "16"}};
  auto with = [&](std::map<std::string, std::string> extra) {
    extra.insert(four.begin(), four.end());
    return problem_rejection(extra);
  };
  EXPECT_THAT(with({{"lens", "1,2,-5,4"}}), HasSubstr("lens[2] = -5 is negative"));
  EXPECT_THAT(with({{"lens", "1,200000,3,4"}}), HasSubstr("lens[1] = 200000 exceeds the maximum 131072"));
  EXPECT_THAT(with({{"lens", "1,2,3"}}), HasSubstr("lens has 3 values but b = 4"));
  EXPECT_THAT(with({{"lens", "1,2,3,4,5"}}), HasSubstr("lens has 5 values but b = 4"));
  EXPECT_THAT(with({{"lens", "1,2,abc,4"}}), HasSubstr("lens[2] = 'abc' is not an integer"));
  EXPECT_THAT(with({{"lens", ""}}), HasSubstr("parameter 'lens' of mla_decode: empty list"));
  EXPECT_THAT(with({{"lens", "1,2,3,4"}, {"varlen", "true"}}),
              HasSubstr("lens and varlen exclude each other"));
  EXPECT_EQ(with({{"lens", "1,2,3,4"}, {"varlen", "false"}}), "(accepted)");
  EXPECT_EQ(with({{"lens", "0,131072,3,4"}}), "(accepted)");
  // The same rules for a suite's JSON.
  const nlohmann::json j = {{"b", 4}, {"lens", {1, 2, -5, 4}}};
  EXPECT_THROW((void)make_problem(MlaDecodeProblem::family(), j), UsageError);
}

TEST(MlaDecodeProblem, RejectsBadLensInAProblemBuiltInCode) {
  // make_problem checks bounds; a Problem made directly must still be caught by from().
  auto direct = [](IntegerList lens) {
    Problem p = parse({{"b", "2"}});
    std::map<std::string, ParamValue> values = p.values();
    values["lens"] = std::move(lens);
    try {
      (void)MlaDecodeProblem::from(Problem("mla_decode", values));
    } catch (const UsageError& e) {
      return e.message();
    }
    return std::string("(accepted)");
  };
  EXPECT_THAT(direct({5, -1}), HasSubstr("lens[1] = -1 is negative"));
  EXPECT_THAT(direct({131073, 1}), HasSubstr("lens[0] = 131073 exceeds the maximum 131072"));
  EXPECT_THAT(direct({}), HasSubstr("lens: empty list"));
  EXPECT_EQ(direct({5, 0}), "(accepted)");
}

TEST(MlaDecodeProblem, LensCountTowardsTheMemoryCap) {
  auto repeated = [](int n, const std::string& v) {
    std::string out;
    for (int i = 0; i < n; ++i) out += (i ? "," : "") + v;
    return out;
  };
  const std::string why = problem_rejection({{"b", "1024"}, {"lens", repeated(1024, "131072")}});
  EXPECT_THAT(why, HasSubstr("b=1024 and lens (mean 131072)"));
  EXPECT_THAT(why, HasSubstr("GiB"));
  // The same batch with short requests fits, whatever t says.
  EXPECT_EQ(problem_rejection({{"b", "1024"}, {"t", "131072"}, {"lens", repeated(1024, "100")}}),
            "(accepted)");
}

TEST(MlaDecodeCost, LensCostUsesTheirMean) {
  const MlaDecodeProblem p =
      MlaDecodeProblem::from(parse({{"b", "4"}, {"s", "4"}, {"h", "16"}, {"lens", "4641,45118,1730,1696"}}));
  const double mean = (4641 + 45118 + 1730 + 1696) / 4.0;
  const Cost cost = problem_cost(p);
  EXPECT_DOUBLE_EQ(cost.flops, 4.0 * 4 * 16 * mean * 2 * 1088);
  EXPECT_DOUBLE_EQ(cost.bytes, 4.0 * (4 * 16 * 576 * 2 + mean * 1 * 576 * 2 + 4 * 16 * 512 * 2));
}

TEST(MlaDecodeProblem, LensKeyIsShort) {
  const Problem p = parse({{"b", "4"}, {"s", "4"}, {"h", "16"}, {"lens", "4641,45118,1730,1696"}});
  EXPECT_THAT(p.key(), HasSubstr("lens=[4641,45118,1730,1696]"));
  // Problems without lens keep the key they had (tuning caches stay valid).
  EXPECT_EQ(parse({}).key(), "b=128,causal=0,dtype=bf16,h=128,hkv=1,s=1,t=4096,varlen=0");
  std::string many;
  for (int i = 0; i < 128; ++i) many += (i ? "," : "") + std::to_string(1000 + i);
  const Problem big = parse({{"lens", many}});
  EXPECT_THAT(big.key(), HasSubstr("lens=[n=128,fnv1a="));
  EXPECT_LT(big.key().size(), 120u);
  EXPECT_THAT(big.display(), HasSubstr("lens=[128 values, mean 1063.5]"));
}

// ---- kv-pool: requests' pages from a few shared pages (the KV stays in L2) ----------------------

TEST(MlaDecodeProblem, KvPoolReachesTheCaseAndOnlyThenTheKey) {
  const MlaDecodeProblem p =
      MlaDecodeProblem::from(parse({{"b", "128"}, {"t", "16384"}, {"kv-pool", "256"}}));
  EXPECT_EQ(p.kv_pool, 256);
  EXPECT_EQ(problem_case(p).kv_pool_pages, 256);
  EXPECT_THAT(parse({{"kv-pool", "256"}}).key(), HasSubstr("kv-pool=256"));
  // Problems that do not name it keep their keys and read a page each.
  EXPECT_EQ(parse({}).key(), "b=128,causal=0,dtype=bf16,h=128,hkv=1,s=1,t=4096,varlen=0");
  EXPECT_EQ(problem_case(MlaDecodeProblem::from(parse({}))).kv_pool_pages, 0);
}

TEST(MlaDecodeProblem, RejectsBadKvPoolNamingTheValue) {
  EXPECT_THAT(problem_rejection({{"kv-pool", "-1"}}), HasSubstr("kv-pool"));
  EXPECT_THAT(problem_rejection({{"kv-pool", "2000000"}}), HasSubstr("kv-pool"));
  EXPECT_THAT(problem_rejection({{"kv-pool", "x"}}), HasSubstr("kv-pool"));
  EXPECT_EQ(problem_rejection({{"kv-pool", "0"}}), "(accepted)");
  EXPECT_EQ(problem_rejection({{"kv-pool", "1"}}), "(accepted)");
}

TEST(MlaDecodeTolerance, FollowsMeasureMd) {
  const Tolerance bf16 = out_tolerance(DType::bf16);
  const Tolerance f16 = out_tolerance(DType::f16);
  EXPECT_DOUBLE_EQ(bf16.max_rel_l2, 1e-2);  // the bound for bf16
  EXPECT_LT(f16.max_rel_l2, bf16.max_rel_l2);
  EXPECT_LT(f16.atol, bf16.atol);
  EXPECT_LE(lse_tolerance().max_rel_l2, 1e-5);  // fp32
}

// The relative L2 bound is kept where it is a statistic: 64 rows that see a key, or rows that all
// see 64 keys or more (relative-l2-over-few-values.md).
TEST(MlaDecodeTolerance, RelativeL2OnlyWhereItIsAStatistic) {
  const auto with = [](int b, int s_q, int h_q, bool causal, std::vector<int> lens) {
    return make_case(b, s_q, h_q, 1, causal, DType::bf16, std::move(lens));
  };
  EXPECT_FALSE(relative_l2_is_a_statistic(with(1, 1, 1, false, {1})));
  EXPECT_FALSE(relative_l2_is_a_statistic(with(1, 4, 1, true, {2})));  // two rows see a key
  EXPECT_FALSE(relative_l2_is_a_statistic(with(1, 1, 16, false, {20})));
  EXPECT_FALSE(relative_l2_is_a_statistic(with(6, 1, 1, false, {3, 64, 128, 129, 0, 1000})));
  EXPECT_FALSE(relative_l2_is_a_statistic(with(2, 1, 1, false, {0, 0})));  // no row sees a key
  // 48 rows: of 4 x 16 causal rows, those of s = 0 see no key (3 - 4 + 0 + 1 = 0).
  EXPECT_FALSE(relative_l2_is_a_statistic(with(1, 4, 16, true, {3})));
  EXPECT_TRUE(relative_l2_is_a_statistic(with(1, 4, 16, true, {4})));  // 64 rows, 1-4 keys
  EXPECT_TRUE(relative_l2_is_a_statistic(with(1, 1, 64, false, {1})));
  EXPECT_TRUE(relative_l2_is_a_statistic(with(1, 1, 1, false, {64})));  // one row, many keys
  EXPECT_TRUE(relative_l2_is_a_statistic(with(1, 1, 16, false, {4096})));
  EXPECT_TRUE(relative_l2_is_a_statistic(with(2, 1, 16, false, {0, 65})));
  // Causal: row s of a length-64 request with s_q 2 sees 63 + s keys.
  EXPECT_FALSE(relative_l2_is_a_statistic(with(1, 2, 16, true, {64})));
  EXPECT_TRUE(relative_l2_is_a_statistic(with(1, 2, 16, true, {65})));
}

// The Python package's decoders look configs up in the tuning cache under the key `cutelab run`
// stores them with: the same problem for the same flags.
TEST(MlaDecoderProblem, KeyIsTheOneTheCliTunesUnder) {
  const DecoderShape shape{128, 1, 16, 1, DType::bf16};
  const Problem from_flags =
      make_problem(MlaDecodeProblem::family(), {{"b", "128"}, {"t", "4096"}, {"h", "16"}});
  EXPECT_EQ(decoder_problem(shape, false, {}, 4096).key(), from_flags.key());
  EXPECT_EQ(decoder_problem(shape, false, {}, 0).key(), from_flags.key());  // t defaults to 4096
  const Problem with_lens = make_problem(
      MlaDecodeProblem::family(), {{"b", "3"}, {"lens", "4641,45118,0"}, {"h", "16"}, {"causal", "true"}});
  EXPECT_EQ(decoder_problem(shape, true, {4641, 45118, 0}, 0).key(), with_lens.key());
  // An FP8 cache: the key of `cutelab run --kv-dtype`; a cache in q's dtype named explicitly adds nothing.
  for (const KvFormat kv : {KvFormat::fp8_tensor, KvFormat::fp8_token}) {
    const DecoderShape fp8{128, 1, 64, 1, DType::bf16, kv};
    const Problem flags = make_problem(
        MlaDecodeProblem::family(),
        {{"b", "128"}, {"t", "4096"}, {"h", "64"}, {"kv-dtype", std::string(kv_format_name(kv))}});
    EXPECT_EQ(decoder_problem(fp8, false, {}, 4096).key(), flags.key());
    EXPECT_NE(decoder_problem(fp8, false, {}, 4096).key(),
              decoder_problem({128, 1, 64, 1, DType::bf16}, false, {}, 4096).key());
  }
  EXPECT_EQ(decoder_problem({128, 1, 16, 1, DType::bf16, KvFormat::bf16}, false, {}, 4096).key(),
            from_flags.key());
}

TEST(MlaDecoderProblem, ShapeOutsideTheFamilyIsRefusedNamingTheField) {
  const auto message = [](DecoderShape s) {
    try {
      s.validate();
    } catch (const UsageError& e) {
      return e.message();
    }
    return std::string("accepted");
  };
  EXPECT_EQ(message({1, 1, 128, 1, DType::bf16}), "accepted");
  EXPECT_THAT(message({0, 1, 128, 1, DType::bf16}), HasSubstr("max_batch = 0 outside [1, 1024]"));
  EXPECT_THAT(message({1, 9, 128, 1, DType::bf16}), HasSubstr("s_q = 9 outside [1, 8]"));
  EXPECT_THAT(message({1, 1, 16, 3, DType::bf16}), HasSubstr("h_q = 16 is not a multiple of h_kv = 3"));
  EXPECT_THAT(message({1, 1, 16, 1, DType::f32}), HasSubstr("dtype f32 is not supported"));
  EXPECT_EQ(message({1, 1, 64, 1, DType::bf16, KvFormat::fp8_token}), "accepted");
  EXPECT_EQ(message({1, 1, 64, 1, DType::bf16, KvFormat::fp8_tensor}), "accepted");
  EXPECT_EQ(message({1, 1, 64, 1, DType::f16, KvFormat::f16}), "accepted");
  EXPECT_THAT(message({1, 1, 64, 1, DType::f16, KvFormat::fp8_token}),
              HasSubstr("kv_format fp8_token takes bf16 q, got f16"));
  EXPECT_THAT(message({1, 1, 64, 1, DType::f16, KvFormat::bf16}),
              HasSubstr("kv_format bf16 with f16 q: a cache that is not FP8 is in q's dtype"));
}

TEST(MlaDecoderProblem, CacheFormatIsQsDtypeUnlessFp8) {
  EXPECT_EQ((DecoderShape{1, 1, 16, 1, DType::bf16}.cache_format()), KvFormat::bf16);
  EXPECT_EQ((DecoderShape{1, 1, 16, 1, DType::f16}.cache_format()), KvFormat::f16);
  EXPECT_EQ((DecoderShape{1, 1, 16, 1, DType::bf16, KvFormat::fp8_token}.cache_format()),
            KvFormat::fp8_token);
  EXPECT_EQ((DecoderShape{1, 1, 16, 1, DType::bf16, KvFormat::fp8_tensor}.cache_format()),
            KvFormat::fp8_tensor);
}

// FP8 KV formats: every argument of quantize_kv is checked on the host (fake pointers: unchecked
// mode reads nothing back).
TEST(MlaKvFp8, FormatsParseAndSizeTheirEntries) {
  EXPECT_EQ(parse_kv_format("fp8_token"), KvFormat::fp8_token);
  EXPECT_EQ(parse_kv_format("fp8_tensor"), KvFormat::fp8_tensor);
  EXPECT_FALSE(parse_kv_format("fp8"));
  EXPECT_EQ(kv_entry_bytes(KvFormat::bf16), 1152);
  EXPECT_EQ(kv_entry_bytes(KvFormat::fp8_tensor), 576);
  EXPECT_EQ(kv_entry_bytes(KvFormat::fp8_token), 656);
  EXPECT_EQ(kFp8RopeOffset + 64 * 2, kFp8TokenBytes);
  EXPECT_EQ(kFp8ScaleOffset + kFp8Groups * 4, kFp8RopeOffset);
}

TEST(MlaKvFp8, QuantizeArgumentsAreRefusedNamingTheArgument) {
  const auto message = [](QuantizeKvArgs a) {
    try {
      validate_quantize_kv(a, /*checked=*/false);
    } catch (const UsageError& e) {
      return e.message();
    }
    return std::string("accepted");
  };
  static float scale_storage = 1.f;
  const auto good = [](KvFormat f) {
    QuantizeKvArgs a;
    a.format = f;
    a.rows = view(0x10000, DType::bf16, {4, 2, 576});
    a.slots = view(0x20000, DType::i32, {4});
    a.cache = view(0x30000, DType::u8, {8, 64, 2, kv_entry_bytes(f)});
    a.scale = &scale_storage;
    return a;
  };
  EXPECT_EQ(message(good(KvFormat::fp8_tensor)), "accepted");
  EXPECT_EQ(message(good(KvFormat::fp8_token)), "accepted");
  QuantizeKvArgs a = good(KvFormat::fp8_tensor);
  a.format = KvFormat::bf16;
  EXPECT_THAT(message(a), HasSubstr("format: expected fp8_tensor or fp8_token, got bf16"));
  a = good(KvFormat::fp8_tensor);
  a.rows = view(0x10000, DType::f16, {4, 2, 576});
  EXPECT_THAT(message(a), HasSubstr("rows: expected dtype bf16, got f16"));
  a = good(KvFormat::fp8_tensor);
  a.rows = view(0x10000, DType::bf16, {4, 2, 512});
  EXPECT_THAT(message(a), HasSubstr("rows: expected shape [n, h_kv, 576]"));
  a = good(KvFormat::fp8_token);
  a.slots = view(0x20000, DType::i32, {3});
  EXPECT_THAT(message(a), HasSubstr("slots: expected shape [4] (one per row)"));
  a = good(KvFormat::fp8_token);
  a.slots = view(0x20000, DType::f32, {4});
  EXPECT_THAT(message(a), HasSubstr("slots: expected dtype i32 or i64, got f32"));
  a = good(KvFormat::fp8_token);
  a.cache = view(0x30000, DType::u8, {8, 64, 2, 576});
  EXPECT_THAT(message(a), HasSubstr("cache: expected shape [num_blocks, 64, 2, 656] for fp8_token"));
  a = good(KvFormat::fp8_tensor);
  a.cache = view(0x30000, DType::u8, {8, 64, 1, 576});
  EXPECT_THAT(message(a), HasSubstr("cache: expected shape [num_blocks, 64, 2, 576] for fp8_tensor"));
  a = good(KvFormat::fp8_token);
  a.cache = view(0x30000, DType::e4m3, {8, 64, 2, 656});
  EXPECT_THAT(message(a), HasSubstr("cache: expected dtype u8, got e4m3"));
  a = good(KvFormat::fp8_tensor);
  a.scale = nullptr;
  EXPECT_THAT(message(a), HasSubstr("scale: fp8_tensor needs a device fp32 scale, got null"));
  a = good(KvFormat::fp8_token);
  a.cache = view(0x30008, DType::u8, {8, 64, 2, 656});
  EXPECT_THAT(message(a), HasSubstr("cache: pointer must be 16-byte aligned"));
}

// The combine's launch shape rests on this hint: four warps share a row when it exceeds the 8
// pieces one warp loads at a time (b1 and b8 rows of the suite), one warp per row otherwise.
TEST(MlaSplitCombine, PiecesHintFollowsPartsAndPages) {
  EXPECT_EQ(combine_pieces_hint(1, 132, 64, 1), 64);    // b1 s_k 4096: one piece per page
  EXPECT_EQ(combine_pieces_hint(8, 132, 128, 1), 18);   // b8 s_k 8192: 17 parts each, + the cut one
  EXPECT_EQ(combine_pieces_hint(4, 66, 32, 4), 8);      // b4 h128 s_k 2048: pages in parts of 4
  EXPECT_EQ(combine_pieces_hint(32, 132, 32, 1), 6);    // b32 s_k 2048
  EXPECT_EQ(combine_pieces_hint(128, 132, 256, 1), 3);  // b128: at most a split in two or three
  EXPECT_EQ(combine_pieces_hint(1, 132, 10, 0), 10);    // a shortest part of 0 counts as 1
}

}  // namespace
}  // namespace cutelab::mla
