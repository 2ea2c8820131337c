#pragma once
// Helpers shared by the MLA decode GPU tests.

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "cutelab/runtime/device.hpp"
#include "cutelab/runtime/problem.hpp"
#include "cutelab/runtime/registry.hpp"
#include "mla_decode/common/problem.hpp"

namespace cutelab::mla {

#define CUTELAB_REQUIRE_GPU()                                                     \
  do {                                                                            \
    std::string why_no_gpu;                                                       \
    if (cuda_device_count(&why_no_gpu) == 0) GTEST_SKIP() << "no CUDA device: " << why_no_gpu; \
  } while (0)

inline const DeviceInfo& device() {
  static const DeviceInfo dev = query_device(0, DeviceDb::load_default());
  return dev;
}

inline MlaDecodeCase make_case(int b, int s_q, int h_q, int h_kv, bool causal, DType dt, std::vector<int> lens) {
  MlaDecodeCase c;
  c.b = b;
  c.s_q = s_q;
  c.h_q = h_q;
  c.h_kv = h_kv;
  c.causal = causal;
  c.dtype = dt;
  c.seqlens = std::move(lens);
  return c;
}

inline std::string lens_text(const std::vector<int>& lens) {
  std::string s;
  for (int l : lens) s += (s.empty() ? "" : ",") + std::to_string(l);
  return s;
}

// The family's kv-dtype value of a cache format ("same": the cache in q's dtype).
inline std::string kv_dtype_param(KvFormat f) {
  return f == KvFormat::fp8_tensor || f == KvFormat::fp8_token ? std::string(kv_format_name(f)) : "same";
}

// The family problem a case belongs to (plans pick configs from it; sizes come from the
// workspace). It names every length, so MlaDecodeCase::from_problem gives back the case's lengths.
inline Problem problem_for(const MlaDecodeCase& c) {
  const int longest = *std::max_element(c.seqlens.begin(), c.seqlens.end());
  std::map<std::string, std::string> params{{"b", std::to_string(c.b)},
                                            {"s", std::to_string(c.s_q)},
                                            {"t", std::to_string(std::clamp(longest, 1, 131072))},
                                            {"h", std::to_string(c.h_q)},
                                            {"hkv", std::to_string(c.h_kv)},
                                            {"causal", c.causal ? "true" : "false"},
                                            {"dtype", std::string(dtype_name(c.dtype))},
                                            {"kv-dtype", kv_dtype_param(c.kv_format)},
                                            {"lens", lens_text(c.seqlens)}};
  if (c.kv_pool_pages > 0) params["kv-pool"] = std::to_string(c.kv_pool_pages);
  return make_problem(MlaDecodeProblem::family(), params);
}

// Whether `plan` reads KV caches of `c`'s format (and dtype) at all: some config of it accepts a
// one-request, one-page problem of that form. A lab design must then accept every size in it.
inline bool reads_format(const KernelPlan& plan, const MlaDecodeCase& c) {
  MlaDecodeCase probe = make_case(1, 1, 16, 1, false, c.dtype, {64});
  probe.kv_format = c.kv_format;
  const Problem problem = problem_for(probe);
  for (const ConfigDesc& config : plan.configs(problem, device()))
    if (!plan.validate(problem, config, device())) return true;
  return false;
}

inline std::vector<const KernelPlan*> family_plans() {
  std::vector<const KernelPlan*> plans;
  for (const KernelPlan* p : Registry::instance().all())
    if (p->family().name == "mla_decode") plans.push_back(p);
  return plans;
}

}  // namespace cutelab::mla
