#pragma once
// A paged_sm90 design's main kernel as host code sees it (its launch, its maps, what it reads),
// apart from the Runner and the plans: the kernels' own translation units include only this,
// not the harness headers behind host.hpp.

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <optional>

#include "cute/mla_decode/paged_sm90/common/params.hpp"
#include "mla_decode/fp8/kv_format.hpp"

namespace cutelab::mla::paged_sm90 {

inline constexpr int kBlockM = 64;  // packed query rows per CTA (every version)

// The TMA maps of a call. bf16/f16: `kv` boxes of 64 columns x 64 tokens, 128-byte swizzle.
// FP8 read by dequantising designs: `kv` boxes of 64 bytes x 64 tokens unswizzled, `rope` over
// fp8_token's bf16 RoPE values (64 x 64 tokens, unswizzled). FP8 read by FP8 tensor cores
// (MainKernel::fp8_swizzled): `kv` boxes of 128 latent bytes x 64 tokens, 128-byte swizzle,
// `rope` boxes of the 64 RoPE bytes x 64 tokens, 64-byte swizzle (fp8_token: its 64 bf16 RoPE
// values x 64 tokens, 128-byte swizzle). `q` (MainKernel::q_map): q as (576 columns, heads of a KV
// head, KV heads, query tokens), boxes of 64 columns x paged_sm90::q_box, 128-byte swizzle.
// `scales` (MainKernel::scale_map, swizzled fp8_token): the 16 bytes of group scales at byte 512 of
// each entry, boxes of 16 bytes x 64 tokens unswizzled. Unused maps stay zero.
struct KvMaps {
  CUtensorMap kv{};
  CUtensorMap rope{};
  CUtensorMap q{};
  CUtensorMap scales{};
};

// One version's main kernel for one element type (and, for FP8 designs, one cache format). It is launched as
// a programmatic dependent of whatever precedes it in the stream (the schedule kernel, or a previous layer)
// and must call sm90::wait_for_prior_grid() before reading the schedule.
struct MainKernel {
  const char* name = "";
  const void* function = nullptr;
  std::size_t shared_bytes = 0;
  int block_threads = 0;
  void (*set_attributes)() = nullptr;  // raises the dynamic shared-memory limit (plan time)
  void (*launch)(const Params&, const KvMaps&, dim3 grid, cudaStream_t) = nullptr;
  std::optional<KvFormat> fp8_format;            // empty: it reads a cache in q's dtype
  bool fp8_swizzled = false;                     // swizzled FP8 boxes (its tensor cores read them; KvMaps)
  PartialFormat partials = PartialFormat::fp32;  // what its split pieces write
  bool q_map = false;                            // loads Q tiles by TMA: takes KvMaps::q as its second map
  bool scale_map = false;                        // takes KvMaps::scales as its third map (made only then)
};

}  // namespace cutelab::mla::paged_sm90
