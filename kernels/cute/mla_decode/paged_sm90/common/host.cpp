#include "cute/mla_decode/paged_sm90/common/host.hpp"

#include <algorithm>
#include <array>
#include <cstdint>

#include "cutelab/core/math.hpp"
#include "cutelab/device/sm90/tensor_map.hpp"
#include "mla_decode/common/problem.hpp"
#include "mla_decode/split/schedule.hpp"

namespace cutelab::mla::paged_sm90 {
namespace {

// cute::TMA::CacheHintSm90 values (createpolicy encodings), spelled here to keep CuTe out.
constexpr std::uint64_t kEvictNormal = 0x1000000000000000ull;
constexpr std::uint64_t kEvictFirst = 0x12F0000000000000ull;

// L2 promotion of every KV map: 128 bytes, not the helper's default 256. With 256 the page stream
// alone (no consumer work) ran 3-4% slower on bf16 and fp8_tensor caches, and the bf16 kernel as
// much (b128 h16: t4096 164.6 -> 158.5 us, t16384 599.9 -> 586.6); 64 bytes and none were equal to
// 128 on bf16 and 2-3% slower on fp8_tensor's stream (bench/results/2026-11-23-h200-kv-stream-l2-promotion/).
constexpr CUtensorMapL2promotion kKvPromotion = CU_TENSOR_MAP_L2_PROMOTION_L2_128B;

// KV cache as (576 columns, h_kv heads, 64 tokens, pages); one box = 64 columns x 64 tokens,
// 128-byte swizzle (the layout the kernels' K tiles are declared with). FP8 caches: (entry
// bytes, h_kv, 64, pages), boxes of 64 bytes x 64 tokens unswizzled (the staging layout the
// dequantising designs read), and for fp8_token the bf16 RoPE values at byte 528 of each entry
// as their own (64, h_kv, 64, pages) map; `swizzled` (the K-major operands of FP8 wgmma): `kv`
// boxes of 128 bytes x 64 tokens with the 128-byte swizzle for the latent bytes, `rope` boxes of
// 64 bytes x 64 tokens with the 64-byte swizzle for fp8_tensor's RoPE bytes, or fp8_token's bf16
// RoPE values as above with the 128-byte swizzle. `q_map`: also q's map (KvMaps::q), for any cache
// format; `scale_map`: also fp8_token's scale map (KvMaps::scales).
KvMaps make_kv_maps(const MlaDecodeArgs& args, const MlaDecodeDims& call, bool swizzled, bool q_map,
                    bool scale_map) {
  const std::uint64_t heads = call.h_kv, tokens = kPageSize,
                      pages = static_cast<std::uint64_t>(call.num_blocks);
  const std::array<std::uint32_t, 4> box{64u, 1u, static_cast<std::uint32_t>(tokens), 1u};
  KvMaps maps;
  const std::uint64_t elem = dtype_size(call.dtype);
  const std::uint64_t cols = kHeadDimQK;
  const CUtensorMapDataType type =
      call.dtype == DType::f16 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16 : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
  if (q_map) {  // q in its own dtype, whatever the cache's format
    const int heads_per_kv = call.h_q / call.h_kv;
    const QBox qb = q_box(heads_per_kv, call.s_q);
    const std::uint64_t hpk = static_cast<std::uint64_t>(heads_per_kv);
    maps.q = sm90::make_tiled_tensor_map<4>(
        type, args.q.data, {cols, hpk, heads, static_cast<std::uint64_t>(call.b) * call.s_q},
        {cols * elem, hpk * cols * elem, static_cast<std::uint64_t>(call.h_q) * cols * elem},
        {64u, static_cast<std::uint32_t>(qb.heads), 1u, static_cast<std::uint32_t>(qb.tokens)},
        CU_TENSOR_MAP_SWIZZLE_128B, kKvPromotion);
  }
  if (call.kv_format == KvFormat::bf16 || call.kv_format == KvFormat::f16) {
    maps.kv = sm90::make_tiled_tensor_map<4>(type, args.kv_cache.data, {cols, heads, tokens, pages},
                                             {cols * elem, heads * cols * elem, tokens * heads * cols * elem},
                                             box, CU_TENSOR_MAP_SWIZZLE_128B, kKvPromotion);
    return maps;
  }
  const std::uint64_t entry = static_cast<std::uint64_t>(kv_entry_bytes(call.kv_format));
  const std::array<std::uint64_t, 3> strides{entry, entry * heads, entry * heads * tokens};
  if (swizzled) {  // read by FP8 wgmma: latent boxes of 128 bytes
    const std::array<std::uint32_t, 4> wide{128u, 1u, static_cast<std::uint32_t>(tokens), 1u};
    maps.kv = sm90::make_tiled_tensor_map<4>(CU_TENSOR_MAP_DATA_TYPE_UINT8, args.kv_cache.data,
                                             {entry, heads, tokens, pages}, strides, wide,
                                             CU_TENSOR_MAP_SWIZZLE_128B, kKvPromotion);
    if (call.kv_format == KvFormat::fp8_token) {  // the bf16 RoPE values: 128-byte rows, bf16 K-major
      maps.rope = sm90::make_tiled_tensor_map<4>(
          CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
          static_cast<const std::uint8_t*>(args.kv_cache.data) + kFp8RopeOffset,
          {kHeadDimQK - kHeadDimV, heads, tokens, pages}, strides, box, CU_TENSOR_MAP_SWIZZLE_128B,
          kKvPromotion);
      if (scale_map) {
        const std::array<std::uint32_t, 4> scale_box{16u, 1u, static_cast<std::uint32_t>(tokens), 1u};
        maps.scales = sm90::make_tiled_tensor_map<4>(CU_TENSOR_MAP_DATA_TYPE_UINT8, args.kv_cache.data,
                                                     {entry, heads, tokens, pages}, strides, scale_box,
                                                     CU_TENSOR_MAP_SWIZZLE_NONE, kKvPromotion);
      }
    } else  // fp8_tensor's RoPE codes: one box of 64 bytes
      maps.rope = sm90::make_tiled_tensor_map<4>(CU_TENSOR_MAP_DATA_TYPE_UINT8, args.kv_cache.data,
                                                 {entry, heads, tokens, pages}, strides, box,
                                                 CU_TENSOR_MAP_SWIZZLE_64B, kKvPromotion);
    return maps;
  }
  maps.kv = sm90::make_tiled_tensor_map<4>(CU_TENSOR_MAP_DATA_TYPE_UINT8, args.kv_cache.data,
                                           {entry, heads, tokens, pages}, strides, box,
                                           CU_TENSOR_MAP_SWIZZLE_NONE, kKvPromotion);
  if (call.kv_format == KvFormat::fp8_token)
    maps.rope =
        sm90::make_tiled_tensor_map<4>(CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
                                       static_cast<const std::uint8_t*>(args.kv_cache.data) + kFp8RopeOffset,
                                       {kHeadDimQK - kHeadDimV, heads, tokens, pages}, strides, box,
                                       CU_TENSOR_MAP_SWIZZLE_NONE, kKvPromotion);
  return maps;
}

KvFormats formats_of(KvFormat f) {
  if (f == KvFormat::fp8_tensor) return {false, true, false};
  if (f == KvFormat::fp8_token) return {false, false, true};
  return {};
}

std::string ptr_text(const void* p) { return concat("0x", std::hex, reinterpret_cast<std::uintptr_t>(p)); }

}  // namespace

std::optional<std::string> q_tile_refusal(int heads_per_kv, int s_q) {
  if (heads_per_kv % 64 == 0 || 64 % heads_per_kv == 0 || s_q * heads_per_kv <= 64) return std::nullopt;
  return concat(
      "loads each 64-row Q tile as one TMA box of whole query tokens, which needs h_q / h_kv "
      "dividing 64 or a multiple of 64, or s_q * h_q / h_kv <= 64; got h_q / h_kv = ",
      heads_per_kv, " with s_q = ", s_q);
}

std::string TuneConfig::name() const {
  return concat("fo", fixed_overhead_blocks, "_mb", min_blocks_per_part,
                kv_evict_first ? "_evictfirst" : "_evictnormal",
                partials == PartialFormat::out_dtype ? "_p16" : "", tail_parts ? "_tail" : "");
}

StepPlan::StepPlan(const MlaDecodeDims& runner_dims, int num_parts, int rows_per_head)
    : runner_dims_(runner_dims), num_parts_(num_parts) {
  // A split request has at most one piece per part it touches: 2 * num_parts slots cover all.
  const std::size_t slots = 2 * static_cast<std::size_t>(num_parts);
  const std::size_t partial_rows = slots * runner_dims.h_kv * rows_per_head;
  parts_ = DeviceBuffer(num_parts * sizeof(PartInfo));
  requests_ = DeviceBuffer(runner_dims.b * sizeof(RequestSplit));
  partial_out_ = DeviceBuffer(partial_rows * kHeadDimV * sizeof(float));
  partial_lse_ = DeviceBuffer(partial_rows * sizeof(float));
  error_flag_ = DeviceBuffer(sizeof(int));
  CUTELAB_CUDA(cudaMemset(error_flag_.data(), 0, sizeof(int)));
}

std::string StepPlan::reuse_error(cudaStream_t stream) const {
  if (b_ == 0) return {};
  int flag = 0;
  CUTELAB_CUDA(cudaMemcpyAsync(&flag, error_flag_.data(), sizeof(int), cudaMemcpyDeviceToHost, stream));
  CUTELAB_CUDA(cudaStreamSynchronize(stream));
  if (!flag) return {};
  return concat("a call met lengths whose page counts differ from the ones the step plan was made for (seqlens ",
                ptr_text(seqlens_), ", b = ", b_, "): those requests were written as NaN; call plan_step after "
                "changing the lengths");
}

std::vector<int> StepPlan::planned_blocks(cudaStream_t stream) const {
  std::vector<RequestSplit> splits(static_cast<std::size_t>(b_));
  if (b_ > 0) {
    CUTELAB_CUDA(cudaMemcpyAsync(splits.data(), requests_.data(), splits.size() * sizeof(RequestSplit),
                                 cudaMemcpyDeviceToHost, stream));
    CUTELAB_CUDA(cudaStreamSynchronize(stream));
  }
  std::vector<int> blocks;
  for (const RequestSplit& r : splits) blocks.push_back(r.num_blocks);
  return blocks;
}

Runner::Runner(const MlaDecodeDims& d, const DeviceInfo& dev, const TuneConfig& c, MainKernel main)
    : dims_(d), config_(c), main_(main) {
  CUTELAB_REQUIRE(main_.function != nullptr, "this design has no main kernel for ", dtype_name(d.dtype),
                  " q with the KV format asked for",
                  c.partials == PartialFormat::out_dtype ? " writing partial rows in out's dtype" : "");
  CUTELAB_REQUIRE(main_.partials == c.partials, main_.name,
                  ": the main kernel writes other partial rows than the "
                  "config names");
  CUTELAB_REQUIRE(d.dtype == DType::bf16 || d.dtype == DType::f16, main_.name, ": dtype must be bf16 or f16, got ",
                  dtype_name(d.dtype));
  CUTELAB_REQUIRE(!main_.fp8_format || d.dtype == DType::bf16, main_.name,
                  ": FP8 KV caches take bf16 q and out, got ", dtype_name(d.dtype));
  // The format the main kernel reads; every call's cache must be in it.
  dims_.kv_format = main_.fp8_format.value_or(d.dtype == DType::f16 ? KvFormat::f16 : KvFormat::bf16);
  CUTELAB_REQUIRE(d.b >= 1 && d.b <= kScheduleMaxBatch, main_.name, ": b = ", d.b, " outside [1, ", kScheduleMaxBatch,
                  "]");
  CUTELAB_REQUIRE(d.h_kv >= 1 && d.h_q % d.h_kv == 0, main_.name, ": h_q (", d.h_q,
                  ") must be a multiple of h_kv (", d.h_kv, ")");
  CUTELAB_REQUIRE(c.min_blocks_per_part >= 1, main_.name, ": min_blocks_per_part = ", c.min_blocks_per_part,
                  " must be at least 1");
  CUTELAB_REQUIRE(c.fixed_overhead_blocks >= 0, main_.name, ": fixed_overhead_blocks = ", c.fixed_overhead_blocks,
                  " is negative");
  if (main_.q_map) {
    const std::optional<std::string> why = q_tile_refusal(d.h_q / d.h_kv, d.s_q);
    CUTELAB_REQUIRE(!why, main_.name, ": ", why.value_or(""));
  }
  m_tiles_ = m_tiles_of(d.s_q, d.h_q, d.h_kv);
  // One CTA per SM: the grid is (KV heads x M tiles) x parts.
  const PartGrid grid = part_grid(d.h_kv * m_tiles_, dev.sm_count, c.tail_parts);
  num_parts_ = grid.num_parts;
  tail_waves_ = grid.tail_waves;
  main_.set_attributes();
}

PartGrid part_grid(int units, int sm_count, bool tail_parts) {
  const int full = sm_count / units, spare = sm_count - full * units;
  // The CTAs of the last row start in launch order as SMs free up: spare of them at once, the rest
  // as those finish (a row of 1 / waves of a part each).
  if (!tail_parts || full < 1 || spare == 0) return {std::max(1, full), 0};
  return {full + 1, ceil_div(units, spare)};
}

std::unique_ptr<StepPlan> Runner::make_step_plan() const {
  return std::unique_ptr<StepPlan>(new StepPlan(dims_, num_parts_, m_tiles_ * kBlockM));
}

void Runner::require_own(const StepPlan& plan) const {
  const MlaDecodeDims& p = plan.runner_dims_;
  // The partial scratch is laid out by these (and by the parts, which follow the device's SMs):
  // another shape would index past it.
  CUTELAB_REQUIRE(p.b == dims_.b && p.s_q == dims_.s_q && p.h_q == dims_.h_q && p.h_kv == dims_.h_kv &&
                      p.dtype == dims_.dtype && plan.num_parts_ == num_parts_,
                  main_.name, ": this step plan was made by a runner of another shape (b <= ", p.b, ", s_q ",
                  p.s_q, ", h_q ", p.h_q, ", h_kv ", p.h_kv, ", ", dtype_name(p.dtype),
                  "; this runner: b <= ", dims_.b, ", s_q ", dims_.s_q, ", h_q ", dims_.h_q, ", h_kv ",
                  dims_.h_kv, ", ", dtype_name(dims_.dtype), ")");
}

void Runner::plan_step(StepPlan& plan, const TensorView& seqlens, cudaStream_t stream) const {
  require_own(plan);
  CUTELAB_REQUIRE(seqlens.dtype == DType::i32 && seqlens.rank() == 1, main_.name,
                  ": seqlens must be a [b] int32 tensor, got ", seqlens.describe());
  const int b = static_cast<int>(seqlens.shape[0]);
  CUTELAB_REQUIRE(b >= 1 && b <= dims_.b, main_.name, ": batch ", b, " outside the 1..", dims_.b,
                  " this runner was sized for");
  CUTELAB_REQUIRE(seqlens.data != nullptr && is_aligned(seqlens.data, sizeof(int)) && seqlens.contiguous(),
                  main_.name, ": seqlens must be a contiguous, 4-byte aligned device tensor, got ", seqlens.describe());
  SplitSchedule s;
  s.parts = static_cast<PartInfo*>(plan.parts_.data());
  s.requests = static_cast<RequestSplit*>(plan.requests_.data());
  s.num_parts = num_parts_;
  s.fixed_overhead_blocks = config_.fixed_overhead_blocks;
  s.min_blocks_per_part = config_.min_blocks_per_part;
  s.tail_waves = tail_waves_;
  s.reuse_error = static_cast<int*>(plan.error_flag_.data());
  launch_split_schedule(seqlens.as<int>(), b, s, stream);
  plan.b_ = b;
  plan.seqlens_ = seqlens.data;
}

PreparedCall Runner::prepare(const StepPlan& plan, const MlaDecodeArgs& args, bool checked,
                             cudaStream_t stream) const {
  const MlaDecodeDims call = validate_args(args, checked, stream, formats_of(dims_.kv_format));
  const MlaDecodeDims& d = dims_;
  CUTELAB_REQUIRE(call.s_q == d.s_q && call.h_q == d.h_q && call.h_kv == d.h_kv && call.dtype == d.dtype, main_.name,
                  ": call shape (s_q ", call.s_q, ", h_q ", call.h_q, ", h_kv ", call.h_kv, ", ", dtype_name(call.dtype),
                  ") differs from the planned one (s_q ", d.s_q, ", h_q ", d.h_q, ", h_kv ", d.h_kv, ", ",
                  dtype_name(d.dtype), ")");
  CUTELAB_REQUIRE(plan.b_ > 0, main_.name, ": the step plan was never planned (call plan_step first)");
  require_own(plan);
  CUTELAB_REQUIRE(call.b == plan.b_, main_.name, ": batch ", call.b, " differs from the batch ", plan.b_,
                  " the step plan was made for");
  CUTELAB_REQUIRE(args.seqlens.data == plan.seqlens_, main_.name, ": seqlens ", ptr_text(args.seqlens.data),
                  " is not the tensor the step plan was made from (", ptr_text(plan.seqlens_), ")");
  for (const auto& [name, view] : {std::pair<const char*, const TensorView*>{"q", &args.q},
                                   {"kv_cache", &args.kv_cache},
                                   {"block_table", &args.block_table},
                                   {"out", &args.out},
                                   {"lse", &args.lse}})
    CUTELAB_REQUIRE(view->contiguous(), main_.name, ": ", name, " must be contiguous (row-major, no padding), got ",
                    view->describe());
  if (checked) {
    // The lengths are read again here: validate_args checked them, this compares them with the plan.
    std::vector<int> lens(static_cast<std::size_t>(call.b));
    CUTELAB_CUDA(cudaMemcpyAsync(lens.data(), args.seqlens.data, lens.size() * sizeof(int), cudaMemcpyDeviceToHost,
                                 stream));
    const std::vector<int> planned = plan.planned_blocks(stream);
    for (int i = 0; i < call.b; ++i)
      CUTELAB_REQUIRE(planned_pages(lens[i]) == planned[i], main_.name, ": seqlens[", i, "] = ", lens[i], " needs ",
                      planned_pages(lens[i]), " pages, the step plan was made for ", planned[i],
                      ": call plan_step again after changing the lengths");
  }

  Params p;
  p.q = args.q.data;
  p.out = args.out.data;
  p.lse = args.lse.as<float>();
  p.block_table = args.block_table.as<int>();
  p.seqlens = args.seqlens.as<int>();
  p.kv_cache = args.kv_cache.data;
  p.kv_scale = args.kv_scale;
  p.b = call.b;
  p.s_q = d.s_q;
  p.h_q = d.h_q;
  p.h_kv = d.h_kv;
  p.max_blocks = call.max_blocks;
  p.heads_per_kv = d.h_q / d.h_kv;
  p.rows_per_head = d.s_q * p.heads_per_kv;
  p.m_tiles = m_tiles_;
  p.scale_log2 = call.scale * 1.4426950408889634f;  // log2(e): the kernels work in exp2
  p.causal = args.causal;
  p.kv_cache_hint = config_.kv_evict_first ? kEvictFirst : kEvictNormal;
  p.schedule.parts = static_cast<PartInfo*>(plan.parts_.data());
  p.schedule.requests = static_cast<RequestSplit*>(plan.requests_.data());
  p.schedule.num_parts = num_parts_;
  p.schedule.fixed_overhead_blocks = config_.fixed_overhead_blocks;
  p.schedule.min_blocks_per_part = config_.min_blocks_per_part;
  p.schedule.tail_waves = tail_waves_;
  p.schedule.reuse_error = static_cast<int*>(plan.error_flag_.data());
  p.partials.out = plan.partial_out_.data();  // sized for fp32 rows, the larger format
  p.partials.lse = static_cast<float*>(plan.partial_lse_.data());
  p.partials.rows_per_head = m_tiles_ * kBlockM;
  p.partials.format = main_.partials;
  return PreparedCall{p, make_kv_maps(args, call, main_.fp8_swizzled, main_.q_map, main_.scale_map), call,
                      args.out.data};
}

void Runner::launch(const PreparedCall& call, cudaStream_t stream) const {
  const Params& p = call.params;
  main_.launch(p, call.kv_maps, dim3(dims_.h_kv * m_tiles_, num_parts_, 1), stream);
  CombineArgs c;
  c.out = call.out;
  c.lse = p.lse;
  c.requests = p.schedule.requests;
  c.seqlens = p.seqlens;
  c.reuse_error = p.schedule.reuse_error;
  c.partials = p.partials;
  c.b = call.dims.b;
  c.s_q = dims_.s_q;
  c.h_q = dims_.h_q;
  c.h_kv = dims_.h_kv;
  c.pieces_hint = combine_pieces_hint(c.b, num_parts_, p.max_blocks, config_.min_blocks_per_part);
  c.dtype = dims_.dtype;
  launch_split_combine(c, stream);
}

std::vector<FunctionResources> Runner::resources() const {
  std::vector<FunctionResources> out{
      read_resources(main_.function, main_.name, main_.block_threads, main_.shared_bytes)};
  for (FunctionResources& r : split_kernel_resources(
           dims_.dtype, dims_.b, dims_.s_q, dims_.h_q,
           combine_pieces_hint(dims_.b, num_parts_, dims_.max_blocks, config_.min_blocks_per_part),
           main_.partials))
    out.push_back(std::move(r));
  return out;
}

}  // namespace cutelab::mla::paged_sm90
