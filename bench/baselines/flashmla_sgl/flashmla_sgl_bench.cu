// FlashMLA's dense bf16 decode (SM90) as compiled into PyPI's sgl-kernel wheel, launched from its own
// machine code and timed with the lab's runtime (README.md beside this says why and how).
//
// The wheel's library links a PyTorch of another version than the lent machine's, so it cannot be
// loaded as an extension. Its fatbins are loaded with the driver instead and the two kernels a decode
// step needs are launched directly: the schedule (`get_mla_metadata_kernel`) once, then the main kernel
// (`sm90::flash_fwd_splitkv_mla_kernel<Traits<bf16>, TmaParams<...>>`), whose two by-value arguments are
// built here byte for byte: the parameter struct (264 bytes) and the three TMA descriptors with their
// shapes (768 bytes). The sizes are checked against the kernel's own parameter table at run time. The
// split combine is not launched: the figures are the main kernel's, and only requests the schedule
// leaves unsplit (their output written by the main kernel itself) are checked, against the lab's fp32
// GPU reference (mla_decode/reference).

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <numeric>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include <cutlass/numeric_types.h>
#include <CLI/CLI.hpp>
#include <cute/tensor.hpp>  // before the atoms below, which need it

#include <cute/atom/copy_traits_sm90_tma.hpp>
#include <cute/atom/mma_traits_sm90_gmma.hpp>

#include "cutelab/core/dtype.hpp"
#include "cutelab/core/error.hpp"
#include "cutelab/runtime/device.hpp"
#include "cutelab/runtime/tensor.hpp"
#include "cutelab/runtime/timing.hpp"
#include "mla_decode/common/args.hpp"
#include "mla_decode/reference/reference.hpp"

