#pragma once
// paged_sm90_fp8 v1: every compile-time constant, layout, GEMM atom, the shared-memory plan and
// the barriers of the version (README.md beside this file gives the design and its reasoning).
//
// v3's two warpgroups (warpgroup 1 owns S and the softmax and multiplies P from registers into
// O[:, 256:512]; warpgroup 0 multiplies the published P into O[:, 0:256]) over an FP8 cache: TMA
// brings each page's bytes into one of two staging slots, warpgroup 0 dequantises them chunk by
// chunk into the one bf16 K/V tile the tensor cores read, as soon as the previous page's readers
// of that chunk are done, and warpgroup 1's S waits for each chunk as it lands.

#include <cstdint>

#include "cute/mla_decode/paged_sm90/common/traits.hpp"
#include "mla_decode/fp8/kv_format.hpp"

namespace cutelab::mla::paged_sm90_fp8_v1 {

template <KvFormat kFormat_>
struct Traits : paged_sm90::TileConstants,
                paged_sm90::TraitsTypes<cute::bfloat16_t>,
                paged_sm90::TwoWarpgroupTypes<cute::bfloat16_t> {
  static constexpr KvFormat kFormat = kFormat_;
  static_assert(kFormat == KvFormat::fp8_tensor || kFormat == KvFormat::fp8_token);
  using Element = cute::bfloat16_t;  // q, the dequantised tile, P, out
  using Types = paged_sm90::TraitsTypes<Element>;

  static constexpr bool kTokenScales = kFormat == KvFormat::fp8_token;  // per (token, 128 values)
  static constexpr int kLatentChunks = kHeadDimV / kChunk;              // chunks 0-7 are also V
  static constexpr int kRopeChunk = kLatentChunks;
  static constexpr int kWarpgroups = 2;
  static constexpr int kThreads = 128 * kWarpgroups;
  static constexpr int kQKStepsPerChunk = kChunk / 16;

  // Staging of one page as TMA writes it: e4m3 chunks of 64 tokens x 64 bytes (fp8_tensor: all
  // 9, its RoPE columns are e4m3 too; fp8_token: the 8 latent ones), then for fp8_token the bf16
  // RoPE values as 64 tokens x 128 bytes. Unswizzled: a warp's 16-byte loads are contiguous.
  static constexpr int kStageChunks = kTokenScales ? kLatentChunks : kNumChunks;
  static constexpr int kStageChunkBytes = kBlockN * kChunk;  // one byte per value
  static constexpr int kStageRopeBytes = kTokenScales ? kBlockN * (kHeadDimQK - kHeadDimV) * 2 : 0;
  static constexpr std::uint32_t kStageBytes = kStageChunks * kStageChunkBytes + kStageRopeBytes;
  static constexpr int kStages = 2;
  // Chunks a converting thread loads before it converts and announces them. Measured on the
  // H200 (fp8_tensor, b128 h64 t16384): 1 chunk 962 us, 2 chunks 835 us, 4 chunks 852 us (chunk
  // 0 announced later; fp8_token spills at 4).
  static constexpr int kDequantBatch = 2;

  static_assert(kVColsPerWarpgroup * kWarpgroups == kHeadDimV);

  struct alignas(1024) SharedStorage {
    alignas(1024) cute::array_aligned<Element, cute::cosize_v<SmemLayoutQ>> q;
    alignas(1024) cute::array_aligned<Element, kTileElements> kv;  // the one bf16 K/V tile
    alignas(128) std::uint8_t stage[kStages][kStageBytes];
    alignas(1024) cute::array_aligned<Element, cute::cosize_v<SmemLayoutP>> p;
    float scale[kBlockM];         // exp2(previous max - max after the page), per row
    float final_max[2][kBlockM];  // a piece's running max (log2 units) and row sum, by piece parity
    float final_sum[2][kBlockM];
    alignas(8) std::uint64_t stage_full[kStages];  // TMA bytes of a staged page landed
    // Chunk c of the bf16 tile holds the current page (warpgroup 0 arrives: chunk 0 all 128
    // threads, the others one thread per warp).
    alignas(8) std::uint64_t chunk_ready[kNumChunks];
    alignas(8) std::uint64_t p_ready;   // warpgroup 1 published P and the scales: 128 arrivals
    alignas(8) std::uint64_t wg1_done;  // warpgroup 1's P V of the page completed: 128 arrivals
    alignas(8) std::uint64_t final_ready[2];
    alignas(8) std::uint64_t final_read[2];
  };

  // Named barriers (ids after CUTLASS's reserved ones), one per warpgroup for its own threads:
  // warpgroup 1's Q tile loaded; warpgroup 0 done reading a staging slot.
  enum Barrier : std::uint32_t { kWarpgroupSync = 1 };
};

}  // namespace cutelab::mla::paged_sm90_fp8_v1
