#include "cutelab/runtime/ceilings.hpp"

#include <cublas_v2.h>

#include <algorithm>

#include <nlohmann/json.hpp>

#include "ceilings_kernels.hpp"
#include "cuda_raii.hpp"
#include "cutelab/core/error.hpp"
#include "cutelab/core/math.hpp"
#include "cutelab/runtime/cache.hpp"
#include "cutelab/runtime/tensor.hpp"
#include "cutelab/runtime/timing.hpp"
#include "fileutil.hpp"

namespace cutelab {
namespace {

constexpr int kGemmSize = 8192;
constexpr std::size_t kMiB = std::size_t{1} << 20;
constexpr std::size_t kGiB = std::size_t{1} << 30;

void check_cublas(cublasStatus_t st, const char* expr) {
  if (st != CUBLAS_STATUS_SUCCESS)
    throw Error(concat(expr, ": ", cublasGetStatusName(st), " (", cublasGetStatusString(st), ")"));
}
#define CUTELAB_CUBLAS(expr) check_cublas((expr), #expr)

class CublasHandle {
 public:
  CublasHandle() { CUTELAB_CUBLAS(cublasCreate(&h_)); }
  ~CublasHandle() { cublasDestroy(h_); }
  CublasHandle(const CublasHandle&) = delete;
  CublasHandle& operator=(const CublasHandle&) = delete;
  [[nodiscard]] cublasHandle_t get() const noexcept { return h_; }

