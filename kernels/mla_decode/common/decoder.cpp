#include "mla_decode/common/decoder.hpp"

#include <algorithm>
#include <map>

#include "cutelab/core/error.hpp"
#include "cutelab/runtime/cache.hpp"
#include "cutelab/runtime/registry.hpp"
#include "cutelab/runtime/tuner.hpp"

namespace cutelab::mla {
namespace {

const DecoderSource* as_source(const KernelPlan& plan) { return dynamic_cast<const DecoderSource*>(&plan); }

// The tuning cache's bases in the order a serving call prefers them.
constexpr TuneBasis kServingBases[] = {TuneBasis::rotating, TuneBasis::flush};

std::string join_text(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

}  // namespace

void DecoderShape::validate() const {
  CUTELAB_REQUIRE(max_batch >= 1 && max_batch <= kMaxBatch, "max_batch = ", max_batch, " outside [1, ",
                  kMaxBatch, "]");
  CUTELAB_REQUIRE(s_q >= 1 && s_q <= kMaxQueryLen, "s_q = ", s_q, " outside [1, ", kMaxQueryLen, "]");
  CUTELAB_REQUIRE(h_q >= 1 && h_q <= kMaxHeadsQ, "h_q = ", h_q, " outside [1, ", kMaxHeadsQ, "]");
  CUTELAB_REQUIRE(h_kv >= 1 && h_kv <= kMaxHeadsKV, "h_kv = ", h_kv, " outside [1, ", kMaxHeadsKV, "]");
  CUTELAB_REQUIRE(h_q % h_kv == 0, "h_q = ", h_q, " is not a multiple of h_kv = ", h_kv);
  CUTELAB_REQUIRE(dtype == DType::bf16 || dtype == DType::f16, "dtype ", dtype_name(dtype),
                  " is not supported (bf16, f16)");
  if (!kv_format) return;
  if (is_fp8(*kv_format))
    CUTELAB_REQUIRE(dtype == DType::bf16, "kv_format ", kv_format_name(*kv_format), " takes bf16 q, got ",
                    dtype_name(dtype));
  else
    CUTELAB_REQUIRE(*kv_format == cache_format(), "kv_format ", kv_format_name(*kv_format), " with ",
                    dtype_name(dtype), " q: a cache that is not FP8 is in q's dtype");
}

KvFormat DecoderShape::cache_format() const noexcept {
  if (kv_format && is_fp8(*kv_format)) return *kv_format;
  return dtype == DType::f16 ? KvFormat::f16 : KvFormat::bf16;
}

Problem decoder_problem(const DecoderShape& shape, bool causal, const std::vector<int>& lens,
                        int max_seqlen) {
  std::map<std::string, std::string> given{{"s", std::to_string(shape.s_q)},
                                           {"h", std::to_string(shape.h_q)},
                                           {"hkv", std::to_string(shape.h_kv)},
                                           {"dtype", std::string(dtype_name(shape.dtype))},
                                           {"causal", causal ? "true" : "false"}};
  // As `cutelab run --kv-dtype` names it (the tuning cache's key); absent for a cache in q's dtype.
  if (is_fp8(shape.cache_format())) given["kv-dtype"] = std::string(kv_format_name(shape.cache_format()));
  if (!lens.empty()) {
    std::string text;
    for (int len : lens) text += (text.empty() ? "" : ",") + std::to_string(len);
    given["lens"] = text;
    given["b"] = std::to_string(lens.size());
  } else {
    given["b"] = std::to_string(shape.max_batch);
    given["t"] = std::to_string(max_seqlen > 0 ? std::min(max_seqlen, kMaxSeqlen) : 4096);
  }
  return make_problem(MlaDecodeProblem::family(), given);
}

std::vector<std::string> decoder_kernels(std::optional<std::pair<DType, KvFormat>> served) {
  const std::vector<std::pair<DType, KvFormat>> every{{DType::bf16, KvFormat::bf16},
                                                      {DType::f16, KvFormat::f16},
                                                      {DType::bf16, KvFormat::fp8_tensor},
                                                      {DType::bf16, KvFormat::fp8_token}};
  std::vector<std::string> names;
  for (const KernelPlan* p : Registry::instance().all()) {
    const DecoderSource* source = p->family().name == "mla_decode" ? as_source(*p) : nullptr;
    if (!source) continue;
    const bool serves = served ? source->serves(served->first, served->second)
                               : std::any_of(every.begin(), every.end(), [&](const auto& f) {
                                   return source->serves(f.first, f.second);
                                 });
    if (serves) names.push_back(p->id().full());
  }
  return names;
}

DecoderChoice open_decoder(const DecoderShape& shape, const DecoderRequest& request, const DeviceInfo& dev) {
  shape.validate();
  const Problem problem = decoder_problem(shape, request.causal, request.lens, request.max_seqlen);
  TuneCache cache((request.cache_dir.empty() ? TuneCache::default_dir() : request.cache_dir) + "/tune.json");

  // Kernel: the one asked for; else the decoder kernel with the fastest cached winner for this
  // problem; else the family default; else, where that reads no cache of the shape's format, the
  // newest version of the one design that does.
  const KvFormat format = shape.cache_format();
  const std::vector<std::string> serving = decoder_kernels(std::pair{shape.dtype, format});
  const std::string format_text =
      concat(kv_format_name(format), " KV cache with ", dtype_name(shape.dtype), " q");
  const KernelPlan* plan = nullptr;
  if (!request.kernel.empty()) {
    plan = &Registry::instance().find(request.kernel);
  } else {
    // A serving engine's calls follow one another on KV that is not in L2: winners ranked by the
    // rotating figure first, else by the flush one; medians are compared within one basis only.
    for (const TuneBasis basis : kServingBases) {
      double best_us = 0;
      for (const std::string& name : serving) {
        const KernelPlan& candidate = Registry::instance().find(name);
        if (arch_mismatch(candidate.arch(), dev)) continue;
        const std::optional<TuneEntry> e = cache.lookup(tune_key(name, problem, dev, basis));
        if (e && e->median_us > 0 && (!plan || e->median_us < best_us)) {
          plan = &candidate;
          best_us = e->median_us;
        }
      }
      if (plan) break;
    }
    if (!plan) {
      const KernelPlan& family_default = Registry::instance().find("mla_decode");
      const DecoderSource* s = as_source(family_default);
      if (s && s->serves(shape.dtype, format)) {
        plan = &family_default;
      } else {
        CUTELAB_REQUIRE(!serving.empty(), "no MLA decode kernel serves a ", format_text);
        const auto design_of = [](const KernelId& id) {
          return concat(id.tier, '/', id.family, '/', id.design);
        };
        for (const std::string& name : serving) {
          const KernelPlan& candidate = Registry::instance().find(name);
          if (!plan) {
            plan = &candidate;
            continue;
          }
          CUTELAB_REQUIRE(design_of(candidate.id()) == design_of(plan->id()), "several designs serve a ",
                          format_text, " (", join_text(serving), "): name one as the kernel");
          if (candidate.id().version_number() > plan->id().version_number()) plan = &candidate;
        }
      }
    }
  }
  const std::string kernel = plan->id().full();
  CUTELAB_REQUIRE(plan->family().name == "mla_decode", kernel, " is not an MLA decode kernel");
  const DecoderSource* source = as_source(*plan);
  CUTELAB_REQUIRE(source, kernel,
                  " runs only inside the harness (no decoder for callers' tensors); kernels "
                  "that have one: ",
                  join_text(decoder_kernels()));
  CUTELAB_REQUIRE(source->serves(shape.dtype, format), kernel, " reads no ", format_text,
                  "; kernels that do: ", serving.empty() ? std::string("none") : join_text(serving));
  if (auto why = arch_mismatch(plan->arch(), dev))
    throw UsageError(concat(kernel, " cannot run here: ", *why));

  const std::vector<ConfigDesc> configs = plan->configs(problem, dev);
  DecoderChoice choice;
  choice.kernel = kernel;
  const ConfigDesc* chosen = nullptr;
  if (!request.config.empty()) {
    std::vector<std::string> names;
    for (const ConfigDesc& c : configs) {
      names.push_back(c.name);
      if (c.name == request.config) chosen = &c;
    }
    CUTELAB_REQUIRE(chosen, "config '", request.config, "' is not a config of ", kernel, " (",
                    join_text(names), ")");
    if (auto why = plan->validate(problem, *chosen, dev))
      throw UsageError(concat("config ", chosen->name, " of ", kernel, " cannot run: ", *why));
    choice.config_source = "given";
  } else {
    for (const TuneBasis basis : kServingBases) {
      if (const std::optional<TuneEntry> e = cache.lookup(tune_key(kernel, problem, dev, basis)))
        for (const ConfigDesc& c : configs)
          if (c.name == e->config && !plan->validate(problem, c, dev)) chosen = &c;
      if (chosen) {
        choice.config_source = basis == TuneBasis::flush ? "cache" : "cache (rotating)";
        break;
      }
    }
    if (!chosen) {
      std::vector<std::string> reasons;
      for (const ConfigDesc& c : configs) {
        auto why = plan->validate(problem, c, dev);
        if (!why) {
          chosen = &c;
          break;
        }
        reasons.push_back(c.name + ": " + *why);
      }
      CUTELAB_REQUIRE(chosen, "no config of ", kernel, " can run this shape: ", join_text(reasons));
      choice.config_source = "first valid";
    }
  }
  choice.config = chosen->name;
  choice.arithmetic = source->arithmetic(shape);
  choice.decoder = source->make_decoder(shape, *chosen, dev);
  return choice;
}

}  // namespace cutelab::mla
