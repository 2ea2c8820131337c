#pragma once
// paged_sm90_fp8 v6: v3's operands, layouts, shared-memory plan, barriers and page loop, with Q's
// packed rows spread over the M tile (README.md beside this file says why): packed rows 0..31 are
// every thread's first accumulator row, so a tile of at most 32 live rows (h_q <= 32 at s_q 1)
// runs the softmax on half of S's values.

#include "cute/mla_decode/paged_sm90_fp8/paged_sm90_fp8_v3/config.hpp"

namespace cutelab::mla::paged_sm90_fp8_v6 {

struct Traits : paged_sm90_fp8_v3::Traits {
  static constexpr bool kSpreadRows = true;
};

}  // namespace cutelab::mla::paged_sm90_fp8_v6