namespace {

using cutelab::Error;
using Element = cutlass::bfloat16_t;
constexpr int kPage = 64, kDimQK = 576, kDimV = 512, kBlockM = 64;
// The schedule's per-piece cost in blocks, as the wheel's API passes it.
constexpr int kFixedOverheadBlocks = 5;
constexpr std::size_t kMainSmemBytes = 230816;  // the kernel's dynamic shared memory (its SharedMemoryPlan)
constexpr const char* kMainName = "sm9028flash_fwd_splitkv_mla_kernelI6TraitsIN7cutlass10bfloat16_tEE";
constexpr const char* kMetaName = "_Z23get_mla_metadata_kernel25GetDecodingMetadataParams";

void check(CUresult r, const char* what) {
  if (r == CUDA_SUCCESS) return;
  const char* name = nullptr;
  cuGetErrorName(r, &name);
  throw Error(std::string(what) + ": " + (name ? name : "unknown CUresult"));
}

// The kernel's first argument, field for field (the wheel's FlashMLA of 2025-09: `DecodingParams`).
struct DecodingParams {
  int b, s_q, q_seq_per_hk, d, d_v, h_q, h_k, num_blocks, q_head_per_hk;
  bool is_causal;
  float scale_softmax, scale_softmax_log2;
  int topk;
  void *q_ptr, *k_ptr, *o_ptr, *softmax_lse_ptr;
  int* indices_ptr;
  int64_t q_batch_stride, k_batch_stride, o_batch_stride, q_row_stride, k_row_stride, o_row_stride,
      q_head_stride, k_head_stride, o_head_stride, indices_batch_stride, indices_row_stride;
  int* block_table;
  int64_t block_table_batch_stride;
  int page_block_size;
  int* seqlens_k_ptr;
  int* tile_scheduler_metadata_ptr;
  int num_sm_parts;
  int* num_splits_ptr;
  int total_num_splits;
  void *softmax_lseaccum_ptr, *oaccum_ptr;
};
static_assert(sizeof(DecodingParams) == 264);

struct MetadataParams {  // get_mla_metadata_kernel's argument
  int *seqlens_k_ptr, *tile_scheduler_metadata_ptr, *num_splits_ptr;
  int batch_size, block_size_n, fixed_overhead_num_blocks, num_sm_parts, topk;
};
static_assert(sizeof(MetadataParams) == 48);
constexpr int kSchedInts = 8;  // ints a part's schedule entry takes

// The kernel's second argument: (shape, TMA copy) for Q, the KV pages and O. The wheel was compiled with
// CUDA 12, whose CUtensorMap is 64-byte aligned (CUDA 13's headers align it to 128), so the CuTe copies
// made here are not laid out as the kernel reads them; their descriptors (all a TMA copy holds besides
// empty types) and the shapes are placed where the kernel's 768-byte argument has them.
struct alignas(64) TmaArgs {
  unsigned char bytes[768];
};
constexpr std::size_t kShapeQ = 0, kDescQ = 64, kShapeK = 256, kDescK = 320, kShapeO = 512, kDescO = 576;

template <class Shape>
void put_shape(TmaArgs& a, std::size_t at, const Shape& shape) {
  static_assert(std::is_trivially_copyable_v<Shape>);
  std::memcpy(a.bytes + at, &shape, sizeof(Shape));
}
template <class Copy>
void put_descriptor(TmaArgs& a, std::size_t at, const Copy& copy) {
  static_assert(sizeof(*copy.get_tma_descriptor()) == 128);
  std::memcpy(a.bytes + at, copy.get_tma_descriptor(), 128);
}

TmaArgs make_tma_args(const DecodingParams& p) {
  using namespace cute;
  // A TMA copy over one of the kernel's (rows, columns, h_k, b) views: unit column stride, K-major 128-byte
  // swizzled tiles of `tile` elements.
  const auto tma_over = [](auto op, void* ptr, auto shape, int64_t row, int64_t head, int64_t batch,
                           auto tile) {
    return make_tma_copy(op,
                         make_tensor(make_gmem_ptr(static_cast<Element*>(ptr)),
                                     make_layout(shape, make_stride(row, _1{}, head, batch))),
                         tile_to_shape(GMMA::Layout_K_SW128_Atom<Element>{}, tile));
  };
  auto shape_q = make_shape(p.q_seq_per_hk, p.d, p.h_k, p.b);
  auto shape_k = make_shape(Int<kPage>{}, Int<kDimQK>{}, p.h_k, p.num_blocks);
  auto shape_o = make_shape(p.q_seq_per_hk, p.d_v, p.h_k, p.b);
  auto tma_q = tma_over(SM90_TMA_LOAD{}, p.q_ptr, shape_q, p.q_row_stride, p.q_head_stride, p.q_batch_stride,
                        Shape<Int<kBlockM>, Int<kDimQK>>{});
  auto tma_k = tma_over(SM90_TMA_LOAD{}, p.k_ptr, shape_k, p.k_row_stride, p.k_head_stride, p.k_batch_stride,
                        Shape<Int<kPage>, Int<64>>{});
  auto tma_o = tma_over(SM90_TMA_STORE{}, p.o_ptr, shape_o, p.o_row_stride, p.o_head_stride, p.o_batch_stride,
                        Shape<Int<kBlockM>, Int<kDimV>>{});
  static_assert(sizeof(shape_q) == 16 && sizeof(shape_k) == 8 && sizeof(shape_o) == 16);  // the ints only
  TmaArgs a{};
  put_shape(a, kShapeQ, shape_q);
  put_descriptor(a, kDescQ, tma_q);
  put_shape(a, kShapeK, shape_k);
  put_descriptor(a, kDescK, tma_k);
  put_shape(a, kShapeO, shape_o);
  put_descriptor(a, kDescO, tma_o);
  return a;
}

// The sizes of a kernel's arguments, from the driver (CUDA 12.4+).
std::vector<std::size_t> param_sizes(CUfunction f) {
  std::vector<std::size_t> sizes;
  for (unsigned i = 0;; ++i) {
    std::size_t offset = 0, size = 0;
    const CUresult r = cuFuncGetParamInfo(f, i, &offset, &size);
    if (r == CUDA_ERROR_INVALID_VALUE) break;  // past the last argument
    check(r, "cuFuncGetParamInfo");
    sizes.push_back(size);
  }
  return sizes;
}

std::string sizes_text(const std::vector<std::size_t>& sizes) {
  std::string text = "(";
  for (std::size_t s : sizes) text += (text.size() > 1 ? ", " : "") + std::to_string(s);
  return text + ")";
}

struct Kernels {
  std::vector<CUmodule> modules;
  CUfunction main = nullptr, meta = nullptr;
};

// Every fatbin embedded in the library (a 16-byte header: magic 0xBA55ED50, version 1, header size 16,
// payload size), loaded for this GPU; the two kernels are found by name.
Kernels load_kernels(const std::string& so_path) {
  std::ifstream in(so_path, std::ios::binary);
  if (!in) throw Error("cannot read " + so_path + " (run CUTELAB_WITH_FLASHMLA_SGL=1 scripts/bootstrap)");
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  Kernels k;
  for (std::size_t at = 0; at + 16 <= bytes.size(); at += 8) {
    std::uint32_t magic;
    std::uint16_t version, header;
    std::uint64_t size;
    std::memcpy(&magic, &bytes[at], 4);
    if (magic != 0xBA55ED50u) continue;
    std::memcpy(&version, &bytes[at + 4], 2);
    std::memcpy(&header, &bytes[at + 6], 2);
    std::memcpy(&size, &bytes[at + 8], 8);
    if (version != 1 || header != 16 || size > bytes.size() - at - 16) continue;
    CUmodule m = nullptr;
    if (cuModuleLoadFatBinary(&m, &bytes[at]) != CUDA_SUCCESS) continue;  // no sm_90a code in it
    k.modules.push_back(m);
    unsigned count = 0;
    check(cuModuleGetFunctionCount(&count, m), "cuModuleGetFunctionCount");
    std::vector<CUfunction> fs(count);
    check(cuModuleEnumerateFunctions(fs.data(), count, m), "cuModuleEnumerateFunctions");
    for (CUfunction f : fs) {
      const char* name = nullptr;
      check(cuFuncGetName(&name, f), "cuFuncGetName");
      if (std::strstr(name, kMainName)) k.main = f;
      if (std::strcmp(name, kMetaName) == 0) k.meta = f;
    }
    at += 16 + size - 8;
  }
  if (!k.main || !k.meta)
    throw Error(so_path + ": the dense bf16 decode kernel or its schedule kernel not found");
  return k;
}

int run(int argc, char** argv) {
  CLI::App app{"FlashMLA's dense bf16 decode from sgl-kernel's wheel, main kernel timed the lab's way"};
  std::string so;
  int b = 128, h_q = 128, t = 4096, min_samples = 20, seed = 1, kv_pool = 0;
  const int s_q = 1;  // one query token a request: no causal mask to set up
  double max_time = 2.0;
  bool once = false;
  app.add_option("--so", so, "sgl-kernel's flashmla_ops.abi3.so")->required();
  app.add_option("-b", b, "batch")->check(CLI::Range(1, 4096));
  app.add_option("--hq", h_q, "query heads (one KV head)")->check(CLI::Range(1, 128));
  app.add_option("-t", t, "keys a request")->check(CLI::Range(1, 131072));
  app.add_option("--min-samples", min_samples)->check(CLI::PositiveNumber);
  app.add_option("--max-time", max_time)->check(CLI::NonNegativeNumber);
  app.add_option("--seed", seed);
  app.add_option("--kv-pool", kv_pool,
                 "0: a page each; N: every request's pages taken in turn from N pages (the KV stays in L2), "
                 "as the lab's kv-pool problem parameter")
      ->check(CLI::NonNegativeNumber);
  app.add_flag("--once", once, "one launch of the main kernel, no timing (for Nsight Compute)");
  CLI11_PARSE(app, argc, argv);

  CUTELAB_CUDA(cudaFree(nullptr));  // the runtime's primary context, current for the driver calls
  const Kernels k = load_kernels(so);
  const auto main_sizes = param_sizes(k.main), meta_sizes = param_sizes(k.meta);

  if (main_sizes != std::vector<std::size_t>{sizeof(DecodingParams), sizeof(TmaArgs)} ||
      meta_sizes != std::vector<std::size_t>{sizeof(MetadataParams)})
    throw Error("the wheel's kernels take arguments of " + sizes_text(main_sizes) + " and " +
                sizes_text(meta_sizes) + " bytes; this harness builds " +
                std::to_string(sizeof(DecodingParams)) + ", " + std::to_string(sizeof(TmaArgs)) + " and " +
                std::to_string(sizeof(MetadataParams)));

  int device = 0;
  CUTELAB_CUDA(cudaGetDevice(&device));
  const cutelab::DeviceInfo dev = cutelab::query_device(device, cutelab::DeviceDb::load_default());
  const int sms = dev.sm_count;

  const int pages = (t + kPage - 1) / kPage,
            num_blocks = kv_pool > 0 ? std::min(kv_pool, b * pages) : b * pages;
  const int q_seq_per_hk = s_q * h_q, m_blocks = (q_seq_per_hk + kBlockM - 1) / kBlockM;
  const int num_sm_parts = std::max(sms / m_blocks, 1);
  using cutelab::DType;
  // The lab's shapes (MlaDecodeArgs; with one KV head and s_q = 1 the same bytes as the kernel's
  // [b, q_seq_per_hk, h_k, d] views, whose strides go into the parameters below).
  cutelab::DeviceTensor q(DType::bf16, {b, s_q, h_q, kDimQK}),
      kv(DType::bf16, {num_blocks, kPage, 1, kDimQK});
  cutelab::DeviceTensor out(DType::bf16, {b, s_q, h_q, kDimV}), lse(DType::f32, {b, h_q, s_q});
  cutelab::DeviceTensor o_accum(DType::f32, {b + num_sm_parts, 1, q_seq_per_hk, kDimV});
  cutelab::DeviceTensor lse_accum(DType::f32, {b + num_sm_parts, 1, q_seq_per_hk});
  cutelab::fill_uniform(q.view(), seed, -1, 1);
  cutelab::fill_uniform(kv.view(), seed + 1, -1, 1);
  std::vector<int> ids(num_blocks);  // each request's pages scattered over the cache
  std::iota(ids.begin(), ids.end(), 0);
  std::shuffle(ids.begin(), ids.end(), std::mt19937(seed));
  std::vector<int> table(std::size_t(b) * pages);  // with a pool the ids repeat
  for (std::size_t i = 0; i < table.size(); ++i) table[i] = ids[i % ids.size()];
  const auto block_table = cutelab::DeviceTensor::from_host(DType::i32, {b, pages}, table);
  const auto seqlens = cutelab::DeviceTensor::from_host(DType::i32, {b}, std::vector<int>(b, t));
  cutelab::DeviceTensor sched(DType::i32, {num_sm_parts, kSchedInts}), num_splits(DType::i32, {b + 1});

  MetadataParams mp{seqlens.as<int>(),
                    sched.as<int>(),
                    num_splits.as<int>(),
                    b,
                    kPage,
                    kFixedOverheadBlocks,
                    num_sm_parts,
                    -1};
  void* meta_args[] = {&mp};
  const unsigned meta_smem = sizeof(int) * (5 * b + 1);
  check(cuFuncSetAttribute(k.meta, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, meta_smem), "meta smem");
  check(cuLaunchKernel(k.meta, 1, 1, 1, 32, 1, 1, meta_smem, nullptr, meta_args, nullptr), "schedule launch");
  CUTELAB_CUDA(cudaDeviceSynchronize());

  DecodingParams p{};
  p.b = b, p.s_q = s_q, p.q_seq_per_hk = q_seq_per_hk, p.d = kDimQK, p.d_v = kDimV, p.h_q = h_q, p.h_k = 1;
  p.num_blocks = num_blocks, p.q_head_per_hk = h_q, p.is_causal = false, p.topk = -1;
  p.scale_softmax = float(1.0 / std::sqrt(double(kDimQK)));
  p.scale_softmax_log2 = float(p.scale_softmax * 1.4426950408889634);
  p.q_ptr = q.data(), p.k_ptr = kv.data(), p.o_ptr = out.data(), p.softmax_lse_ptr = lse.data();
  p.q_batch_stride = int64_t(q_seq_per_hk) * kDimQK, p.q_row_stride = kDimQK, p.q_head_stride = kDimQK;
  p.k_batch_stride = int64_t(kPage) * kDimQK, p.k_row_stride = kDimQK, p.k_head_stride = kDimQK;
  p.o_batch_stride = int64_t(q_seq_per_hk) * kDimV, p.o_row_stride = kDimV, p.o_head_stride = kDimV;
  p.block_table = block_table.as<int>(), p.block_table_batch_stride = pages, p.page_block_size = kPage;
  p.seqlens_k_ptr = seqlens.as<int>(), p.tile_scheduler_metadata_ptr = sched.as<int>();
  p.num_sm_parts = num_sm_parts, p.num_splits_ptr = num_splits.as<int>(),
  p.total_num_splits = b + num_sm_parts;
  p.softmax_lseaccum_ptr = lse_accum.data(), p.oaccum_ptr = o_accum.data();
  TmaArgs tma = make_tma_args(p);
  cudaStream_t stream = nullptr;
  CUTELAB_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));

  check(cuFuncSetAttribute(k.main, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, kMainSmemBytes),
        "main smem");
  const auto launch_main = [&](cudaStream_t s) {
    void* args[] = {&p, &tma};
    CUlaunchAttribute attr{};
    attr.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    attr.value.programmaticStreamSerializationAllowed = 1;
    CUlaunchConfig cfg{};
    cfg.gridDimX = m_blocks, cfg.gridDimY = 1, cfg.gridDimZ = num_sm_parts;
    cfg.blockDimX = 256, cfg.blockDimY = 1, cfg.blockDimZ = 1;
    cfg.sharedMemBytes = kMainSmemBytes, cfg.hStream = s, cfg.attrs = &attr, cfg.numAttrs = 1;
    check(cuLaunchKernelEx(&cfg, k.main, args, nullptr), "main launch");
  };
  CUTELAB_CUDA(cudaDeviceSynchronize());  // inputs filled on the legacy stream
  launch_main(stream);
  CUTELAB_CUDA(cudaStreamSynchronize(stream));
  if (once) {
    std::printf("flashmla_sgl b%d h%d t%d: one launch, %d SM parts\n", b, h_q, t, num_sm_parts);
    return 0;
  }

  // Rows of the requests the schedule leaves whole (the main kernel writes those itself), against the
  // lab's fp32 reference: the layouts are the lab's ([b, s_q, h_q, 576] q, [blocks, 64, 1, 576] cache).
  cutelab::mla::MlaDecodeArgs args{q.view(),   kv.view(),  block_table.view(), seqlens.view(),
                                   out.view(), lse.view(), p.scale_softmax};
  cutelab::DeviceTensor ref_out(DType::f32, {b, s_q, h_q, kDimV}), ref_lse(DType::f32, {b, h_q, s_q});
  cutelab::mla::reference_gpu(args, ref_out.as<float>(), ref_lse.as<float>());
  const auto splits = cutelab::copy_to_host<int>(num_splits.view());
  const auto got = cutelab::copy_to_host_float(out.view()),
             want = cutelab::copy_to_host_float(ref_out.view());
  const std::size_t row_values = std::size_t(q_seq_per_hk) * kDimV;
  double err = 0, norm = 0;
  int whole = 0;
  for (int r = 0; r < b; ++r) {
    if (splits[r + 1] - splits[r] != 1) continue;
    ++whole;
    for (std::size_t i = r * row_values; i < (r + 1) * row_values; ++i) {
      err += (double(got[i]) - want[i]) * (double(got[i]) - want[i]);
      norm += double(want[i]) * want[i];
    }
  }
  const double rel_l2 = whole ? std::sqrt(err / norm) : 0;
  if (!(rel_l2 < 1e-2))
    throw Error("the " + std::to_string(whole) + " whole requests' outputs: relative L2 " +
                std::to_string(rel_l2) +
                " against the fp32 reference (the arguments are not what the kernel expects)");

  cutelab::TimingOptions opts;
  opts.min_samples = min_samples;
  opts.max_seconds = max_time;
  const cutelab::TimingStats st = cutelab::time_launch(launch_main, dev, opts, stream);
  const double flops = 2.0 * b * q_seq_per_hk * double(t) * (kDimQK + kDimV);
  std::printf(
      "flashmla_sgl b%d s%d h%d t%d%s main kernel: %.2f us median (p10 %.2f, p90 %.2f, n %d, %s), "
      "%.0f TFLOP/s; %d SM parts; %d whole requests checked, rel L2 %.2e\n",
      b, s_q, h_q, t, kv_pool > 0 ? (" kv-pool " + std::to_string(num_blocks)).c_str() : "", st.median_us,
      st.p10_us, st.p90_us, st.n, st.stop_reason.c_str(), flops / st.median_us * 1e-6, num_sm_parts, whole,
      rel_l2);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "flashmla_sgl_bench: %s\n", e.what());
    return 1;
  }
}
