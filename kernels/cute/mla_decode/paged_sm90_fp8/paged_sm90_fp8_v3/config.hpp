#pragma once
// paged_sm90_fp8 v3: v2's operands, layouts, shared-memory plan and barriers (README.md beside
// this file says why nothing there changes); only the order of the page loop is new
// (kernel.cuh): warpgroup 1 issues S of page g + 1 before it publishes P of page g, and the
// softmax of page g + 1 runs while both P V of page g are in the tensor core.

#include "cute/mla_decode/paged_sm90_fp8/paged_sm90_fp8_v2/config.hpp"

namespace cutelab::mla::paged_sm90_fp8_v3 {

struct Traits : paged_sm90_fp8_v2::Traits {};

}  // namespace cutelab::mla::paged_sm90_fp8_v3
