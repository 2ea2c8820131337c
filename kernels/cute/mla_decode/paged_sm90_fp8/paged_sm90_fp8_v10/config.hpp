#pragma once
// paged_sm90_fp8 v10: v9 with P handed to warpgroup 0 as the S owner's register image (the hand-off
// tried on v7 as v8, commit 865e181; README.md beside this file says why).

#include "cute/mla_decode/paged_sm90_fp8/paged_sm90_fp8_v9/config.hpp"

namespace cutelab::mla::paged_sm90_fp8_v10 {

struct Traits : paged_sm90_fp8_v9::Traits {
  static constexpr bool kPRegisterImage = true;
};

}  // namespace cutelab::mla::paged_sm90_fp8_v10
