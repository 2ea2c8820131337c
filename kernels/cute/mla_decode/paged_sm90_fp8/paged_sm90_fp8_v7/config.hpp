#pragma once
// paged_sm90_fp8 v7: v6 (v3 with Q's packed rows spread over the M tile) with Q's last latent
// k-steps held in the S owner's registers, so that those steps of S read only K from shared
// memory (README.md beside this file says why).

#include "cute/mla_decode/paged_sm90_fp8/paged_sm90_fp8_v6/config.hpp"

namespace cutelab::mla::paged_sm90_fp8_v7 {

struct Traits : paged_sm90_fp8_v6::Traits {
  // 4 registers a step in warpgroup 1 (217 of its 240 used without them).
  static constexpr int kQRegisterSteps = 4;
};

}  // namespace cutelab::mla::paged_sm90_fp8_v7
