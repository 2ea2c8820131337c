#pragma once
// paged_sm90 v8's entry points for host code (no CuTe): its main kernel per element type, partial-row
// format and tile rows (16 or 32), run by paged_sm90::Runner between the split schedule and the combine.

#include "cute/mla_decode/paged_sm90/common/main_kernel.hpp"
#include "cutelab/core/dtype.hpp"

namespace cutelab::mla::paged_sm90_v8 {

inline constexpr int kMaxRows = 32;  // query rows a KV head this design's kernels serve

// Defined per partial-row format and tile rows in instantiations/ (bf16 only: f16 calls run v3's kernel).
template <class Element, PartialFormat kPartials, int kRows>
[[nodiscard]] paged_sm90::MainKernel main_kernel();
// The kernel for `rows` query rows a KV head (1 .. kMaxRows; 16-row tiles up to 16, else 32) and a
// bf16 call; function null otherwise.
[[nodiscard]] paged_sm90::MainKernel main_kernel(DType dtype, PartialFormat partials, int rows);

}  // namespace cutelab::mla::paged_sm90_v8
