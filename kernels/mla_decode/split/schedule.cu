#include "mla_decode/split/schedule.hpp"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <type_traits>

#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>
#include <cuda/functional>

#include "cutelab/core/error.hpp"
#include "cutelab/device/sm90/pdl.cuh"
#include "cutelab/runtime/launch.hpp"
#include "mla_decode/common/problem.hpp"

namespace cutelab::mla {
namespace {

constexpr int kScheduleThreads = kScheduleMaxBatch;
static_assert(kScheduleMaxBatch >= kMaxBatch, "one schedule block must cover the family's largest batch");
static_assert(sizeof(RequestSplit) == sizeof(int4), "the combine reads a request's split as one int4");

__global__ void __launch_bounds__(kScheduleThreads)
split_schedule_kernel(const int* __restrict__ seqlens, int b, SplitSchedule s) {
  using Scan = cub::BlockScan<int, kScheduleThreads>;
  using Reduce = cub::BlockReduce<int, kScheduleThreads>;
  __shared__ typename Scan::TempStorage scan_storage;
  __shared__ typename Reduce::TempStorage reduce_storage;
  __shared__ int cost_end[kScheduleThreads];  // inclusive prefix of costs
  __shared__ int total_cost, max_cost;

  const int i = threadIdx.x;
  const int len = i < b ? seqlens[i] : 0;
  const int n = planned_pages(len);
  if (i == 0 && s.reuse_error) *s.reuse_error = 0;
  const int cost = n > 0 ? n + s.fixed_overhead_blocks : 0;
  int begin = 0, total = 0;
  Scan(scan_storage).ExclusiveSum(cost, begin, total);
  const int largest = Reduce(reduce_storage).Reduce(cost, cuda::maximum<>{});  // valid in thread 0
  cost_end[i] = begin + cost;
  if (i == 0) {
    total_cost = total;
    max_cost = largest;
  }
  __syncthreads();

  // With tail waves the line holds (num_parts - 1) full parts and one of 1 / tail_waves of a part.
  const int full_parts = s.tail_waves > 0 ? s.num_parts - 1 : s.num_parts;
  const long line_parts = s.tail_waves > 0 ? static_cast<long>(full_parts) * s.tail_waves + 1 : s.num_parts;
  const long line_cost = s.tail_waves > 0 ? static_cast<long>(total_cost) * s.tail_waves : total_cost;
  const int per_part =
      max(max(1, s.min_blocks_per_part), static_cast<int>((line_cost + line_parts - 1) / line_parts));
  // One whole request per part when every request fits in a part give or take its fixed
  // overhead: the longest part is then no longer than a cut line would make it, and nothing is
  // split (no partials, no second piece of any request). Never in a short last part.
  const bool whole = b <= full_parts && max_cost <= per_part + s.fixed_overhead_blocks;
  if (whole) {
    for (int p = i; p < s.num_parts; p += kScheduleThreads) {
      const int req = min(p, b), next = min(p + 1, b);
      s.parts[p] = PartInfo{req, 0, next, 0};
    }
    if (i < b) s.requests[i] = RequestSplit{n > 0 ? 1 : 0, 0, i, n};
    sm90::allow_dependent_launch();
    return;
  }

  // Whole requests also when there are more requests than parts: cut p moves to the request
  // boundary nearest to p * per_part. Taken when no part then costs more than a cut line's part
  // plus F, the cost a split adds (b = 128, h_q = 128 at s_k 4096 on 66 parts: two requests per
  // part, no fp32 partials written and read back).
  __shared__ int cut[kScheduleThreads + 1];
  __shared__ int snapped_span, snapped_tail;
  if (s.num_parts < kScheduleThreads) {
    for (int p = i; p <= s.num_parts; p += kScheduleThreads) {
      const int pos = p * per_part;
      int lo = 0, hi = b;  // first request whose cost range ends after pos
      while (lo < hi) {
        const int mid = (lo + hi) / 2;
        if (cost_end[mid] > pos)
          hi = mid;
        else
          lo = mid + 1;
      }
      if (lo < b && cost_end[lo] - pos < pos - (lo == 0 ? 0 : cost_end[lo - 1])) ++lo;
      cut[p] = p == s.num_parts ? b : lo;
    }
    __syncthreads();
    int span = 0;
    if (i < s.num_parts && cut[i + 1] > cut[i])
      span = cost_end[cut[i + 1] - 1] - (cut[i] == 0 ? 0 : cost_end[cut[i] - 1]);
    const int longest = Reduce(reduce_storage).Reduce(span, cuda::maximum<>{});  // valid in thread 0
    if (i == 0) snapped_span = longest;
    if (i == s.num_parts - 1) snapped_tail = span;
    __syncthreads();
    // A short last part must stay short: it runs after another part on its SM.
    const bool tail_fits =
        s.tail_waves == 0 || snapped_tail <= per_part / s.tail_waves + s.fixed_overhead_blocks;
    if (snapped_span <= per_part + s.fixed_overhead_blocks && tail_fits) {
      if (i < s.num_parts) s.parts[i] = PartInfo{cut[i], 0, cut[i + 1], 0};
      if (i < b) {
        int part = 0, last = s.num_parts;  // the part holding request i: first p with cut[p + 1] > i
        while (part < last) {
          const int mid = (part + last) / 2;
          if (cut[mid + 1] <= i)
            part = mid + 1;
          else
            last = mid;
        }
        s.requests[i] = RequestSplit{n > 0 ? 1 : 0, 0, part, n};
      }
      sm90::allow_dependent_launch();
      return;
    }
  }
  // Part p starts at the first block whose position on the cost line is >= p * per_part.
  for (int p = i; p <= s.num_parts; p += kScheduleThreads) {
    const int pos = p * per_part;
    int lo = 0, hi = b;  // first request whose cost range ends after pos
    while (lo < hi) {
      const int mid = (lo + hi) / 2;
      if (cost_end[mid] > pos) hi = mid; else lo = mid + 1;
    }
    int req = lo, blk = 0;
    if (req < b) {
      const int req_begin = (req == 0 ? 0 : cost_end[req - 1]);
      blk = max(0, pos - req_begin - s.fixed_overhead_blocks);
    }
    if (p < s.num_parts) { s.parts[p].begin_req = req; s.parts[p].begin_blk = blk; }
    if (p > 0) { s.parts[p - 1].end_req = req; s.parts[p - 1].end_blk = blk; }
  }

  int first_part = 0, num_splits = 0;
  if (n > 0) {
    const int first_pos = begin + s.fixed_overhead_blocks;
    first_part = first_pos / per_part;
    num_splits = (first_pos + n - 1) / per_part - first_part + 1;
  }
  __syncthreads();  // scan_storage is reused
  int offset = 0, unused = 0;
  Scan(scan_storage).ExclusiveSum(num_splits > 1 ? num_splits : 0, offset, unused);
  if (i < b) s.requests[i] = RequestSplit{num_splits, offset, first_part, n};
  // The main kernel (a programmatic dependent) may now launch; it waits for these writes.
  sm90::allow_dependent_launch();
}

template <class Element>
__device__ __forceinline__ void store_out(Element* out, int idx, float4 v);
template <>
__device__ __forceinline__ void store_out<__nv_bfloat16>(__nv_bfloat16* out, int idx, float4 v) {
  __nv_bfloat162 lo = __floats2bfloat162_rn(v.x, v.y), hi = __floats2bfloat162_rn(v.z, v.w);
  uint2 packed{*reinterpret_cast<uint32_t*>(&lo), *reinterpret_cast<uint32_t*>(&hi)};
  *reinterpret_cast<uint2*>(out + idx) = packed;
}
template <>
__device__ __forceinline__ void store_out<__half>(__half* out, int idx, float4 v) {
  __half2 lo = __floats2half2_rn(v.x, v.y), hi = __floats2half2_rn(v.z, v.w);
  uint2 packed{*reinterpret_cast<uint32_t*>(&lo), *reinterpret_cast<uint32_t*>(&hi)};
  *reinterpret_cast<uint2*>(out + idx) = packed;
}

// Four values of a partial row as fp32: vector `vec` of 4 columns (16 bytes in fp32, 8 in out's dtype).
template <class Partial>
__device__ __forceinline__ float4 load_partial4(const Partial* row, int vec) {
  if constexpr (std::is_same_v<Partial, float>) {
    return reinterpret_cast<const float4*>(row)[vec];
  } else {
    const uint2 bits = reinterpret_cast<const uint2*>(row)[vec];
    const auto widen = [](uint32_t pair) {
      if constexpr (std::is_same_v<Partial, __nv_bfloat16>)
        return __bfloat1622float2(reinterpret_cast<const __nv_bfloat162&>(pair));
      else
        return __half22float2(reinterpret_cast<const __half2&>(pair));
    };
    const float2 lo = widen(bits.x), hi = widen(bits.y);
    return float4{lo.x, lo.y, hi.x, hi.y};
  }
}

constexpr int kCombineWarps = 4;
constexpr int kSplitsInFlight = 8;  // partial rows loaded before the first is used
constexpr int kWideGroup = 16;      // the same, for a few-rows warp with 9-16 pieces (CombineShape::wide)
// Below this many (row, column slice) warps the GPU holds too few loads in flight: a small batch
// cuts its rows into 2 or 4 column slices (b = 1, h_q = 128: 128 rows, 512 warps with 4).
constexpr int kCombineTargetWarps = 1024;

// One item per (request, kv head, packed query row, column slice), merged by kWarpsPerItem warps
// (1, or the CTA's kCombineWarps, each taking every kWarpsPerItem-th piece); each lane owns
// 16 / kSlices of the slice's columns. With few rows (kSlices > 1) the loop over pieces is
// latency-bound: each warp loads its pieces' lse values and partial rows together, kSplitsInFlight
// at a time, merged against a running max (one round trip a group); with many rows it reads the
// lse values first and weights each row as it lands (fewer live registers, more warps resident).
// A small batch splits each request many ways (b = 1: up to one piece per part), and one warp per
// item then held too few loads in flight (b1 h128 t4096 on the H200: 24.6 -> 22.1 µs end to end
// with four). Warps sharing an item add their sums in a fixed order (bitwise repeatable).
// Partial: float, or Element when the pieces wrote their rows in out's dtype. kFewRowsGroup: the pieces a
// warp of the few-rows form loads in one round trip when it has more than kSplitsInFlight (a launch
// shape of its own, so that the other shapes keep their registers).
template <class Element, class Partial, int kSlices, int kWarpsPerItem, int kFewRowsGroup = kSplitsInFlight>
__global__ void __launch_bounds__(kCombineWarps * 32) split_combine_kernel(CombineArgs a) {
  static_assert(kWarpsPerItem == 1 || kWarpsPerItem == kCombineWarps, "a CTA returns early only as a whole");
  static_assert(kFewRowsGroup == kSplitsInFlight || kSlices > 1, "wide groups are the few-rows form's");
  constexpr int kVecs = 4 / kSlices;                 // float4s per lane per partial row
  constexpr int kSliceCols = kHeadDimV / kSlices;
  constexpr int kItemsPerBlock = kCombineWarps / kWarpsPerItem;
  // The schedule and the call's lengths were complete before the main kernel passed its own wait,
  // and this grid launches only after that (every main kernel waits, then allows dependents):
  // they are read before waiting for the main kernel, through L2, so that the blocks of requests
  // with nothing to merge leave while it runs instead of after it (a b128 s_k 4096 call split
  // nothing and paid ~2 µs for 2,048 such blocks after the main kernel).
  const int req = blockIdx.x;
  const int4 split_bits = __ldcg(reinterpret_cast<const int4*>(a.requests) + req);
  const RequestSplit rs{split_bits.x, split_bits.y, split_bits.z, split_bits.w};
  // A request with nothing to merge was written by the main kernel (which checks its length
  // itself). Its blocks leave at once, except the grid's first, which always waits for the main
  // kernel: a programmatic successor's wait covers this grid, not the one before it, so this
  // grid must not complete before the main kernel does.
  const bool first_block = blockIdx.x == 0 && blockIdx.y == 0;
  if (rs.num_splits == 1 && !first_block) return;
  // A length that needs another page count than planned: the pieces do not cover it.
  const bool stale = planned_pages(__ldcg(a.seqlens + req)) != rs.num_blocks;
  sm90::wait_for_prior_grid();
  if (rs.num_splits == 1) return;

  const int heads_per_kv = a.h_q / a.h_kv;
  const int rows = a.s_q * heads_per_kv;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int share = warp % kWarpsPerItem;  // this warp's share of the item's pieces
  const int flat_slice =
      blockIdx.y * kItemsPerBlock + warp / kWarpsPerItem;  // (kv_head * rows + row) * kSlices + slice
  if (flat_slice >= a.h_kv * rows * kSlices) return;
  const int flat = flat_slice / kSlices, slice = flat_slice % kSlices;
  const int kv_head = flat / rows, row = flat % rows;
  const int s = row / heads_per_kv, head = kv_head * heads_per_kv + row % heads_per_kv;

  Element* out = static_cast<Element*>(a.out) + ((static_cast<int64_t>(req) * a.s_q + s) * a.h_q + head) * kHeadDimV +
                 slice * kSliceCols;
  float* lse_out = a.lse + (static_cast<int64_t>(req) * a.h_q + head) * a.s_q + s;
  const auto slot_row = [&](int k) {
    return (static_cast<int64_t>(rs.split_offset + k) * a.h_kv + kv_head) * a.partials.rows_per_head + row;
  };

  float max_lse = -INFINITY;
  float4 acc[kVecs] = {};
  float sum = 0.f;
  const int count = (rs.num_splits - share + kWarpsPerItem - 1) / kWarpsPerItem;  // this warp's pieces
  // This warp's pieces i0 .. i0 + kGroup - 1: their lse values (-inf past the last) and partial
  // rows, all loads issued before any is used.
  const auto load_group = [&]<int kGroup>(int i0, float(&piece_lse)[kGroup], float4(&v)[kGroup][kVecs]) {
#pragma unroll
    for (int u = 0; u < kGroup; ++u) {
      const bool live = i0 + u < count;
      const int64_t sr = slot_row(share + kWarpsPerItem * (live ? i0 + u : i0));
      piece_lse[u] = live ? a.partials.lse[sr] : -INFINITY;
      const Partial* part = static_cast<const Partial*>(a.partials.out) + sr * kHeadDimV + slice * kSliceCols;
#pragma unroll
      for (int j = 0; j < kVecs; ++j) v[u][j] = load_partial4(part, j * 32 + lane);
    }
  };
  const auto add_weighted = [&](float w, const float4(&row)[kVecs]) {
    sum += w;
#pragma unroll
    for (int j = 0; j < kVecs; ++j) {
      acc[j].x += w * row[j].x;
      acc[j].y += w * row[j].y;
      acc[j].z += w * row[j].z;
      acc[j].w += w * row[j].w;
    }
  };
  const auto scale_acc = [&](float f) {
    sum *= f;
#pragma unroll
    for (int j = 0; j < kVecs; ++j) {
      acc[j].x *= f;
      acc[j].y *= f;
      acc[j].z *= f;
      acc[j].w *= f;
    }
  };
  if constexpr (kSlices == 1) {
    // Many rows (throughput-bound): the lse values first, so each partial row is weighted as it
    // lands and few registers stay live (80; the one-pass form below needs 168 here, and the
    // lower occupancy made b64 s4 h128 t4096 1.3% slower).
    for (int k = lane; k < rs.num_splits; k += 32) max_lse = fmaxf(max_lse, a.partials.lse[slot_row(k)]);
    for (int offset = 16; offset > 0; offset /= 2)
      max_lse = fmaxf(max_lse, __shfl_xor_sync(0xffffffffu, max_lse, offset));
    // Whole groups of kSplitsInFlight, then the rest in pairs: a request of two pieces used to
    // load and weight eight rows, six of them with weight 0 (b64 s4 h128 causal: 6.8M -> 3.5M
    // instructions, 15.6 -> 12.4 µs in Nsight Compute). The same sums in the same order.
    const auto weigh_group = [&]<int kGroup>(int i0) {
      float piece_lse[kGroup];
      float4 v[kGroup][kVecs];
      load_group.template operator()<kGroup>(i0, piece_lse, v);
#pragma unroll
      for (int u = 0; u < kGroup; ++u) add_weighted(__expf(piece_lse[u] - max_lse), v[u]);  // 0 past the last
    };
    if (max_lse != -INFINITY) {
      int i0 = 0;
      for (; i0 + kSplitsInFlight <= count; i0 += kSplitsInFlight)
        weigh_group.template operator()<kSplitsInFlight>(i0);
      for (; i0 < count; i0 += 2) weigh_group.template operator()<2>(i0);
    }
  } else {
    // Few rows (latency-bound: a small batch): one round trip a group, the lse values and the
    // partial rows loaded together and merged against a running max (sum and acc relative to
    // it, rescaled when a group moves it).
    const auto merge_group = [&]<int kGroup>(int i0) {
      float piece_lse[kGroup];
      float4 v[kGroup][kVecs];
      load_group.template operator()<kGroup>(i0, piece_lse, v);
      float group_max = max_lse;
#pragma unroll
      for (int u = 0; u < kGroup; ++u) group_max = fmaxf(group_max, piece_lse[u]);
      if (group_max == -INFINITY) return;      // no piece so far saw a key
      scale_acc(__expf(max_lse - group_max));  // 0 while max_lse is -inf
      max_lse = group_max;
#pragma unroll
      for (int u = 0; u < kGroup; ++u)
        if (piece_lse[u] != -INFINITY)  // a piece with no key: its row is not used
          add_weighted(__expf(piece_lse[u] - max_lse), v[u]);
    };
    // A warp's pieces in one round trip instead of two (b1 h128 t4096: 16 pieces a warp).
    if (kFewRowsGroup > kSplitsInFlight && count > kSplitsInFlight && count <= kFewRowsGroup)
      merge_group.template operator()<kFewRowsGroup>(0);
    else
      for (int i0 = 0; i0 < count; i0 += kSplitsInFlight) merge_group.template operator()<kSplitsInFlight>(i0);
  }
  if constexpr (kWarpsPerItem > 1) {
    // Each warp's sum and acc are relative to its own max (the two-pass form: all the same).
    __shared__ float4 shared_acc[kWarpsPerItem - 1][kVecs][32];
    __shared__ float shared_sum[kWarpsPerItem - 1];
    __shared__ float shared_max[kWarpsPerItem];
    if (lane == 0) shared_max[share] = max_lse;
    if (share > 0) {
#pragma unroll
      for (int j = 0; j < kVecs; ++j) shared_acc[share - 1][j][lane] = acc[j];
      if (lane == 0) shared_sum[share - 1] = sum;
    }
    __syncthreads();
    if (share > 0) return;
    float item_max = max_lse;
#pragma unroll
    for (int w = 1; w < kWarpsPerItem; ++w) item_max = fmaxf(item_max, shared_max[w]);
    if (item_max != -INFINITY) {
      scale_acc(__expf(max_lse - item_max));
#pragma unroll
      for (int w = 0; w < kWarpsPerItem - 1; ++w) {
        const float f = __expf(shared_max[w + 1] - item_max);  // 0 for a warp that saw no key
        if (f == 0.f) continue;
        sum += f * shared_sum[w];
#pragma unroll
        for (int j = 0; j < kVecs; ++j) {
          const float4 o = shared_acc[w][j][lane];
          acc[j].x += f * o.x;
          acc[j].y += f * o.y;
          acc[j].z += f * o.z;
          acc[j].w += f * o.w;
        }
      }
    }
    max_lse = item_max;
  }
  const float inv = stale ? NAN : sum > 0.f ? 1.f / sum : 0.f;
#pragma unroll
  for (int j = 0; j < kVecs; ++j) {
    const float4 o{acc[j].x * inv, acc[j].y * inv, acc[j].z * inv, acc[j].w * inv};
    store_out<Element>(out, (j * 32 + lane) * 4, o);
  }
  // A row that saw no key at all (length 0, or causal with nothing visible) has lse +inf.
  if (slice == 0 && lane == 0) {
    *lse_out = stale ? NAN : sum > 0.f ? max_lse + __logf(sum) : INFINITY;
    if (stale && a.reuse_error) *a.reuse_error = 1;
  }
}

// How a launch cuts its work: column slices (as few as keep kCombineTargetWarps warps busy) and
// warps per item (the CTA's four when a split request may have more pieces than one warp loads at
// a time; with fewer, the other three would wait at the CTA barrier for nothing); wide: each warp
// of the few-rows form loads up to kWideGroup pieces at once, where it would have 9-16 (b1 h128
// t4096 on 132 SMs: 64 pieces, 16 a warp; 17.6 -> 17.1 µs on the H200).
struct CombineShape {
  int slices, warps_per_item;
  bool wide;
};
CombineShape combine_shape(int b, int s_q, int h_q, int pieces_hint) {
  const long rows = static_cast<long>(b) * s_q * h_q;
  const int slices = rows >= kCombineTargetWarps ? 1 : 2 * rows >= kCombineTargetWarps ? 2 : 4;
  const int warps = pieces_hint > kSplitsInFlight ? kCombineWarps : 1;
  const int per_warp = (pieces_hint + warps - 1) / warps;
  return {slices, warps, slices > 1 && per_warp > kSplitsInFlight && per_warp <= kWideGroup};
}

// Calls f with the combine kernel of (out dtype, partial format, launch shape).
template <class Element, class Partial, class F>
void with_combine_kernel(const CombineShape& c, F&& f) {
  if (c.wide) {  // only with more pieces than kSplitsInFlight, so four warps an item
    if (c.slices == 2)
      f(split_combine_kernel<Element, Partial, 2, kCombineWarps, kWideGroup>);
    else
      f(split_combine_kernel<Element, Partial, 4, kCombineWarps, kWideGroup>);
    return;
  }
  const auto by_slices = [&]<int kWarpsPerItem>() {
    switch (c.slices) {
      case 1:
        f(split_combine_kernel<Element, Partial, 1, kWarpsPerItem>);
        break;
      case 2:
        f(split_combine_kernel<Element, Partial, 2, kWarpsPerItem>);
        break;
      default:
        f(split_combine_kernel<Element, Partial, 4, kWarpsPerItem>);
        break;
    }
  };
  if (c.warps_per_item == 1)
    by_slices.template operator()<1>();
  else
    by_slices.template operator()<kCombineWarps>();
}
template <class Element, class F>
void with_combine_kernel(PartialFormat format, const CombineShape& c, F&& f) {
  if (format == PartialFormat::out_dtype)
    with_combine_kernel<Element, Element>(c, f);
  else
    with_combine_kernel<Element, float>(c, f);
}
template <class F>
void with_combine_kernel(DType dtype, PartialFormat format, const CombineShape& c, F&& f) {
  if (dtype == DType::bf16)
    with_combine_kernel<__nv_bfloat16>(format, c, f);
  else if (dtype == DType::f16)
    with_combine_kernel<__half>(format, c, f);
  else
    throw UsageError(concat("split combine: unsupported dtype ", dtype_name(dtype)));
}

}  // namespace

void launch_split_schedule(const int* seqlens, int b, const SplitSchedule& s, cudaStream_t stream) {
  CUTELAB_REQUIRE(b >= 1 && b <= kScheduleMaxBatch, "split schedule: b = ", b, " outside [1, ", kScheduleMaxBatch, "]");
  CUTELAB_REQUIRE(s.num_parts >= 1 && s.num_parts < kScheduleThreads, "split schedule: num_parts = ", s.num_parts);
  LaunchShape shape;
  shape.block = dim3(kScheduleThreads, 1, 1);
  cutelab::launch(split_schedule_kernel, shape, stream, seqlens, b, s);
}

void launch_split_combine(const CombineArgs& a, cudaStream_t stream) {
  const int rows = a.s_q * (a.h_q / a.h_kv);
  const CombineShape c = combine_shape(a.b, a.s_q, a.h_q, a.pieces_hint);
  const int items_per_block = kCombineWarps / c.warps_per_item;
  LaunchShape shape;
  shape.grid = dim3(a.b, (a.h_kv * rows * c.slices + items_per_block - 1) / items_per_block);
  shape.block = dim3(kCombineWarps * 32, 1, 1);
  shape.programmatic_dependent_launch = true;
  with_combine_kernel(a.dtype, a.partials.format, c,
                      [&](auto kernel) { cutelab::launch(kernel, shape, stream, a); });
}

std::vector<FunctionResources> split_kernel_resources(DType dtype, int b, int s_q, int h_q, int pieces_hint,
                                                      PartialFormat format) {
  const CombineShape c = combine_shape(b, s_q, h_q, pieces_hint);
  const void* combine = nullptr;
  with_combine_kernel(dtype == DType::f16 ? DType::f16 : DType::bf16, format, c,
                      [&](auto kernel) { combine = reinterpret_cast<const void*>(kernel); });
  return {read_resources(reinterpret_cast<const void*>(&split_schedule_kernel), "split_schedule",
                         kScheduleThreads, 0),
          read_resources(combine,
                         concat("split_combine (", c.slices, " column slices, ", c.warps_per_item,
                                c.warps_per_item == 1 ? " warp" : " warps", " per row slice",
                                c.wide ? concat(", up to ", kWideGroup, " pieces a warp at once") : std::string(),
                                format == PartialFormat::out_dtype ? ", partial rows in out's dtype)" : ")"),
                         kCombineWarps * 32, 0)};
}

}  // namespace cutelab::mla
