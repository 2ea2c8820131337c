#pragma once
// cutlass/gemm/collective_sm90/v1: the GEMM through CUTLASS's collective builders, wrapped in the
// lab's runtime. Every compile-time choice (tile, cluster, schedule, epilogue) is one Variant;
// the tile scheduler's swizzle is a runtime knob. Host-only C++ (no CUTLASS), for host tests.

#include <cstddef>
#include <optional>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "cutelab/core/error.hpp"
#include "cutelab/runtime/device.hpp"
#include "cutelab/runtime/kernel.hpp"
#include "gemm/common/config_list.hpp"
#include "gemm/common/problem.hpp"

namespace cutelab::gemm::collective_sm90_v1 {

enum class Schedule { cooperative, pingpong };

// Pipeline stages are left to the builder (StageCountAutoCarveout), which sizes them for the
// full 227 KiB a sm_90 block may opt in to.
inline constexpr std::size_t kSmemNeeded = 232448;

template <int BM_, int BN_, int BK_, int CM_, int CN_, Schedule S_, bool BiasGelu_>
struct Variant {
  static constexpr int BM = BM_, BN = BN_, BK = BK_, CM = CM_, CN = CN_;
  static constexpr Schedule kSchedule = S_;
  static constexpr bool kBiasGelu = BiasGelu_;
  static std::string name() {
    return std::string(S_ == Schedule::cooperative ? "coop" : "pingpong") + "_m" + std::to_string(BM) + "_n" +
           std::to_string(BN) + "_k" + std::to_string(BK) + "_c" + std::to_string(CM) + "x" + std::to_string(CN) +
           (BiasGelu_ ? "_bias_gelu" : "");
  }
};

// Compile time is the budget here (each variant is a CUTLASS kernel instantiation): three
// mainloops for the plain GEMM, the fused bias + GELU epilogue on the best of them.
using CoopM128N256C1 = Variant<128, 256, 64, 1, 1, Schedule::cooperative, false>;
using CoopM128N256C2 = Variant<128, 256, 64, 2, 1, Schedule::cooperative, false>;
using PingM128N128C1 = Variant<128, 128, 64, 1, 1, Schedule::pingpong, false>;
using CoopM128N256C2BiasGelu = Variant<128, 256, 64, 2, 1, Schedule::cooperative, true>;
using Variants = TileList<CoopM128N256C1, CoopM128N256C2, PingM128N128C1, CoopM128N256C2BiasGelu>;

struct Config {
  std::string variant;
  int bm = 0, bn = 0, bk = 0, cluster_m = 1, cluster_n = 1;
  Schedule schedule = Schedule::cooperative;
  bool bias_gelu = false;
  int swizzle = 1;  // CUTLASS tile scheduler max_swizzle_size (1, 2, 4, 8)

  template <class V>
  static Config of(int swizzle) {
    return {V::name(), V::BM, V::BN, V::BK, V::CM, V::CN, V::kSchedule, V::kBiasGelu, swizzle};
  }
  [[nodiscard]] std::string name() const { return variant + "_sw" + std::to_string(swizzle); }
  [[nodiscard]] nlohmann::json to_json() const;  // defined in plan.cpp (kernel code sees json_fwd only)
  [[nodiscard]] std::optional<std::string> validate(const GemmProblem& p, const DeviceInfo& dev) const {
    if (dev.cc_major != 9 || dev.cc_minor != 0)
      return concat("needs sm_90a (CUTLASS Hopper TMA warp-specialized kernels), found ", dev.sm());
    if (p.k % 8 != 0)
      return concat("k (", p.k, ") must be a multiple of 8: TMA needs 16-byte aligned rows of A and B");
    if (p.n % 8 != 0)
      return concat("n (", p.n, ") must be a multiple of 8: the TMA-store epilogue needs 16-byte aligned rows of C");
    if (bias_gelu != (p.epilogue == Epilogue::bias_gelu))
      return concat("this variant is built for epilogue ", bias_gelu ? "bias_gelu" : "none", ", the problem asks for ",
                    epilogue_name(p.epilogue));
    if (dev.smem_per_block_optin < kSmemNeeded)
      return concat("needs ", kSmemNeeded, " bytes of shared memory per block (the builder fills sm_90's), the "
                    "device allows ", dev.smem_per_block_optin);
    return std::nullopt;
  }
};

// Defined in launch.cuh, instantiated once per variant in instantiations/.
template <class V>
[[nodiscard]] Kernel build_kernel(const GemmOperands& ops, const Config& c, const DeviceInfo& dev);

}  // namespace cutelab::gemm::collective_sm90_v1