 private:
  cublasHandle_t h_ = nullptr;
};

std::string cache_key(const std::string& device, const std::string& driver) { return device + "|" + driver; }

ClockSummary clocks_from_json(const nlohmann::json& j) {
  ClockSummary c;
  if (!j.is_object()) return c;
  c.available = j.value("available", false);
  c.why_unavailable = j.value("why", std::string());
  c.samples = j.value("samples", 0);
  c.sm_mhz_min = j.value("sm_mhz_min", 0);
  c.sm_mhz_median = j.value("sm_mhz_median", 0);
  c.sm_mhz_max = j.value("sm_mhz_max", 0);
  c.mem_mhz_median = j.value("mem_mhz_median", 0);
  c.sm_max_mhz = j.value("sm_max_mhz", 0);
  c.power_w_max = j.value("power_w_max", 0.0);
  c.temperature_c_max = j.value("temperature_c_max", 0);
  c.reason_samples = j.value("reason_samples", 0);
  c.slowed_samples = j.value("slowed_samples", 0);
  c.slowdowns_seen = j.value("slowdown_bits", std::uint64_t{0});
  return c;
}

TensorView flat_view(void* data, DType t, std::size_t count) {
  return TensorView{data, t, {static_cast<std::int64_t>(count)}, {1}};
}

double gbs(std::size_t bytes, double us) { return static_cast<double>(bytes) / (us * 1e-6) / 1e9; }

// The read ceiling kernel's grid: every SM full of its blocks.
int read_ceiling_grid(const DeviceInfo& dev) {
  return std::max(1, dev.sm_count * std::max(1, dev.max_threads_per_sm / detail::kCeilingBlock));
}

}  // namespace

nlohmann::json Ceilings::to_json() const {
  return {{"copy_gbs", copy_gbs},       {"read_gbs", read_gbs}, {"gemm_bf16_tflops", gemm_bf16_tflops},
          {"gemm_size", gemm_size},     {"device", device},     {"driver", driver},
          {"measured_at", measured_at}, {"clocks", clocks.to_json()}};
}

Ceilings Ceilings::from_json(const nlohmann::json& j) {
  if (!j.is_object()) throw Error("ceilings: expected a JSON object");
  Ceilings c;
  try {
    c.copy_gbs = j.at("copy_gbs").get<double>();
    c.read_gbs = j.value("read_gbs", 0.0);
    c.gemm_bf16_tflops = j.at("gemm_bf16_tflops").get<double>();
    c.gemm_size = j.value("gemm_size", 0);
    c.device = j.at("device").get<std::string>();
    c.driver = j.value("driver", std::string());
    c.measured_at = j.value("measured_at", std::string());
    c.clocks = clocks_from_json(j.value("clocks", nlohmann::json()));
  } catch (const nlohmann::json::exception& e) {
    throw Error(concat("ceilings: ", e.what()));
  }
  return c;
}

Ceilings measure_ceilings(const DeviceInfo& dev, const ProgressFn& progress) {
  CUTELAB_REQUIRE(dev.present, "measure_ceilings: no CUDA GPU found");
  const auto say = [&](const std::string& m) { if (progress) progress(m); };
  CUTELAB_CUDA(cudaSetDevice(dev.index));
  std::size_t free_bytes = 0, total_bytes = 0;
  CUTELAB_CUDA(cudaMemGetInfo(&free_bytes, &total_bytes));

  // At least 8x L2 and 1 GiB per buffer, so the stream runs from DRAM; two buffers must fit.
  const std::size_t want = std::max<std::size_t>(kGiB, 8 * dev.l2_bytes);
  const std::size_t bytes = round_up<std::size_t>(std::min(want, free_bytes / 3), kMiB);
  CUTELAB_REQUIRE(bytes >= 4 * dev.l2_bytes && bytes >= 64 * kMiB, "measure_ceilings: only ", free_bytes / kMiB,
                  " MiB free, too little for a stream well beyond L2 (", dev.l2_bytes / kMiB, " MiB)");

  Ceilings c;
  c.device = dev.name;
  c.driver = dev.driver();
  c.gemm_size = kGemmSize;
  detail::Stream stream = detail::make_stream();
  ClockSampler sampler(dev.index);
  sampler.start();

  TimingOptions stream_opts;
  stream_opts.warmup = 3;
  stream_opts.max_seconds = 3.0;
  stream_opts.flush_l2 = false;  // the buffers are many times L2 already
  const int grid = read_ceiling_grid(dev);
  {
    DeviceBuffer src(bytes), dst(bytes);
    fill_uniform(flat_view(src.data(), DType::f32, bytes / 4), 0xC0FFEE, -1.0, 1.0, stream.get());
    fill_constant(flat_view(dst.data(), DType::f32, bytes / 4), 0.0, stream.get());

    say(concat("ceilings: copying ", bytes / kMiB, " MiB (kernel)"));
    const TimingStats kernel = time_launch(
        [&](cudaStream_t s) { detail::launch_copy_ceiling(src.data(), dst.data(), bytes, grid, s); }, dev,
        stream_opts, stream.get());
    say(concat("ceilings: copying ", bytes / kMiB, " MiB (cudaMemcpyAsync)"));
    const TimingStats copy_api = time_launch(
        [&](cudaStream_t s) { CUTELAB_CUDA(cudaMemcpyAsync(dst.data(), src.data(), bytes, cudaMemcpyDeviceToDevice, s)); },
        dev, stream_opts, stream.get());
    // Bytes read plus bytes written, over the faster of the two.
    c.copy_gbs = gbs(2 * bytes, std::min(kernel.median_us, copy_api.median_us));
    say(concat("ceilings: copy ", static_cast<int>(gbs(2 * bytes, kernel.median_us)), " GB/s (kernel), ",
               static_cast<int>(gbs(2 * bytes, copy_api.median_us)), " GB/s (cudaMemcpyAsync)"));

    DeviceBuffer sum(sizeof(unsigned long long));
    say(concat("ceilings: reading ", bytes / kMiB, " MiB"));
    const TimingStats read = time_launch(
        [&](cudaStream_t s) {
          detail::launch_read_ceiling(src.data(), bytes, static_cast<unsigned long long*>(sum.data()), grid, s);
        },
        dev, stream_opts, stream.get());
    c.read_gbs = gbs(bytes, read.median_us);
    say(concat("ceilings: read ", static_cast<int>(c.read_gbs), " GB/s"));
  }

  {
    const std::size_t n = kGemmSize;
    DeviceBuffer a(n * n * 2), b(n * n * 2), out(n * n * 2), workspace(32 * kMiB);
    // Random operands: tensor-core power, and so clocks, depend on the data (never zeros).
    fill_uniform(flat_view(a.data(), DType::bf16, n * n), 0xA11CE, -1.0, 1.0, stream.get());
    fill_uniform(flat_view(b.data(), DType::bf16, n * n), 0xB0B, -1.0, 1.0, stream.get());
    CublasHandle handle;
    // The stream first: cublasSetStream resets the workspace to cuBLAS's own pool. A fixed
    // workspace keeps cuBLAS from allocating inside graph capture.
    CUTELAB_CUBLAS(cublasSetStream(handle.get(), stream.get()));
    CUTELAB_CUBLAS(cublasSetWorkspace(handle.get(), workspace.data(), workspace.bytes()));
    const float alpha = 1.0f, beta = 0.0f;
    const int dim = kGemmSize;
    say(concat("ceilings: cuBLAS bf16 GEMM ", dim, "^3"));
    TimingOptions gemm_opts;
    gemm_opts.warmup = 3;
    gemm_opts.max_seconds = 3.0;
    const TimingStats gemm = time_launch(
        [&](cudaStream_t) {  // time_launch runs on stream.get(), which the handle holds
          // Column-major C = A^T B, both operands K-major ("TN"), fp32 accumulate.
          CUTELAB_CUBLAS(cublasGemmEx(handle.get(), CUBLAS_OP_T, CUBLAS_OP_N, dim, dim, dim, &alpha, a.data(),
                                      CUDA_R_16BF, dim, b.data(), CUDA_R_16BF, dim, &beta, out.data(), CUDA_R_16BF,
                                      dim, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
        },
        dev, gemm_opts, stream.get());
    c.gemm_bf16_tflops = 2.0 * static_cast<double>(n) * n * n / (gemm.median_us * 1e-6) / 1e12;
    say(concat("ceilings: GEMM ", static_cast<int>(c.gemm_bf16_tflops), " TFLOP/s"));
  }
  c.clocks = sampler.stop();
  c.measured_at = utc_timestamp();
  return c;
}

nlohmann::json ReadFloor::to_json() const {
  nlohmann::json j = {{"bytes", bytes}, {"method", method}};
  j["timing"] = stats ? stats->to_json() : nlohmann::json(nullptr);
  if (!skipped.empty()) j["skipped"] = skipped;
  return j;
}

ReadFloor measure_read_floor(double bytes, const DeviceInfo& dev, const TimingOptions& options, cudaStream_t stream) {
  CUTELAB_REQUIRE(bytes >= 16, "read floor: ", bytes, " bytes, expected at least 16");
  ReadFloor f;
  // The read kernel takes whole 16-byte vectors: at most 15 bytes fewer than the case's.
  const std::size_t read = static_cast<std::size_t>(bytes) / 16 * 16;
  f.bytes = static_cast<double>(read);
  std::size_t free_bytes = 0, total_bytes = 0;
  CUTELAB_CUDA(cudaMemGetInfo(&free_bytes, &total_bytes));
  // Bulk copies where the device has them: 3-5% faster than the 16-byte loads at 290-580 MiB on the H200
  // (forty-sixth session's probe), so the tighter floor. Four 48 KiB stages a CTA, one CTA an SM.
  const int chunk = static_cast<int>(std::min<std::size_t>(48 * 1024, dev.smem_per_block_optin / detail::kBulkStages / 16 * 16));
  const bool bulk = dev.cc_major >= 9 && dev.sm_count > 0 && chunk >= 16 * 1024;
  f.method = bulk ? concat("bulk copies (cp.async.bulk), ", detail::kBulkStages, " x ", chunk / 1024, " KiB a CTA, one CTA an SM")
                  : "16-byte loads, the read ceiling's kernel";
  try {
    DeviceBuffer src(read), sum(sizeof(unsigned long long));
    // Written once: untouched allocations may read faster than data does.
    fill_constant(flat_view(src.data(), DType::u8, read), 1.0, stream);
    auto* total = static_cast<unsigned long long*>(sum.data());
    if (bulk) {
      detail::prepare_bulk_read(chunk);
      f.stats = time_launch(
          [&](cudaStream_t s) { detail::launch_bulk_read(src.data(), read, chunk, dev.sm_count, s); }, dev,
          options, stream);
    } else {
      const int grid = read_ceiling_grid(dev);
      f.stats = time_launch([&](cudaStream_t s) { detail::launch_read_ceiling(src.data(), read, total, grid, s); },
                            dev, options, stream);
    }
  } catch (const CudaError& e) {
    if (e.sticky()) throw;
    (void)cudaGetLastError();
    f.stats.reset();
    f.skipped = e.code() == cudaErrorMemoryAllocation
                    ? concat("a second copy of the case's ", read / kMiB, " MiB does not fit (", free_bytes / kMiB,
                             " MiB free)")
                    : concat("the read failed: ", e.message());
  }
  return f;
}

std::optional<Ceilings> load_cached_ceilings(const DeviceInfo& dev, const std::string& cache_dir) {
  const std::string path = cache_dir + "/ceilings.json";
  try {
    std::string text;
    if (!detail::read_file(path, &text)) return std::nullopt;
    const nlohmann::json doc = nlohmann::json::parse(text);
    const std::string key = cache_key(dev.name, dev.driver());
    if (!doc.is_object() || !doc.contains("entries") || !doc.at("entries").contains(key)) return std::nullopt;
    return Ceilings::from_json(doc.at("entries").at(key));
  } catch (const std::exception&) {
    return std::nullopt;  // an unreadable cache only means measuring again
  }
}

void store_cached_ceilings(const Ceilings& c, const std::string& cache_dir) {
  const std::string path = cache_dir + "/ceilings.json";
  detail::FileLock lock(path + ".lock");
  nlohmann::json doc;
  try {
    std::string text;
    if (detail::read_file(path, &text)) doc = nlohmann::json::parse(text);
  } catch (const std::exception&) {
    doc = nullptr;  // rebuilt below
  }
  if (!doc.is_object() || !doc.contains("entries") || !doc.at("entries").is_object())
    doc = {{"schema", 1}, {"entries", nlohmann::json::object()}};
  doc["entries"][cache_key(c.device, c.driver)] = c.to_json();
  write_json_atomic(path, doc);
}

}  // namespace cutelab
