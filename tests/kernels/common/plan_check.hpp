#pragma once
// Test helpers for kernel plans: run one config on a workspace and compare every output with
// a reference through the runtime's checker (poisoned outputs, every element written).

#include <cuda_runtime_api.h>

#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cutelab/runtime/check.hpp"
#include "cutelab/runtime/device.hpp"
#include "cutelab/runtime/plan.hpp"
#include "cutelab/runtime/tensor.hpp"

namespace cutelab::testing {

// Poisons the outputs, plans and launches `config`, and checks each output against `ref`.
inline std::vector<CheckResult> run_and_check(const KernelPlan& plan, const Problem& problem,
                                              const ConfigDesc& config, Workspace& ws, const DeviceInfo& dev,
                                              const std::vector<std::vector<float>>& ref) {
  ws.poison(nullptr);
  Kernel k = plan.plan(problem, config, ws, dev);
  k.launch(nullptr);
  CUTELAB_CUDA(cudaGetLastError());
  CUTELAB_CUDA(cudaDeviceSynchronize());
  const std::vector<OutputSpec> outs = ws.outputs();
  EXPECT_EQ(outs.size(), ref.size());
  std::vector<CheckResult> results;
  for (std::size_t i = 0; i < outs.size() && i < ref.size(); ++i) {
    const std::vector<std::uint8_t> got = copy_to_host_bytes(outs[i].view);
    results.push_back(check_output(outs[i].name, outs[i].view.dtype, got.data(), ref[i], outs[i].tol));
  }
  return results;
}

inline std::string describe(const CheckResult& r) {
  std::ostringstream s;
  s << r.output << ": rel_l2=" << r.rel_l2 << " max_abs=" << r.max_abs << " mismatches=" << r.mismatches
    << " nan_inf=" << r.nan_inf << " unwritten=" << r.unwritten << " first_bad=" << r.first_bad << " "
    << r.reason;
  return s.str();
}

// Runs every config of `plan` that is valid for the problem; returns how many ran.
inline int check_every_config(const KernelPlan& plan, const Problem& problem, Workspace& ws,
                              const DeviceInfo& dev, const std::vector<std::vector<float>>& ref) {
  int ran = 0;
  for (const ConfigDesc& c : plan.configs(problem, dev)) {
    SCOPED_TRACE(plan.id().full() + " config " + c.name);
    if (const auto why = plan.validate(problem, c, dev)) {
      EXPECT_FALSE(why->empty()) << "a refused config must say why";
      continue;
    }
    for (const CheckResult& r : run_and_check(plan, problem, c, ws, dev, ref))
      EXPECT_TRUE(r.passed) << describe(r);
    ++ran;
  }
  return ran;
}

}  // namespace cutelab::testing
