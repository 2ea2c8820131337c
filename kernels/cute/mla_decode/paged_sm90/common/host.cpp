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

Params make_params(const LaunchState& st, const MlaDecodeArgs& args, const MlaDecodeDims& call) {
  const MlaDecodeDims& d = st.dims;
  Params p;
  p.q = args.q.data;
  p.out = args.out.data;
  p.lse = args.lse.as<float>();
  p.block_table = args.block_table.as<int>();
  p.seqlens = args.seqlens.as<int>();
  p.b = call.b;
  p.s_q = d.s_q;
  p.h_q = d.h_q;
  p.h_kv = d.h_kv;
  p.max_blocks = call.max_blocks;
  p.heads_per_kv = d.h_q / d.h_kv;
  p.rows_per_head = d.s_q * p.heads_per_kv;
  p.m_tiles = st.m_tiles;
  p.scale_log2 = call.scale * 1.4426950408889634f;  // log2(e): the kernels work in exp2
  p.causal = args.causal;
  p.kv_cache_hint = st.config.kv_evict_first ? kEvictFirst : kEvictNormal;
  p.schedule.parts = static_cast<PartInfo*>(st.parts.data());
  p.schedule.requests = static_cast<RequestSplit*>(st.requests.data());
  p.schedule.num_parts = st.num_parts;
  p.schedule.fixed_overhead_blocks = st.config.fixed_overhead_blocks;
  p.schedule.min_blocks_per_part = st.config.min_blocks_per_part;
  p.partials.out = static_cast<float*>(st.partial_out.data());
  p.partials.lse = static_cast<float*>(st.partial_lse.data());
  p.partials.rows_per_head = st.m_tiles * kBlockM;
  return p;
}

// KV cache as (576 columns, h_kv heads, 64 tokens, pages); one box = 64 columns x 64 tokens,
// 128-byte swizzle (the layout the kernels' K tiles are declared with).
CUtensorMap make_kv_map(const MlaDecodeArgs& args, const MlaDecodeDims& call) {
  const std::uint64_t elem = dtype_size(call.dtype);
  const std::uint64_t cols = kHeadDimQK, heads = call.h_kv, tokens = kPageSize;
  return sm90::make_tiled_tensor_map<4>(
      call.dtype == DType::f16 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16 : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, args.kv_cache.data,
      {cols, heads, tokens, static_cast<std::uint64_t>(call.num_blocks)},
      {cols * elem, heads * cols * elem, tokens * heads * cols * elem}, {64u, 1u, static_cast<std::uint32_t>(tokens), 1u},
      CU_TENSOR_MAP_SWIZZLE_128B);
}

}  // namespace

std::string TuneConfig::name() const {
  return concat("fo", fixed_overhead_blocks, "_mb", min_blocks_per_part, kv_evict_first ? "_evictfirst" : "_evictnormal");
}

LaunchState::LaunchState(const MlaDecodeDims& d, const DeviceInfo& dev, const TuneConfig& c) : dims(d), config(c) {
  CUTELAB_REQUIRE(d.dtype == DType::bf16 || d.dtype == DType::f16, "paged_sm90: dtype must be bf16 or f16, got ",
                  dtype_name(d.dtype));
  CUTELAB_REQUIRE(d.b >= 1 && d.b <= kScheduleMaxBatch, "paged_sm90: b = ", d.b, " outside [1, ", kScheduleMaxBatch,
                  "]");
  CUTELAB_REQUIRE(d.h_kv >= 1 && d.h_q % d.h_kv == 0, "paged_sm90: h_q (", d.h_q, ") must be a multiple of h_kv (",
                  d.h_kv, ")");
  CUTELAB_REQUIRE(c.min_blocks_per_part >= 1, "paged_sm90: min_blocks_per_part = ", c.min_blocks_per_part,
                  " must be at least 1");
  CUTELAB_REQUIRE(c.fixed_overhead_blocks >= 0, "paged_sm90: fixed_overhead_blocks = ", c.fixed_overhead_blocks,
                  " is negative");
  const int rows = d.s_q * (d.h_q / d.h_kv);
  m_tiles = ceil_div(rows, kBlockM);
  // One CTA per SM: the grid is (KV heads x M tiles) x parts.
  num_parts = std::max(1, dev.sm_count / (d.h_kv * m_tiles));
  const std::size_t slots = 2 * static_cast<std::size_t>(num_parts);
  const std::size_t partial_rows = slots * d.h_kv * m_tiles * kBlockM;
  parts = DeviceBuffer(num_parts * sizeof(PartInfo));
  requests = DeviceBuffer(d.b * sizeof(RequestSplit));
  partial_out = DeviceBuffer(partial_rows * kHeadDimV * sizeof(float));
  partial_lse = DeviceBuffer(partial_rows * sizeof(float));
}

Runner::Runner(const MlaDecodeDims& dims, const DeviceInfo& dev, const TuneConfig& config, MainKernel main)
    : state_(std::make_shared<LaunchState>(dims, dev, config)), main_(main) {
  main_.set_attributes();
}

PreparedCall Runner::prepare(const MlaDecodeArgs& args) const {
  const MlaDecodeDims call = validate_args(args, /*checked=*/false);
  const MlaDecodeDims& d = state_->dims;
  CUTELAB_REQUIRE(call.b <= d.b, main_.name, ": batch ", call.b, " exceeds the ", d.b, " this object was sized for");
  CUTELAB_REQUIRE(call.s_q == d.s_q && call.h_q == d.h_q && call.h_kv == d.h_kv && call.dtype == d.dtype, main_.name,
                  ": call shape (s_q ", call.s_q, ", h_q ", call.h_q, ", h_kv ", call.h_kv, ", ", dtype_name(call.dtype),
                  ") differs from the planned one (s_q ", d.s_q, ", h_q ", d.h_q, ", h_kv ", d.h_kv, ", ",
                  dtype_name(d.dtype), ")");
  for (const auto& [name, view] : {std::pair<const char*, const TensorView*>{"q", &args.q},
                                   {"kv_cache", &args.kv_cache},
                                   {"block_table", &args.block_table},
                                   {"out", &args.out},
                                   {"lse", &args.lse}})
    CUTELAB_REQUIRE(view->contiguous(), main_.name, ": ", name, " must be contiguous (row-major, no padding), got ",
                    view->describe());
  return PreparedCall{make_params(*state_, args, call), make_kv_map(args, call), call, args.out.data};
}

void Runner::launch(const PreparedCall& call, cudaStream_t stream) const {
  const Params& p = call.params;
  const MlaDecodeDims& d = state_->dims;
  launch_split_schedule(p.seqlens, call.dims.b, p.schedule, stream);
  main_.launch(p, call.kv_map, dim3(d.h_kv * state_->m_tiles, state_->num_parts, 1), stream);
  CombineArgs c;
  c.out = call.out;
  c.lse = p.lse;
  c.requests = p.schedule.requests;
  c.partials = p.partials;
  c.b = call.dims.b;
  c.s_q = d.s_q;
  c.h_q = d.h_q;
  c.h_kv = d.h_kv;
  c.dtype = d.dtype;
  launch_split_combine(c, stream);
}

std::vector<FunctionResources> Runner::resources() const {
  std::vector<FunctionResources> out{read_resources(main_.function, main_.name, kThreads, main_.shared_bytes)};
  const MlaDecodeDims& d = state_->dims;
  for (FunctionResources& r : split_kernel_resources(d.dtype, d.b, d.s_q, d.h_q)) out.push_back(std::move(r));
  return out;
}

}  // namespace cutelab::mla::paged_sm90
