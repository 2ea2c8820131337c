#pragma once
// paged_sm90_fp8 v9: v7 (v3 with Q's rows spread and Q's last latent k-steps in registers) with
// registers moved from the S owner to warpgroup 0, whose transpose then has both batches of a
// page's loads in flight at once (README.md beside this file says why).

#include "cute/mla_decode/paged_sm90_fp8/paged_sm90_fp8_v7/config.hpp"

namespace cutelab::mla::paged_sm90_fp8_v9 {

struct Traits : paged_sm90_fp8_v7::Traits {
  static constexpr int kQRegisterSteps = 4;
  static constexpr int kTransposerRegisters = 248;  // the S owner 232 (2 x 240 - 248)
  static constexpr bool kTransposeOneRound = true;
};

}  // namespace cutelab::mla::paged_sm90_fp8_v9
