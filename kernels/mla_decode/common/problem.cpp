#include "mla_decode/common/problem.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "cutelab/core/error.hpp"
#include "cutelab/core/math.hpp"

namespace cutelab::mla {

namespace {

// Device memory a problem may ask for. Beyond this the run would not fit next to the
// reference and the L2 flush buffer on an 80 GB part, so it is refused up front.
constexpr double kMemoryCapBytes = 64.0 * (1ull << 30);

ParamSpec integer_param(std::string name, std::string help, std::int64_t def, std::int64_t lo, std::int64_t hi) {
  ParamSpec s;
  s.name = std::move(name);
  s.help = std::move(help);
  s.kind = ParamSpec::Kind::integer;
  s.default_value = std::to_string(def);
  s.min = lo;
  s.max = hi;
  return s;
}

ParamSpec bool_param(std::string name, std::string help) {
  ParamSpec s;
  s.name = std::move(name);
  s.help = std::move(help);
  s.kind = ParamSpec::Kind::boolean;
  s.default_value = "false";
  return s;
}

Family make_family() {
  Family f;
  f.name = "mla_decode";
  f.description =
      "DeepSeek-style MLA decode (absorbed, d_qk 576, d_v 512) over a paged KV cache of 64-token pages";
  f.params = {
      integer_param("b", "requests in the batch", 128, 1, kMaxBatch),
      integer_param("s", "query tokens per request (s_q)", 1, 1, kMaxQueryLen),
      integer_param("t", "KV sequence length per request (the mean with --varlen; unused with --lens)", 4096,
                    1, kMaxSeqlen),
      integer_param("h", "query heads (h_q)", 128, 1, kMaxHeadsQ),
      integer_param("hkv", "KV heads (h_kv); h must be a multiple of it", 1, 1, kMaxHeadsKV),
      bool_param("varlen", "draw lengths per request from N(t, t/2), clipped to [s, 131072]"),
      bool_param("causal", "query i of a request sees the first seqlen - s + i + 1 keys"),
  };
  ParamSpec lens;
  lens.name = "lens";
  lens.help =
      "KV length of each request: b values, 0 allowed (an empty request); t is unused with it, varlen "
      "excluded";
  lens.kind = ParamSpec::Kind::integer_list;
  lens.min = 0;
  lens.max = kMaxSeqlen;
  f.params.push_back(std::move(lens));
  ParamSpec dtype;
  dtype.name = "dtype";
  dtype.help = "element type of q, the KV cache and out";
  dtype.kind = ParamSpec::Kind::choice;
  dtype.default_value = "bf16";
  dtype.choices = {"bf16", "f16"};
  f.params.push_back(std::move(dtype));
  ParamSpec kv;
  kv.name = "kv-dtype";
  kv.help =
      "KV-cache format: same (the cache in dtype), fp8_tensor (e4m3, one fp32 scale for the cache), "
      "fp8_token (656 B per token: 512 e4m3, an fp32 scale per 128 of them, 64 bf16 RoPE); FP8 needs "
      "dtype bf16 and is checked against the reference on the dequantised cache";
  kv.kind = ParamSpec::Kind::choice;
  kv.default_value = "same";
  kv.choices = {"same", "fp8_tensor", "fp8_token"};
  kv.omit_default = true;  // problems that do not name it keep the keys they had
  f.params.push_back(std::move(kv));
  ParamSpec pool = integer_param(
      "kv-pool",
      "0: every request reads pages of its own; N > 0: all requests' pages are taken in turn from N pages, "
      "so the KV a call reads stays in L2 (what a kernel costs without its DRAM stream; a diagnostic, "
      "not a serving case)",
      0, 0, kMaxKvPool);
  pool.omit_default = true;
  f.params.push_back(std::move(pool));
  // Small enough for compute-sanitizer, yet covering causal masking, variable lengths with a
  // partly filled last page, and a head group larger than one.
  f.sanitize_problem = {{"b", "2"},       {"s", "2"},         {"t", "200"},      {"h", "16"},
                        {"hkv", "1"},     {"varlen", "true"}, {"causal", "true"}, {"dtype", "bf16"}};
  return f;
}

double mean_of(const std::vector<int>& v) {
  return v.empty() ? 0.0 : std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

}  // namespace

const Family& MlaDecodeProblem::family() {
  static const Family f = make_family();
  return f;
}

double estimated_device_bytes(const MlaDecodeProblem& p) {
  const double elem = static_cast<double>(dtype_size(p.dtype));
  double tokens = p.b * ((p.varlen ? 1.1 * p.t : p.t) + kPageSize);
  if (!p.lens.empty()) {
    tokens = 0;
    for (int len : p.lens) tokens += static_cast<double>(ceil_div(len, kPageSize) + 1) * kPageSize;
  }
  const double entries = tokens * p.h_kv;
  double kv = entries * kHeadDimQK * elem;
  // FP8: the bf16 original stays (the quantisation-error reference reads it), the FP8 copy, and
  // the fp32 dequantised cache reference_gpu reads while it runs.
  if (is_fp8(p.kv_format)) kv += entries * (kv_entry_bytes(p.kv_format) + kHeadDimQK * 4.0);
  const double rows = static_cast<double>(p.b) * p.s_q * p.h_q;
  const double q = rows * kHeadDimQK * elem;
  const double out = rows * kHeadDimV * (elem + 4.0) + rows * 8.0;
  return kv + q + out;
}

MlaDecodeProblem MlaDecodeProblem::from(const Problem& p) {
  CUTELAB_REQUIRE(p.family() == "mla_decode", "problem: expected family mla_decode, got ", p.family());
  MlaDecodeProblem m;
  m.b = static_cast<int>(p.integer("b"));
  m.s_q = static_cast<int>(p.integer("s"));
  m.t = static_cast<int>(p.integer("t"));
  m.h_q = static_cast<int>(p.integer("h"));
  m.h_kv = static_cast<int>(p.integer("hkv"));
  m.varlen = p.boolean("varlen");
  m.causal = p.boolean("causal");
  for (const std::int64_t len : p.integers("lens")) {
    // make_problem enforces the bounds for text input; a Problem built in code may not have.
    const std::size_t i = m.lens.size();
    CUTELAB_REQUIRE(len >= 0, "lens[", i, "] = ", len, " is negative");
    CUTELAB_REQUIRE(len <= kMaxSeqlen, "lens[", i, "] = ", len, " exceeds the maximum ", kMaxSeqlen);
    m.lens.push_back(static_cast<int>(len));
  }
  const std::string& dt = p.choice("dtype");
  const std::optional<DType> parsed = parse_dtype(dt);
  CUTELAB_REQUIRE(parsed && (*parsed == DType::bf16 || *parsed == DType::f16),
                  "dtype: expected bf16 or f16, got ", dt);
  m.dtype = *parsed;
  if (p.has("kv-pool")) m.kv_pool = static_cast<int>(p.integer("kv-pool"));
  // kv-dtype stays out of the problem while it is "same" (ParamSpec::omit_default).
  const std::string kv = p.has("kv-dtype") ? p.choice("kv-dtype") : family().find("kv-dtype")->default_value;
  if (kv == "same") {
    m.kv_format = m.dtype == DType::f16 ? KvFormat::f16 : KvFormat::bf16;
  } else {
    const std::optional<KvFormat> f = parse_kv_format(kv);
    CUTELAB_REQUIRE(f && is_fp8(*f), "kv-dtype: expected same, fp8_tensor or fp8_token, got ", kv);
    CUTELAB_REQUIRE(m.dtype == DType::bf16, "kv-dtype ", kv,
                    " needs dtype bf16 (FP8 caches are read with bf16 q and out), got dtype ",
                    dtype_name(m.dtype));
    m.kv_format = *f;
  }

  // make_problem enforces the bounds for text input; a Problem built in code may not have.
  CUTELAB_REQUIRE(m.b >= 1 && m.b <= kMaxBatch, "b: expected 1..", kMaxBatch, ", got ", m.b);
  CUTELAB_REQUIRE(m.s_q >= 1 && m.s_q <= kMaxQueryLen, "s: expected 1..", kMaxQueryLen, ", got ", m.s_q);
  CUTELAB_REQUIRE(m.t >= 1 && m.t <= kMaxSeqlen, "t: expected 1..", kMaxSeqlen, ", got ", m.t);
  CUTELAB_REQUIRE(m.h_q >= 1 && m.h_q <= kMaxHeadsQ, "h: expected 1..", kMaxHeadsQ, ", got ", m.h_q);
  CUTELAB_REQUIRE(m.h_kv >= 1 && m.h_kv <= kMaxHeadsKV, "hkv: expected 1..", kMaxHeadsKV, ", got ", m.h_kv);
  CUTELAB_REQUIRE(m.h_q % m.h_kv == 0, "h (", m.h_q, ") must be a multiple of hkv (", m.h_kv, ")");
  CUTELAB_REQUIRE(m.kv_pool >= 0 && m.kv_pool <= kMaxKvPool, "kv-pool: expected 0..", kMaxKvPool, ", got ",
                  m.kv_pool);
  if (p.has("lens")) {
    CUTELAB_REQUIRE(!m.lens.empty(), "lens: empty list (expected b = ", m.b, " lengths)");
    CUTELAB_REQUIRE(m.lens.size() == static_cast<std::size_t>(m.b), "lens has ", m.lens.size(),
                    " values but b = ", m.b);
    CUTELAB_REQUIRE(
        !m.varlen,
        "lens and varlen exclude each other: lens gives every length, varlen draws them (set varlen false)");
  }

  const double need = estimated_device_bytes(m);
  const std::string sizes = m.lens.empty()
                                ? concat("b=", m.b, " and t=", m.t)
                                : concat("b=", m.b, " and lens (mean ", std::llround(mean_of(m.lens)), ")");
  const std::string kv_text =
      is_fp8(m.kv_format) ? concat(" and kv-dtype=", kv_format_name(m.kv_format)) : "";
  CUTELAB_REQUIRE(need <= kMemoryCapBytes, sizes, " with hkv=", m.h_kv, kv_text, " need about ",
                  std::llround(need / (1ull << 30)), " GiB of device memory, more than the ",
                  std::llround(kMemoryCapBytes / (1ull << 30)), " GiB cap: lower b or ",
                  m.lens.empty() ? "t" : "the lengths");
  return m;
}

MlaDecodeCase MlaDecodeCase::from_problem(const MlaDecodeProblem& p, std::uint64_t seed) {
  MlaDecodeCase c;
  c.b = p.b;
  c.s_q = p.s_q;
  c.h_q = p.h_q;
  c.h_kv = p.h_kv;
  c.causal = p.causal;
  c.dtype = p.dtype;
  c.kv_format = p.kv_format;
  c.kv_pool_pages = p.kv_pool;
  if (!p.lens.empty()) {
    CUTELAB_REQUIRE(p.lens.size() == static_cast<std::size_t>(p.b), "lens has ", p.lens.size(),
                    " values but b = ", p.b);
    c.seqlens = p.lens;
    return c;
  }
  c.seqlens.assign(static_cast<std::size_t>(p.b), p.t);
  if (p.varlen) {
    std::mt19937_64 rng(seed);
    std::normal_distribution<double> dist(p.t, p.t / 2.0);
    for (int& len : c.seqlens) {
      const double x = std::round(dist(rng));
      len = static_cast<int>(std::clamp(x, static_cast<double>(p.s_q), static_cast<double>(kMaxSeqlen)));
    }
  }
  return c;
}

float MlaDecodeCase::scale() const {
  return softmax_scale != 0 ? softmax_scale : 1.0f / std::sqrt(static_cast<float>(kHeadDimQK));
}

double MlaDecodeCase::mean_seqlen() const { return mean_of(seqlens); }

int MlaDecodeCase::blocks_per_seq() const {
  if (max_blocks_per_seq > 0) return max_blocks_per_seq;
  int longest = 0;
  for (int len : seqlens) longest = std::max(longest, len);
  // At least one column, so that the block table is never an empty tensor.
  return std::max(1, ceil_div(longest, kPageSize));
}

double mla_flops(const MlaDecodeCase& c) {
  return static_cast<double>(c.b) * c.s_q * c.h_q * c.mean_seqlen() * 2.0 * (kHeadDimQK + kHeadDimV);
}

double mla_bytes(const MlaDecodeCase& c) {
  // Bytes per (token, KV head) entry; a cache in q's dtype has dtype's size per element.
  const double entry = is_fp8(c.kv_format) ? kv_entry_bytes(c.kv_format)
                                           : static_cast<double>(kHeadDimQK * dtype_size(c.dtype));
  const double q = static_cast<double>(c.s_q) * c.h_q * kHeadDimQK * 2;
  const double kv = c.mean_seqlen() * c.h_kv * entry;
  const double out = static_cast<double>(c.s_q) * c.h_q * kHeadDimV * 2;
  return static_cast<double>(c.b) * (q + kv + out);
}

}  // namespace cutelab::mla
