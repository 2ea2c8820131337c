#pragma once
// paged_sm90_fp8 v9: v3's operands, layouts, shared-memory plan, barriers and page loop with four
// changes (README.md beside this file says why, each measured): Q's packed rows spread over the M
// tile (at <= 32 live rows the softmax runs on every thread's first row only), Q's last latent
// k-steps in the S owner's registers, registers moved from the S owner to warpgroup 0, and
// warpgroup 0's transpose with a page's loads in flight at once.

#include "cute/mla_decode/paged_sm90_fp8/paged_sm90_fp8_v3/config.hpp"

namespace cutelab::mla::paged_sm90_fp8_v9 {

struct Traits : paged_sm90_fp8_v3::Traits {
  static constexpr bool kSpreadRows = true;
  static constexpr int kQRegisterSteps = 4;         // 4 registers a step in the S owner
  static constexpr int kTransposerRegisters = 248;  // the S owner 232 (2 x 240 - 248)
  static constexpr bool kTransposeOneRound = true;
};

}  // namespace cutelab::mla::paged_sm90_fp8_v9
