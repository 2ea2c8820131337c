#pragma once
// paged_sm90_fp8 v8: v7 (v3 with Q's rows spread and Q's last latent k-steps in registers) with P
// handed to warpgroup 0 as a register image in shared memory (README.md beside this file says why).

#include "cute/mla_decode/paged_sm90_fp8/paged_sm90_fp8_v7/config.hpp"

namespace cutelab::mla::paged_sm90_fp8_v8 {

struct Traits : paged_sm90_fp8_v7::Traits {
  static constexpr bool kPRegisterImage = true;
};

}  // namespace cutelab::mla::paged_sm90_fp8_v8
