#pragma once
// paged_sm90_fp8 v12: v11 with the part's first request guessed (kGuessFirstRequest; README.md beside
// this file says why).

#include "cute/mla_decode/paged_sm90_fp8/paged_sm90_fp8_v11/config.hpp"

namespace cutelab::mla::paged_sm90_fp8_v12 {

struct Traits : paged_sm90_fp8_v11::Traits {
  static constexpr bool kGuessFirstRequest = true;
};

}  // namespace cutelab::mla::paged_sm90_fp8_v12
