#pragma once
// baseline/mla_decode/naive/v1: every knob of the plain-CUDA MLA decode baseline.

#include <array>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "cutelab/core/error.hpp"
#include "cutelab/runtime/device.hpp"
#include "mla_decode/common/problem.hpp"

namespace cutelab::mla::naive_v1 {

// One CTA per (request, query row, tile of `heads` query heads of one KV head): the heads of a
// tile share each K/V row it reads, `threads` split the 512 output columns.
struct NaiveConfig {
  int threads = 256;  // per CTA; each thread owns 512 / threads output columns of every head
  int heads = 8;      // query heads per CTA

  [[nodiscard]] std::string name() const { return concat("t", threads, "_h", heads); }
  [[nodiscard]] nlohmann::json to_json() const { return {{"threads", threads}, {"heads", heads}}; }
  [[nodiscard]] std::optional<std::string> validate(const MlaDecodeProblem& p, const DeviceInfo& dev) const {
    if (is_fp8(p.kv_format))
      return concat("kv-dtype ", kv_format_name(p.kv_format),
                    ": this baseline reads a KV cache in q's dtype only");
    if (threads > dev.max_threads_per_block)
      return concat("needs ", threads, " threads per block, the device allows ", dev.max_threads_per_block);
    // A head tile far wider than the group only idles: keep the narrowest tile that covers it.
    const int group = p.h_q / p.h_kv;
    if (heads >= 2 * group && heads > 4)
      return concat("tile of ", heads, " heads for a group of ", group, ": a narrower tile covers it");
    return std::nullopt;
  }
};

// The compiled configurations (instantiations/*.cu holds one line per config and dtype).
inline constexpr std::array<NaiveConfig, 3> kConfigs = {{{128, 4}, {256, 8}, {256, 16}}};

}  // namespace cutelab::mla::naive_v1
