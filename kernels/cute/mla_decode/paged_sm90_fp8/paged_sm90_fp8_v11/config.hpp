#pragma once
// paged_sm90_fp8 v11: v10 with warpgroup 0's transpose split around its wait for both P V of the
// page before (README.md beside this file says why).

#include "cute/mla_decode/paged_sm90_fp8/paged_sm90_fp8_v10/config.hpp"

namespace cutelab::mla::paged_sm90_fp8_v11 {

struct Traits : paged_sm90_fp8_v10::Traits {
  static constexpr bool kTransposeAhead = true;
};

}  // namespace cutelab::mla::paged_sm90_fp8_v11
