// MLA decode with an FP8 KV cache, host side: the format validate_args reads off the cache and
// every refusal (unchecked mode touches no device, so fake pointers are enough), the kv-dtype
// family parameter, and the cost and memory models per format.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <functional>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "baseline/mla_decode/naive/naive_v1/config.hpp"
#include "cutelab/core/error.hpp"
#include "kernels/mla_decode/mla_host_test_util.hpp"
#include "mla_decode/common/args.hpp"
#include "mla_decode/common/plan_base.hpp"
#include "mla_decode/common/problem.hpp"
#include "mla_decode/fp8/kv_format.hpp"
#include "mla_decode/reference/reference.hpp"

namespace cutelab::mla {
namespace {

using ::testing::HasSubstr;

using namespace host_test;

// b = 2, s_q = 2, h_q = 16, h_kv = 2, 10 pages, 4 table columns, bf16 q; the cache in `format`.
MlaDecodeArgs fp8_args(KvFormat format) {
  MlaDecodeArgs a = good_args(DType::bf16);
  switch (format) {
    case KvFormat::fp8_tensor:
      a.kv_cache = view(0x200000, DType::e4m3, {10, 64, 2, 576});
      a.kv_scale = reinterpret_cast<const float*>(0x700000);
      break;
    case KvFormat::fp8_token:
      a.kv_cache = view(0x200000, DType::u8, {10, 64, 2, 656});
      break;
    default:
      break;
  }
  return a;
}

void reshape(TensorView& t, std::vector<std::int64_t> shape) {
  t.stride = contiguous_strides(shape);
  t.shape = std::move(shape);
}

TEST(MlaKvFp8Args, FormatIsReadOffTheCache) {
  const auto format = [](const MlaDecodeArgs& a) {
    return validate_args(a, /*checked=*/false, nullptr, KvFormats::all()).kv_format;
  };
  EXPECT_EQ(format(fp8_args(KvFormat::bf16)), KvFormat::bf16);
  EXPECT_EQ(format(fp8_args(KvFormat::fp8_tensor)), KvFormat::fp8_tensor);
  EXPECT_EQ(format(fp8_args(KvFormat::fp8_token)), KvFormat::fp8_token);
  MlaDecodeArgs a = fp8_args(KvFormat::fp8_tensor);
  a.kv_cache.dtype = DType::u8;  // u8 with 576-byte entries: fp8_tensor too
  EXPECT_EQ(format(a), KvFormat::fp8_tensor);
  a = fp8_args(KvFormat::bf16);
  a.q.dtype = a.kv_cache.dtype = a.out.dtype = DType::f16;
  EXPECT_EQ(format(a), KvFormat::f16);
  const MlaDecodeDims d = validate_args(fp8_args(KvFormat::fp8_token), false, nullptr, KvFormats::fp8_only());
  EXPECT_EQ(d.h_kv, 2);
  EXPECT_EQ(d.num_blocks, 10);
  EXPECT_EQ(d.dtype, DType::bf16);
  // Pages padded to another 16-byte multiple are fine (byte strides).
  a = fp8_args(KvFormat::fp8_token);
  a.kv_cache.stride = {64 * 2 * 656 + 16, 2 * 656, 656, 1};
  EXPECT_EQ(rejection(a, KvFormats::all()), "(accepted)");
}

struct Fp8BadCase {
  std::string what;
  KvFormat format;     // the cache fp8_args starts from
  KvFormats accepted;  // what the caller serves
  std::function<void(MlaDecodeArgs&)> mutate;
  std::string message;  // a substring the rejection must contain
};

void PrintTo(const Fp8BadCase& bc, std::ostream* os) { *os << bc.what; }

class MlaKvFp8ArgsRejects : public ::testing::TestWithParam<Fp8BadCase> {};

TEST_P(MlaKvFp8ArgsRejects, NamesTheArgument) {
  MlaDecodeArgs a = fp8_args(GetParam().format);
  GetParam().mutate(a);
  EXPECT_THAT(rejection(a, GetParam().accepted), HasSubstr(GetParam().message));
}

const auto kKeep = [](MlaDecodeArgs&) {};
std::function<void(MlaDecodeArgs&)> cache_shape(std::vector<std::int64_t> shape) {
  return [shape](MlaDecodeArgs& a) { reshape(a.kv_cache, shape); };
}
constexpr KvFormats kSame{};
constexpr KvFormats kAll = KvFormats::all();

const Fp8BadCase kFp8BadCases[] = {
    // a format the caller does not serve, named with the ones it does
    {"token_to_bf16_kernel", KvFormat::fp8_token, kSame, kKeep,
     "kv_cache: an fp8_token cache (u8 [.., 656]); this kernel reads bf16 (same as q)"},
    {"tensor_to_bf16_kernel", KvFormat::fp8_tensor, kSame, kKeep,
     "kv_cache: an fp8_tensor cache (e4m3 [.., 576]); this kernel reads bf16 (same as q)"},
    {"u8_tensor_to_bf16_kernel", KvFormat::fp8_tensor, kSame, [](auto& a) { a.kv_cache.dtype = DType::u8; },
     "kv_cache: an fp8_tensor cache (u8 [.., 576]); this kernel reads bf16 (same as q)"},
    {"bf16_to_fp8_kernel", KvFormat::bf16, KvFormats::fp8_only(), kKeep,
     "kv_cache: a bf16 cache (same as q); this kernel reads fp8_tensor (e4m3 or u8 [.., 576]) or "
     "fp8_token (u8 [.., 656])"},
    {"token_to_tensor_kernel", KvFormat::fp8_token, KvFormats{true, true, false}, kKeep,
     "kv_cache: an fp8_token cache (u8 [.., 656]); this kernel reads bf16 (same as q) or "
     "fp8_tensor (e4m3 or u8 [.., 576])"},
    // dtypes no format has
    {"f32_cache", KvFormat::bf16, kAll, [](auto& a) { a.kv_cache.dtype = DType::f32; },
     "kv_cache: expected dtype bf16 (same as q), fp8_tensor (e4m3 or u8 [.., 576]) or "
     "fp8_token (u8 [.., 656]), got f32"},
    {"u8_odd_entry", KvFormat::fp8_token, kAll, cache_shape({10, 64, 2, 600}),
     "kv_cache: a u8 cache holds fp8_tensor (last dim 576) or fp8_token (last dim 656) entries, "
     "got shape [10, 64, 2, 600]"},
    {"u8_to_bf16_kernel", KvFormat::fp8_token, kSame, cache_shape({10, 64, 2, 600}),
     "kv_cache: expected dtype bf16 (same as q), got u8"},
    // FP8 needs bf16 q (and out)
    {"f16_q", KvFormat::fp8_token, kAll, [](auto& a) { a.q.dtype = a.out.dtype = DType::f16; },
     "q: expected dtype bf16 with an fp8_token cache (u8 [.., 656]), got f16"},
    {"f16_q_tensor", KvFormat::fp8_tensor, kAll, [](auto& a) { a.q.dtype = a.out.dtype = DType::f16; },
     "q: expected dtype bf16 with an fp8_tensor cache (e4m3 [.., 576]), got f16"},
    {"f16_out", KvFormat::fp8_token, kAll, [](auto& a) { a.out.dtype = DType::f16; },
     "out: expected dtype bf16 (same as q), got f16"},
    // kv_scale: fp8_tensor's alone
    {"tensor_no_scale", KvFormat::fp8_tensor, kAll, [](auto& a) { a.kv_scale = nullptr; },
     "kv_scale: an fp8_tensor cache needs its device fp32 scale, got null"},
    {"tensor_scale_misaligned", KvFormat::fp8_tensor, kAll,
     [](auto& a) { a.kv_scale = reinterpret_cast<const float*>(0x700002); },
     "kv_scale: pointer 0x700002 is not 4-byte aligned"},
    {"bf16_with_scale", KvFormat::bf16, kSame,
     [](auto& a) { a.kv_scale = reinterpret_cast<const float*>(0x700000); },
     "kv_scale: given for a bf16 cache (same as q); only fp8_tensor takes one"},
    {"token_with_scale", KvFormat::fp8_token, kAll,
     [](auto& a) { a.kv_scale = reinterpret_cast<const float*>(0x700000); },
     "kv_scale: given for an fp8_token cache (u8 [.., 656]); only fp8_tensor takes one"},
    // shape, layout and pointer, as for bf16
    {"token_rank", KvFormat::fp8_token, kAll, cache_shape({640, 2, 656}),
     "kv_cache: expected rank 4 [num_blocks, 64, h_kv, 656], got rank 3"},
    {"token_page_size", KvFormat::fp8_token, kAll, cache_shape({20, 32, 2, 656}),
     "kv_cache: expected 64 tokens per page, got 32"},
    {"tensor_page_size", KvFormat::fp8_tensor, kAll, cache_shape({20, 32, 2, 576}),
     "kv_cache: expected 64 tokens per page, got 32"},
    {"tensor_entry", KvFormat::fp8_tensor, kAll, cache_shape({10, 64, 2, 656}),
     "kv_cache: unsupported head dim 656, expected 576"},
    {"token_h_kv", KvFormat::fp8_token, kAll, cache_shape({10, 64, 16, 656}),
     "h_kv (kv_cache dim 2) = 16 is unsupported, expected 1..8"},
    {"token_heads_vs_q", KvFormat::fp8_token, kAll, cache_shape({10, 64, 5, 656}),
     "h_q (16) must be a multiple of h_kv (5)"},
    {"token_no_blocks", KvFormat::fp8_token, kAll, cache_shape({0, 64, 2, 656}), "kv_cache: expected 1.."},
    {"token_page_stride", KvFormat::fp8_token, kAll,
     [](auto& a) {
       a.kv_cache.stride = {64 * 2 * 656 + 8, 2 * 656, 656, 1};
     },
     "kv_cache: stride of dim 0 is 83976 elements (83976 bytes), expected a multiple of 16 bytes"},
    {"tensor_last_stride", KvFormat::fp8_tensor, kAll, [](auto& a) { a.kv_cache.stride[3] = 2; },
     "kv_cache: last dimension must be contiguous (stride 1), got stride 2"},
    {"token_misaligned", KvFormat::fp8_token, kAll,
     [](auto& a) { a.kv_cache.data = reinterpret_cast<void*>(0x200008); },
     "kv_cache: pointer 0x200008 is not 16-byte aligned"},
};

INSTANTIATE_TEST_SUITE_P(Each, MlaKvFp8ArgsRejects, ::testing::ValuesIn(kFp8BadCases),
                         [](const auto& info) { return info.param.what; });

// The CPU reference reads raw 16-bit elements: an FP8 cache is refused before anything is read.
TEST(MlaKvFp8Args, CpuReferenceRefusesFp8Caches) {
  for (KvFormat f : {KvFormat::fp8_tensor, KvFormat::fp8_token}) {
    const MlaDecodeArgs a = fp8_args(f);
    const std::string cache = concat("kv_cache is an ", kv_format_name(f), " cache");
    try {
      (void)download_inputs(a);
      ADD_FAILURE() << "download_inputs accepted " << kv_format_name(f);
    } catch (const UsageError& e) {
      EXPECT_THAT(e.message(), HasSubstr("download_inputs: " + cache));
    }
    std::vector<float> out, lse;
    try {
      reference_cpu(a, HostMlaInputs{}, out, lse);
      ADD_FAILURE() << "reference_cpu accepted " << kv_format_name(f);
    } catch (const UsageError& e) {
      EXPECT_THAT(e.message(), HasSubstr("reference_cpu: " + cache));
      EXPECT_THAT(e.message(), HasSubstr("reference_gpu dequantises"));
    }
  }
}

// ---- kv-dtype ------------------------------------------------------------------------------

TEST(MlaKvFp8Problem, KvDtypeDefaultsToTheCacheInQsDtype) {
  EXPECT_EQ(MlaDecodeProblem::from(parse({})).kv_format, KvFormat::bf16);
  EXPECT_EQ(MlaDecodeProblem::from(parse({{"dtype", "f16"}})).kv_format, KvFormat::f16);
  EXPECT_EQ(MlaDecodeProblem::from(parse({{"kv-dtype", "same"}, {"dtype", "f16"}})).kv_format, KvFormat::f16);
  const ParamSpec* spec = MlaDecodeProblem::family().find("kv-dtype");
  ASSERT_NE(spec, nullptr);
  EXPECT_EQ(spec->default_value, "same");
  EXPECT_EQ(spec->choices, (std::vector<std::string>{"same", "fp8_tensor", "fp8_token"}));
  for (const char* word : {"same", "fp8_tensor", "fp8_token", "bf16"})
    EXPECT_THAT(spec->help, HasSubstr(word));
}

TEST(MlaKvFp8Problem, KvDtypeParsesFromFlagsAndSuites) {
  const MlaDecodeProblem t = MlaDecodeProblem::from(parse({{"kv-dtype", "fp8_tensor"}, {"h", "16"}}));
  EXPECT_EQ(t.kv_format, KvFormat::fp8_tensor);
  EXPECT_EQ(t.dtype, DType::bf16);
  const nlohmann::json suite_problem = {{"b", 128}, {"h", 64}, {"kv-dtype", "fp8_token"}};
  const MlaDecodeProblem k = MlaDecodeProblem::from(make_problem(MlaDecodeProblem::family(), suite_problem));
  EXPECT_EQ(k.kv_format, KvFormat::fp8_token);
  // The case (and so the workspace and the cost) carries it.
  EXPECT_EQ(MlaDecodeCase::from_problem(k, 1).kv_format, KvFormat::fp8_token);
  EXPECT_EQ(problem_case(t).kv_format, KvFormat::fp8_tensor);
}

TEST(MlaKvFp8Problem, RefusesFp8WithF16AndUnknownNames) {
  EXPECT_THAT(problem_rejection({{"kv-dtype", "fp8_token"}, {"dtype", "f16"}}),
              HasSubstr("kv-dtype fp8_token needs dtype bf16"));
  EXPECT_THAT(problem_rejection({{"kv-dtype", "fp8_tensor"}, {"dtype", "f16"}}), HasSubstr("got dtype f16"));
  EXPECT_THAT(
      problem_rejection({{"kv-dtype", "fp8"}}),
      HasSubstr(
          "parameter 'kv-dtype' of mla_decode: expected one of same, fp8_tensor, fp8_token; got 'fp8'"));
  EXPECT_THAT(problem_rejection({{"kv-dtype", "e4m3"}}), HasSubstr("parameter 'kv-dtype'"));
  EXPECT_THAT(problem_rejection({{"kv_dtype", "fp8_token"}}), HasSubstr("unknown parameter 'kv_dtype'"));
}

TEST(MlaKvFp8Problem, KeysOfProblemsWithoutFp8StayAsTheyWere) {
  // "same", given or not, stays out of the key: tuning caches and results keep matching.
  const std::string old_key = "b=128,causal=0,dtype=bf16,h=128,hkv=1,s=1,t=4096,varlen=0";
  EXPECT_EQ(parse({}).key(), old_key);
  EXPECT_EQ(parse({{"kv-dtype", "same"}}).key(), old_key);
  EXPECT_FALSE(parse({{"kv-dtype", "same"}}).has("kv-dtype"));
  EXPECT_EQ(parse({{"kv-dtype", "fp8_token"}}).key(),
            "b=128,causal=0,dtype=bf16,h=128,hkv=1,kv-dtype=fp8_token,s=1,t=4096,varlen=0");
  EXPECT_NE(parse({{"kv-dtype", "fp8_tensor"}}).key(), parse({{"kv-dtype", "fp8_token"}}).key());
}

// The FP8 suite's problems, as `cutelab suite` makes them: every row in both FP8 formats.
TEST(MlaKvFp8Problem, SuiteCasesNameTheirFormat) {
  std::ifstream in(std::string(CUTELAB_SOURCE_DIR) + "/bench/suites/mla_decode_fp8.json");
  ASSERT_TRUE(in) << "bench/suites/mla_decode_fp8.json";
  const nlohmann::json suite = nlohmann::json::parse(in);
  std::map<std::string, int> formats;
  for (const nlohmann::json& c : suite.at("cases")) {
    const MlaDecodeProblem p =
        MlaDecodeProblem::from(make_problem(MlaDecodeProblem::family(), c.at("problem")));
    const std::string label = c.at("label");
    ASSERT_TRUE(is_fp8(p.kv_format)) << label;
    EXPECT_THAT(label, HasSubstr(std::string(kv_format_name(p.kv_format)))) << label;
    ++formats[std::string(kv_format_name(p.kv_format))];
  }
  EXPECT_EQ(formats["fp8_tensor"], 8);
  EXPECT_EQ(formats["fp8_token"], 8);
}

// ---- cost and memory -----------------------------------------------------------------------

TEST(MlaKvFp8Cost, KvBytesFollowTheFormat) {
  MlaDecodeCase c;
  c.b = 2;
  c.s_q = 2;
  c.h_q = 16;
  c.h_kv = 2;
  c.seqlens = {100, 300};                                    // mean 200
  const double q_out = 2 * 16 * 576 * 2 + 2 * 16 * 512 * 2;  // per request, as for bf16
  const auto bytes = [&](KvFormat f) {
    c.kv_format = f;
    return mla_bytes(c);
  };
  EXPECT_DOUBLE_EQ(bytes(KvFormat::bf16), 2.0 * (q_out + 200.0 * 2 * 576 * 2));
  EXPECT_DOUBLE_EQ(bytes(KvFormat::fp8_tensor), 2.0 * (q_out + 200.0 * 2 * 576 * 1));
  // 656 bytes per token and KV head: 512 e4m3, 4 fp32 scales, 64 bf16 RoPE values.
  EXPECT_DOUBLE_EQ(bytes(KvFormat::fp8_token), 2.0 * (q_out + 200.0 * 2 * 656));
  c.dtype = DType::f16;
  EXPECT_DOUBLE_EQ(bytes(KvFormat::f16), 2.0 * (q_out + 200.0 * 2 * 576 * 2));
  // The flops do not depend on the format.
  const MlaDecodeProblem p = MlaDecodeProblem::from(parse({{"kv-dtype", "fp8_token"}, {"h", "16"}}));
  const MlaDecodeProblem same = MlaDecodeProblem::from(parse({{"h", "16"}}));
  EXPECT_DOUBLE_EQ(problem_cost(p).flops, problem_cost(same).flops);
  EXPECT_LT(problem_cost(p).bytes, problem_cost(same).bytes);
}

TEST(MlaKvFp8Cost, DeviceBytesCountTheOriginalTheFp8CacheAndTheDequantisedCopy) {
  MlaDecodeProblem p;
  p.b = 2;
  p.t = 100;
  p.h_q = 16;
  p.h_kv = 1;
  const double entries = 2.0 * (100 + 64);  // t plus a page of slack per request
  const double q_out =
      32.0 * 576 * 2 + 32.0 * 512 * (2 + 4) + 32.0 * 8;  // 32 rows: q, out + fp32 copy, lse x2
  EXPECT_DOUBLE_EQ(estimated_device_bytes(p), entries * 576 * 2 + q_out);
  p.kv_format = KvFormat::fp8_tensor;
  EXPECT_DOUBLE_EQ(estimated_device_bytes(p), entries * (576 * 2 + 576 + 576 * 4) + q_out);
  p.kv_format = KvFormat::fp8_token;
  EXPECT_DOUBLE_EQ(estimated_device_bytes(p), entries * (576 * 2 + 656 + 576 * 4) + q_out);
  // A problem that fits with a bf16 cache can be refused with an FP8 one (3.5x the KV bytes).
  const std::map<std::string, std::string> big = {{"b", "512"}, {"t", "65536"}, {"h", "16"}};
  EXPECT_EQ(problem_rejection(big), "(accepted)");
  std::map<std::string, std::string> big_fp8 = big;
  big_fp8["kv-dtype"] = "fp8_tensor";
  const std::string why = problem_rejection(big_fp8);
  EXPECT_THAT(why, HasSubstr("kv-dtype=fp8_tensor"));
  EXPECT_THAT(why, HasSubstr("GiB"));
}

// ---- kernels that read no FP8 cache say so -------------------------------------------------

TEST(MlaKvFp8Configs, NaiveBaselineRefusesFp8Problems) {
  DeviceInfo dev;
  dev.max_threads_per_block = 1024;
  const naive_v1::NaiveConfig config{256, 8};
  const MlaDecodeProblem same = MlaDecodeProblem::from(parse({{"h", "16"}}));
  EXPECT_EQ(config.validate(same, dev), std::nullopt);
  for (const char* kv : {"fp8_tensor", "fp8_token"}) {
    const std::optional<std::string> why =
        config.validate(MlaDecodeProblem::from(parse({{"h", "16"}, {"kv-dtype", kv}})), dev);
    ASSERT_TRUE(why) << kv;
    EXPECT_THAT(*why, HasSubstr(std::string("kv-dtype ") + kv));
  }
}

}  // namespace
}  // namespace cutelab::mla
