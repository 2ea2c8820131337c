#pragma once
// The warp-specialized frame of paged_sm90 v1: one CTA of three warpgroups, a ring of kStages
// KV pages in shared memory fed by TMA (warpgroup 0, one warp), and the consumers the version
// supplies. (v2 has no producer; what both use is in pieces.cuh.) Traits must provide Element,
// SharedStorage {kv[kStages], kv_full[kStages], kv_empty[kStages]}, kStages, kBlockN, kChunk,
// kNumChunks, kTileBytes, kConsumerWarps, kProducerRegisters, kConsumerRegisters.

#include <cuda.h>

#include <cute/tensor.hpp>
#include <cute/arch/copy_sm90_desc.hpp>
#include <cute/arch/copy_sm90_tma.hpp>
#include <cutlass/arch/barrier.h>
#include <cutlass/arch/reg_reconfig.h>

#include "cute/mla_decode/paged_sm90/common/pieces.cuh"
#include "mla_decode/common/problem.hpp"
#include "cutelab/device/sm90/opaque.cuh"
#include "cutelab/device/sm90/pdl.cuh"

namespace cutelab::mla::paged_sm90 {

using FullBarrier = cutlass::arch::ClusterTransactionBarrier;   // TMA bytes of a page landed
using EmptyBarrier = cutlass::arch::ClusterBarrier;             // every consumer warp is done with it

// Waits until the page at ring position `ring_pos` has landed.
template <class Traits>
CUTE_DEVICE void wait_page(typename Traits::SharedStorage& smem, int ring_pos) {
  FullBarrier::wait(&smem.kv_full[ring_pos % Traits::kStages], (ring_pos / Traits::kStages) & 1);
}

// One consumer warp is done with the page at `ring_pos` (after its wgmmas completed).
template <class Traits>
CUTE_DEVICE void release_page(typename Traits::SharedStorage& smem, int ring_pos) {
  __syncwarp();
  if (threadIdx.x % 32 == 0) EmptyBarrier::arrive(&smem.kv_empty[ring_pos % Traits::kStages]);
}

// One warp: lanes fetch up to 32 block ids at once, lane 0 issues the TMA copies of each page
// (kNumChunks boxes of 64 columns x 64 tokens) into the next free stage.
template <class Traits>
CUTE_DEVICE void produce_pages(const Params& p, const CUtensorMap* kv_map, typename Traits::SharedStorage& smem,
                               const PartInfo& part, int kv_head) {
  const int lane = threadIdx.x % 32;
  int iter = 0;
  for_each_piece(p, part, [&](int req, int first, int end) {
    const int* table = p.block_table + static_cast<int64_t>(req) * p.max_blocks;
    for (int base = first; base < end; base += 32) {
      const int page_of_lane = base + lane < end ? table[base + lane] : 0;
      const int count = min(32, end - base);
      for (int j = 0; j < count; ++j, ++iter) {
        const int page = __shfl_sync(0xffffffffu, page_of_lane, j);
        if (lane == 0) {
          const int stage = iter % Traits::kStages;
          EmptyBarrier::wait(&smem.kv_empty[stage], ((iter / Traits::kStages) & 1) ^ 1);
          FullBarrier::arrive_and_expect_tx(&smem.kv_full[stage], Traits::kTileBytes);
          auto* tile = smem.kv[stage].data();
          for (int c = 0; c < Traits::kNumChunks; ++c)
            cute::SM90_TMA_LOAD_4D::copy(kv_map, &smem.kv_full[stage], p.kv_cache_hint,
                                         tile + c * Traits::kBlockN * Traits::kChunk, c * Traits::kChunk, kv_head, 0,
                                         page);
        }
      }
    }
  });
}

// Both consumer warpgroups load the Q tile's first size<1>(SmemLayoutQ) columns with 16-byte
// loads (8 consecutive columns stay one 16-byte unit under the 128-byte swizzle); padded rows
// are 0.
template <class Traits>
CUTE_DEVICE void load_q_tile(const Params& p, typename Traits::SharedStorage& smem, int req, int kv_head, int m_tile) {
  using namespace cute;
  using Element = typename Traits::Element;
  // An opaque base: the store addresses are made here, not hoisted out of the piece loop (and spilled).
  Tensor sQ = make_tensor(make_smem_ptr(sm90::opaque(smem.q.data())), typename Traits::SmemLayoutQ{});  // (BLK_M,COLS)
  constexpr int kVecs = size<1>(typename Traits::SmemLayoutQ{}) / 8;
  for (int idx = threadIdx.x - 128; idx < Traits::kBlockM * kVecs; idx += Traits::kConsumerThreads) {
    const int r = idx / kVecs, v = idx % kVecs;
    const int packed = m_tile * Traits::kBlockM + r;
    uint4 val = make_uint4(0, 0, 0, 0);
    if (packed < p.rows_per_head) val = *reinterpret_cast<const uint4*>(q_row<Element>(p, req, kv_head, packed) + v * 8);
    *reinterpret_cast<uint4*>(&sQ(r, v * 8)) = val;
  }
}

// The kernel body: barrier setup (overlapping the schedule kernel), then the roles.
// consume(smem, part, kv_head, m_tile, consumer_warpgroup) runs in warpgroups 1 and 2.
template <class Traits, class Consume>
CUTE_DEVICE void run_warp_specialized(const Params& p, const CUtensorMap* kv_map, Consume&& consume) {
  extern __shared__ __align__(1024) char smem_raw[];
  auto& smem = *reinterpret_cast<typename Traits::SharedStorage*>(smem_raw);
  const int warpgroup = threadIdx.x / 128;
  const int kv_head = blockIdx.x / p.m_tiles;
  const int m_tile = blockIdx.x % p.m_tiles;

  if (threadIdx.x == 0) {
    cute::prefetch_tma_descriptor(kv_map);
    for (int s = 0; s < Traits::kStages; ++s) {
      FullBarrier::init(&smem.kv_full[s], 1);
      EmptyBarrier::init(&smem.kv_empty[s], Traits::kConsumerWarps);
    }
    cutlass::arch::fence_barrier_init();
  }
  // Everything above overlaps the schedule kernel; the schedule is read only after it.
  sm90::wait_for_prior_grid();
  sm90::allow_dependent_launch();  // the combine's blocks wait on the device for this grid
  const PartInfo part = p.schedule.parts[blockIdx.y];
  __syncthreads();

  if (warpgroup == 0) {
    cutlass::arch::warpgroup_reg_dealloc<Traits::kProducerRegisters>();
    if (threadIdx.x / 32 == 0) produce_pages<Traits>(p, kv_map, smem, part, kv_head);
  } else {
    cutlass::arch::warpgroup_reg_alloc<Traits::kConsumerRegisters>();
    consume(smem, part, kv_head, m_tile, warpgroup - 1);
  }
}

}  // namespace cutelab::mla::paged_sm90
