#pragma once
// The optional switches of the FP8-tensor-core kernel code (TensorCoreKernel, VtTransposer, v3's
// Kernel<T>): a design's Traits derives from TensorCoreSwitches and overrides what it changes. The
// defaults are v2 / v3's kernel (v9, v10 and v11 set them: their READMEs say why and what each measured).

namespace cutelab::mla::paged_sm90_fp8 {

struct TensorCoreSwitches {
  // Q's packed rows spread over the M tile (row_order.hpp), so that a tile of at most kBlockM / 2
  // live rows leaves every thread's second accumulator row padding: its softmax is skipped.
  static constexpr bool kSpreadRows = false;
  // Q's last latent k-steps (32 columns each) that S reads from the S owner's registers (RS)
  // instead of shared memory; 4 registers a step.
  static constexpr int kQRegisterSteps = 0;
  // setmaxnreg for warpgroup 0 (V^T, its half of O); the S owner gets the rest of the two
  // consumers' share (2 x kConsumerRegisters). 0: both kConsumerRegisters.
  static constexpr int kTransposerRegisters = 0;
  // Warpgroup 0's transpose with a page's 16 loads a thread in flight at once (one shared-memory
  // round trip a page instead of two; needs the registers).
  static constexpr bool kTransposeOneRound = false;
  // P to warpgroup 0 as the S owner's A-operand registers stored as they are (generic stores and
  // loads, an RS P V in warpgroup 0): no fence.proxy.async on the S owner's path.
  static constexpr bool kPRegisterImage = false;
  // Warpgroup 0 loads and permutes page g + 1's V^T block into registers (and frees its slot)
  // before it waits for both P V of page g - 1, and only stores it after: the wait no longer
  // holds the loads (needs kTransposeOneRound's registers).
  static constexpr bool kTransposeAhead = false;
  // Every thread loads request blockIdx.y's schedule entry, length and first page id beside the
  // part's entry (RequestHint), used where the part starts there (the whole-request schedule).
  static constexpr bool kGuessFirstRequest = false;
  // fp8_token: each staged page also gets its tokens' four group scales, one TMA box of 16 bytes x
  // 64 tokens at T::kScaleOffset (the kernel's third map, KvMaps::scales).
  static constexpr bool kScaleBox = false;
  // A second warp of the producer warpgroup runs Derived::sigma_pages over the staged pages (a
  // per-page record for the S owner); it also holds each slot until it has read it, and signals
  // sigma_ready[slot] (one arrival) when the page's record is written.
  static constexpr bool kSigmaWarp = false;
};

}  // namespace cutelab::mla::paged_sm90_fp8
