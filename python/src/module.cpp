// cutelab._C: the lab's C++ API for Python. Arrays come in as nanobind ndarrays (DLPack capsules
// or anything exporting __dlpack__ / the buffer protocol); the Python layer (cutelab/) picks the
// stream, makes the capsules without synchronising and allocates outputs with the caller's framework.

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <nlohmann/json.hpp>

#include "cutelab/core/error.hpp"
#include "cutelab/runtime/check.hpp"
#include "cutelab/runtime/clocks.hpp"
#include "cutelab/runtime/device.hpp"
#include "cutelab/runtime/energy.hpp"
#include "cutelab/runtime/registry.hpp"
#include "cutelab/runtime/tensor.hpp"
#include "cutelab/runtime/timing.hpp"
#include "mla_decode/common/decoder.hpp"
#include "mla_decode/common/workspace.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace cutelab::python {
namespace {

using Array = nb::ndarray<>;
// What the extension hands out: an object with __dlpack__ / __dlpack_device__ any framework imports.
using ExportedArray = nb::ndarray<nb::array_api>;
constexpr int kDlCpu = 1, kDlCuda = 2, kDlCudaHost = 3, kDlCudaManaged = 13;

std::string device_text(int type, int id) {
  switch (type) {
    case kDlCpu:
      return "cpu";
    case kDlCuda:
      return concat("cuda:", id);
    case kDlCudaHost:
      return "cuda pinned host memory";
    case kDlCudaManaged:
      return concat("cuda managed memory (device ", id, ")");
    default:
      return concat("DLPack device type ", type);
  }
}

DType dtype_of(const Array& a, const char* name) {
  const nb::dlpack::dtype t = a.dtype();
  using Code = nb::dlpack::dtype_code;
  if (t.lanes == 1) {
    if (t.code == static_cast<std::uint8_t>(Code::Bfloat) && t.bits == 16) return DType::bf16;
    if (t.code == static_cast<std::uint8_t>(Code::Float) && t.bits == 16) return DType::f16;
    if (t.code == static_cast<std::uint8_t>(Code::Float) && t.bits == 32) return DType::f32;
    if (t.code == static_cast<std::uint8_t>(Code::Float) && t.bits == 64) return DType::f64;
    if (t.code == static_cast<std::uint8_t>(Code::Int) && t.bits == 32) return DType::i32;
    if (t.code == static_cast<std::uint8_t>(Code::Int) && t.bits == 64) return DType::i64;
    if (t.code == static_cast<std::uint8_t>(Code::UInt) && t.bits == 8) return DType::u8;
    if (t.code == static_cast<std::uint8_t>(Code::Float8_E4M3FN) && t.bits == 8) return DType::e4m3;
    if (t.code == static_cast<std::uint8_t>(Code::Float8_E5M2) && t.bits == 8) return DType::e5m2;
  }
  throw UsageError(concat(name, ": unsupported element type (DLPack code ", int(t.code), ", ", int(t.bits),
                          " bits, ", t.lanes, " lanes)"));
}

TensorView view_of(const Array& a, const char* name) {
  TensorView v;
  v.data = a.data();
  v.dtype = dtype_of(a, name);
  for (std::size_t i = 0; i < a.ndim(); ++i) {
    v.shape.push_back(static_cast<std::int64_t>(a.shape(i)));
    v.stride.push_back(a.stride_ptr() ? a.stride(i) : 0);
  }
  if (!a.stride_ptr()) v.stride = contiguous_strides(v.shape);
  return v;
}

// Every array on the CUDA device `device` (or, with device < 0, all on one CUDA device, returned).
int require_cuda(const std::vector<std::pair<const char*, const Array*>>& arrays, int device) {
  for (const auto& [name, a] : arrays) {
    CUTELAB_REQUIRE(a->device_type() == kDlCuda, name, ": expected a CUDA device array, got one in ",
                    device_text(a->device_type(), a->device_id()));
    if (device < 0) device = a->device_id();
    CUTELAB_REQUIRE(a->device_id() == device, name, ": on cuda:", a->device_id(), ", expected cuda:", device,
                    " like the other arguments");
  }
  return device;
}

// fp8_tensor's scale: one fp32 value (shape [] or [1]) on the device.
const float* kv_scale_of(const std::optional<Array>& kv_scale) {
  if (!kv_scale) return nullptr;
  CUTELAB_REQUIRE(dtype_of(*kv_scale, "kv_scale") == DType::f32, "kv_scale: expected float32, got ",
                  dtype_name(dtype_of(*kv_scale, "kv_scale")));
  CUTELAB_REQUIRE(kv_scale->size() == 1, "kv_scale: expected one value (shape [] or [1]), got ",
                  kv_scale->size());
  return static_cast<const float*>(kv_scale->data());
}

// The arrays of a call with their names, kv_scale when given, for require_cuda.
std::vector<std::pair<const char*, const Array*>> named(
    std::initializer_list<std::pair<const char*, const Array*>> arrays,
    const std::optional<Array>& kv_scale) {
  std::vector<std::pair<const char*, const Array*>> all(arrays);
  if (kv_scale) all.emplace_back("kv_scale", &*kv_scale);
  return all;
}

// Every array of a decode call on CUDA device `device` (device < 0: all on one, returned).
int require_call_on_cuda(int device, const Array& q, const Array& kv_cache, const Array& block_table,
                         const Array& seqlens, const Array& out, const Array& lse,
                         const std::optional<Array>& kv_scale) {
  return require_cuda(named({{"q", &q},
                             {"kv_cache", &kv_cache},
                             {"block_table", &block_table},
                             {"seqlens", &seqlens},
                             {"out", &out},
                             {"lse", &lse}},
                            kv_scale),
                      device);
}

mla::MlaDecodeArgs mla_args(const Array& q, const Array& kv_cache, const Array& block_table,
                            const Array& seqlens, const Array& out, const Array& lse, float softmax_scale,
                            bool causal, const std::optional<Array>& kv_scale) {
  mla::MlaDecodeArgs a;
  a.q = view_of(q, "q");
  a.kv_cache = view_of(kv_cache, "kv_cache");
  a.block_table = view_of(block_table, "block_table");
  a.seqlens = view_of(seqlens, "seqlens");
  a.out = view_of(out, "out");
  a.lse = view_of(lse, "lse");
  a.softmax_scale = softmax_scale;
  a.causal = causal;
  a.kv_scale = kv_scale_of(kv_scale);
  return a;
}

std::optional<mla::KvFormat> kv_format_of(const std::string& name) {
  if (name.empty() || name == "same") return std::nullopt;
  const std::optional<mla::KvFormat> f = mla::parse_kv_format(name);
  CUTELAB_REQUIRE(f, "kv_format '", name, "' is unknown (bf16, f16, fp8_tensor, fp8_token)");
  return f;
}

nb::dict tolerance_dict(const Tolerance& t) {
  nb::dict d;
  d["atol"] = t.atol;
  d["rtol"] = t.rtol;
  d["max_rel_l2"] = t.max_rel_l2;
  return d;
}

// The device record is read once per device (query_device asks nvidia-smi for the driver).
const DeviceInfo& device_info(int index, const std::string& db_path) {
  static std::mutex mutex;
  static std::map<int, DeviceInfo> known;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = known.find(index);
  if (it == known.end()) {
    std::string why;
    const int count = cuda_device_count(&why);
    CUTELAB_REQUIRE(count > 0, "no CUDA GPU found: ", why);
    CUTELAB_REQUIRE(index >= 0 && index < count, "device ", index, " does not exist (", count,
                    " CUDA devices)");
    const DeviceDb db = db_path.empty() ? DeviceDb::load_default() : DeviceDb::load(db_path);
    it = known.emplace(index, query_device(index, db)).first;
  }
  return it->second;
}

// Makes `device` current for the scope (kernels, attributes and allocations follow it).
class DeviceScope {
 public:
  explicit DeviceScope(int device) {
    CUTELAB_CUDA(cudaGetDevice(&previous_));
    if (previous_ != device) CUTELAB_CUDA(cudaSetDevice(device));
  }
  ~DeviceScope() {
    int now = previous_;
    CUTELAB_CUDA_NOEXCEPT(cudaGetDevice(&now));
    if (now != previous_) CUTELAB_CUDA_NOEXCEPT(cudaSetDevice(previous_));
  }
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

 private:
  int previous_ = 0;
};

cudaStream_t as_stream(std::uintptr_t handle) { return reinterpret_cast<cudaStream_t>(handle); }

// One MLA decoder bound to a device: the plan of a decode step (refilled by plan_step) and the
// kernel + config chosen for it.
class MlaDecoder {
 public:
  MlaDecoder(int device, const std::string& db_path, const mla::DecoderShape& shape,
             const mla::DecoderRequest& request)
      : device_(device) {
    const DeviceInfo& dev = device_info(device, db_path);
    DeviceScope scope(device);
    choice_ = mla::open_decoder(shape, request, dev);
    shape_ = shape;
  }

  ~MlaDecoder() {
    if (last_use_) CUTELAB_CUDA_NOEXCEPT(cudaEventDestroy(last_use_));
  }
  MlaDecoder(const MlaDecoder&) = delete;
  MlaDecoder& operator=(const MlaDecoder&) = delete;

  void plan_step(const Array& seqlens, std::uintptr_t stream) {
    require_cuda({{"seqlens", &seqlens}}, device_);
    DeviceScope scope(device_);
    choice_.decoder->plan_step(view_of(seqlens, "seqlens"), as_stream(stream));
    mark_use(as_stream(stream));
  }

  void run(const Array& q, const Array& kv_cache, const Array& block_table, const Array& seqlens,
           const Array& out, const Array& lse, const std::optional<Array>& kv_scale, float softmax_scale,
           bool causal, bool checked, std::uintptr_t stream) const {
    const mla::MlaDecodeArgs args =
        mla_args(q, kv_cache, block_table, seqlens, out, lse, softmax_scale, causal, kv_scale);
    require_call_on_cuda(device_, q, kv_cache, block_table, seqlens, out, lse, kv_scale);
    DeviceScope scope(device_);
    choice_.decoder->run(args, checked, as_stream(stream));
    mark_use(as_stream(stream));
  }

  // Whether another plan may take this decoder over: never once a CUDA graph holds its buffers,
  // else once the GPU has finished the work last enqueued with it (no waiting).
  [[nodiscard]] bool reusable() const {
    if (captured_) return false;
    if (!last_use_) return true;
    DeviceScope scope(device_);
    const cudaError_t state = cudaEventQuery(last_use_);
    if (state == cudaErrorNotReady) return false;
    CUTELAB_CUDA(state);
    return true;
  }
  [[nodiscard]] bool captured() const noexcept { return captured_; }

  [[nodiscard]] std::string reuse_error(std::uintptr_t stream) const {
    DeviceScope scope(device_);
    return choice_.decoder->reuse_error(as_stream(stream));
  }

  int device_;
  mla::DecoderShape shape_;
  mla::DecoderChoice choice_;

 private:
  void mark_use(cudaStream_t stream) const {
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    CUTELAB_CUDA(cudaStreamIsCapturing(stream, &status));
    if (status != cudaStreamCaptureStatusNone) {
      captured_ = true;
      return;
    }
    if (!last_use_) CUTELAB_CUDA(cudaEventCreateWithFlags(&last_use_, cudaEventDisableTiming));
    CUTELAB_CUDA(cudaEventRecord(last_use_, stream));
  }
  mutable cudaEvent_t last_use_ = nullptr;
  mutable bool captured_ = false;
};

// The C++ path on the lab's own inputs (MlaDecodeWorkspace from a seed): the KernelPlan's Kernel
// launched once. The arrays view the workspace, which lives as long as any of them.
nb::dict cpp_case(const std::string& kernel, const std::string& config, int s_q, int h_q, int h_kv,
                  const std::vector<int>& lens, bool causal, const std::string& dtype,
                  const std::string& kv_format, std::uint64_t seed, int device, const std::string& db_path) {
  const DeviceInfo& dev = device_info(device, db_path);
  DeviceScope scope(device);
  const KernelPlan& plan = Registry::instance().find(kernel);
  CUTELAB_REQUIRE(plan.family().name == "mla_decode", kernel, " is not an MLA decode kernel");
  const std::optional<DType> t = parse_dtype(dtype);
  CUTELAB_REQUIRE(t, "dtype '", dtype, "' is unknown (bf16, f16)");
  // The problem `cutelab run --lens=... --s --h --hkv --dtype [--kv-dtype] [--causal]` makes.
  const Problem problem = mla::decoder_problem(
      mla::DecoderShape{static_cast<int>(lens.size()), s_q, h_q, h_kv, *t, kv_format_of(kv_format)}, causal,
      lens, 0);
  auto* ws = new std::unique_ptr<Workspace>(plan.inputs(problem, seed));
  nb::capsule owner(ws, [](void* p) noexcept { delete static_cast<std::unique_ptr<Workspace>*>(p); });
  auto* mla_ws = dynamic_cast<mla::MlaDecodeWorkspace*>(ws->get());
  CUTELAB_REQUIRE(mla_ws, kernel, ": its workspace is not the MLA family's");
  // The named config, or (empty name) the first valid one, as `cutelab run` picks without a cache.
  std::optional<ConfigDesc> chosen;
  for (const ConfigDesc& c : plan.configs(problem, dev))
    if (config.empty() ? !chosen && !plan.validate(problem, c, dev) : c.name == config) chosen = c;
  CUTELAB_REQUIRE(chosen, "config '", config, "' is not a valid config of ", kernel);
  const Kernel k = plan.plan(problem, *chosen, **ws, dev);
  k.launch(nullptr);
  CUTELAB_CUDA_LAUNCH();
  CUTELAB_CUDA(cudaDeviceSynchronize());

  nb::dict out;
  const mla::MlaDecodeArgs a = mla_ws->args();
  const auto export_view = [&](const char* name, const TensorView& v) {
    std::vector<std::size_t> shape(v.shape.begin(), v.shape.end());
    nb::dlpack::dtype t{};
    t.lanes = 1;
    t.bits = static_cast<std::uint8_t>(dtype_size(v.dtype) * 8);
    using Code = nb::dlpack::dtype_code;
    t.code = static_cast<std::uint8_t>(v.dtype == DType::bf16  ? Code::Bfloat
                                       : v.dtype == DType::i32 ? Code::Int
                                       : v.dtype == DType::u8  ? Code::UInt
                                                               : Code::Float);
    out[name] = ExportedArray(v.data, shape.size(), shape.data(), owner, nullptr, t, kDlCuda, device);
  };
  export_view("q", a.q);
  TensorView cache = a.kv_cache;
  if (cache.dtype == DType::e4m3)
    cache.dtype = DType::u8;  // FP8 caches as bytes, which every framework imports
  export_view("kv_cache", cache);
  export_view("block_table", a.block_table);
  export_view("seqlens", a.seqlens);
  export_view("out", a.out);
  export_view("lse", a.lse);
  if (a.kv_scale) export_view("kv_scale", TensorView{const_cast<float*>(a.kv_scale), DType::f32, {1}, {1}});
  out["softmax_scale"] = mla_ws->spec().scale();
  out["config"] = chosen->name;
  out["kernel"] = plan.id().full();
  return out;
}

// A runtime record (CheckResult, TimingStats) as Python sees it: its to_json() as a dict.
nb::object to_python(const nlohmann::json& j) { return nb::module_::import_("json").attr("loads")(j.dump()); }

}  // namespace
}  // namespace cutelab::python

NB_MODULE(_C, m) {
  using namespace cutelab;
  using namespace cutelab::python;
  m.doc() =
      "cutelab's C++ API (kernels, checks, timing statistics); use the cutelab package, not this module";
  m.attr("version") = CUTELAB_VERSION;

  static nb::exception<UsageError> usage_error(m, "UsageError", PyExc_ValueError);
  static nb::exception<Error> lab_error(m, "Error", PyExc_RuntimeError);
  // Python users get the message; file:line of the C++ source is kept for the harness's own logs.
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const UsageError& e) {
      PyErr_SetString(usage_error.ptr(), e.message().c_str());
    } catch (const Error& e) {
      PyErr_SetString(lab_error.ptr(), e.message().c_str());
    }
  });

  m.def("device_count", [] {
    std::string why;
    const int n = cuda_device_count(&why);
    return std::make_pair(n, why);
  });

  m.def(
      "check_mla_args",
      [](const Array& q, const Array& kv_cache, const Array& block_table, const Array& seqlens,
         const Array& out, const Array& lse, const std::optional<Array>& kv_scale, float softmax_scale,
         bool causal) {
        (void)mla::validate_args(
            mla_args(q, kv_cache, block_table, seqlens, out, lse, softmax_scale, causal, kv_scale),
            /*checked=*/false, nullptr, mla::KvFormats::all());
        require_call_on_cuda(-1, q, kv_cache, block_table, seqlens, out, lse, kv_scale);
      },
      "q"_a, "kv_cache"_a, "block_table"_a, "seqlens"_a, "out"_a, "lse"_a, "kv_scale"_a.none(),
      "softmax_scale"_a, "causal"_a,
      "Host-side checks of an MLA decode call (shapes, dtypes, layout, one CUDA device); no device access.");

  m.def(
      "quantize_kv",
      [](const Array& rows, const Array& slots, const Array& cache, const std::string& kv_format,
         const std::optional<Array>& scale, bool checked, std::uintptr_t stream) {
        const std::optional<mla::KvFormat> f = kv_format_of(kv_format);
        CUTELAB_REQUIRE(f && mla::is_fp8(*f), "kv_format: expected fp8_tensor or fp8_token, got '", kv_format,
                        "'");
        CUTELAB_REQUIRE(
            !scale || *f == mla::KvFormat::fp8_tensor,
            "scale: given for an fp8_token cache, whose scales are per token; only fp8_tensor takes one");
        mla::QuantizeKvArgs a;
        a.format = *f;
        a.rows = view_of(rows, "rows");
        a.slots = view_of(slots, "slots");
        a.cache = view_of(cache, "cache");
        a.scale = kv_scale_of(scale);
        const int device =
            require_cuda(named({{"rows", &rows}, {"slots", &slots}, {"cache", &cache}}, scale), -1);
        DeviceScope scope(device);
        mla::quantize_kv(a, checked, as_stream(stream));
      },
      "rows"_a, "slots"_a, "cache"_a, "kv_format"_a, "scale"_a.none(), "checked"_a, "stream"_a,
      "Quantises bf16 KV rows into their slots of an FP8 cache (kv_format.hpp); enqueued on `stream`.");
  m.def(
      "dequantize_kv",
      [](const Array& cache, const std::string& kv_format, const std::optional<Array>& scale,
         const Array& out, std::uintptr_t stream) {
        const std::optional<mla::KvFormat> f = kv_format_of(kv_format);
        CUTELAB_REQUIRE(f && mla::is_fp8(*f), "kv_format: expected fp8_tensor or fp8_token, got '", kv_format,
                        "'");
        const TensorView c = view_of(cache, "cache");
        const TensorView o = view_of(out, "out");
        CUTELAB_REQUIRE(c.dtype == DType::u8 || c.dtype == DType::e4m3,
                        "cache: expected uint8 or float8_e4m3fn, got ", c.describe());
        CUTELAB_REQUIRE(c.rank() == 4 && c.contiguous() && c.shape[1] == mla::kPageSize &&
                            c.shape[3] == mla::kv_entry_bytes(*f),
                        "cache: expected a contiguous [num_blocks, ", mla::kPageSize, ", h_kv, ",
                        mla::kv_entry_bytes(*f), "] ", mla::kv_format_name(*f), " cache, got ", c.describe());
        CUTELAB_REQUIRE(*f == mla::KvFormat::fp8_token || scale,
                        "scale: an fp8_tensor cache needs its scale");
        CUTELAB_REQUIRE(
            !scale || *f == mla::KvFormat::fp8_tensor,
            "scale: given for an fp8_token cache, whose scales are per token; only fp8_tensor takes one");
        const std::vector<std::int64_t> want{c.shape[0], c.shape[1], c.shape[2], mla::kHeadDimQK};
        CUTELAB_REQUIRE(o.dtype == DType::f32 && o.shape == want && o.contiguous(),
                        "out: expected a contiguous f32[", want[0], ",", want[1], ",", want[2], ",", want[3],
                        "], got ", o.describe());
        const int device = require_cuda(named({{"cache", &cache}, {"out", &out}}, scale), -1);
        DeviceScope scope(device);
        mla::dequantize_kv(*f, c, kv_scale_of(scale), static_cast<float*>(o.data), as_stream(stream));
      },
      "cache"_a, "kv_format"_a, "scale"_a.none(), "out"_a, "stream"_a,
      "The FP8 cache as float32 [num_blocks, 64, h_kv, 576] into `out`; enqueued on `stream`.");
  m.def(
      "decoder_kernels",
      [](const std::string& dtype, const std::string& kv_format) {
        if (dtype.empty()) return mla::decoder_kernels();
        const std::optional<DType> t = parse_dtype(dtype);
        CUTELAB_REQUIRE(t, "dtype '", dtype, "' is unknown (bf16, f16)");
        const mla::DecoderShape shape{1, 1, 1, 1, *t, kv_format_of(kv_format)};
        return mla::decoder_kernels(std::pair{*t, shape.cache_format()});
      },
      "dtype"_a = "", "kv_format"_a = "",
      "Kernels with a decoder: for q of `dtype` with a cache in `kv_format` (empty: q's dtype), or any.");

  nb::class_<MlaDecoder>(m, "MlaDecoder")
      .def(
          "__init__",
          [](MlaDecoder* self, int device, const std::string& db_path, int max_batch, int s_q, int h_q,
             int h_kv, const std::string& dtype, const std::string& kv_format, const std::string& kernel,
             const std::string& config, bool causal, const std::vector<int>& lens, int max_seqlen,
             const std::string& cache_dir) {
            const std::optional<DType> t = parse_dtype(dtype);
            CUTELAB_REQUIRE(t, "dtype '", dtype, "' is unknown (bf16, f16)");
            mla::DecoderShape shape{max_batch, s_q, h_q, h_kv, *t, kv_format_of(kv_format)};
            mla::DecoderRequest request{kernel, config, causal, lens, max_seqlen, cache_dir};
            new (self) MlaDecoder(device, db_path, shape, request);
          },
          "device"_a, "db_path"_a, "max_batch"_a, "s_q"_a, "h_q"_a, "h_kv"_a, "dtype"_a, "kv_format"_a,
          "kernel"_a, "config"_a, "causal"_a, "lens"_a, "max_seqlen"_a, "cache_dir"_a)
      .def("plan_step", &MlaDecoder::plan_step, "seqlens"_a, "stream"_a)
      .def("run", &MlaDecoder::run, "q"_a, "kv_cache"_a, "block_table"_a, "seqlens"_a, "out"_a, "lse"_a,
           "kv_scale"_a.none(), "softmax_scale"_a, "causal"_a, "checked"_a, "stream"_a)
      .def("reuse_error", &MlaDecoder::reuse_error, "stream"_a)
      .def("reusable", &MlaDecoder::reusable)
      .def_prop_ro("captured", &MlaDecoder::captured)
      .def_prop_ro("kernel", [](const MlaDecoder& d) { return d.choice_.kernel; })
      .def_prop_ro("config", [](const MlaDecoder& d) { return d.choice_.config; })
      .def_prop_ro("config_source", [](const MlaDecoder& d) { return d.choice_.config_source; })
      .def_prop_ro("batch", [](const MlaDecoder& d) { return d.choice_.decoder->batch(); })
      .def_prop_ro("device", [](const MlaDecoder& d) { return d.device_; })
      .def_prop_ro(
          "kv_format",
          [](const MlaDecoder& d) { return std::string(mla::kv_format_name(d.shape_.cache_format())); })
      // The bounds the lab's tests hold this kernel's outputs to (MEASURE.md; for an FP8 cache
      // against a reference on the dequantised cache).
      .def_prop_ro("tolerances", [](const MlaDecoder& d) {
        nb::dict t;
        t["out"] =
            tolerance_dict(mla::out_tolerance(d.shape_.dtype, d.shape_.cache_format(), d.choice_.arithmetic));
        t["lse"] = tolerance_dict(mla::lse_tolerance(d.shape_.cache_format(), d.choice_.arithmetic));
        return t;
      });

  m.def("cpp_case", &cpp_case, "kernel"_a, "config"_a, "s_q"_a, "h_q"_a, "h_kv"_a, "lens"_a, "causal"_a,
        "dtype"_a, "kv_format"_a, "seed"_a, "device"_a, "db_path"_a,
        "The C++ path (KernelPlan -> Kernel, launched once) on the lab's seeded inputs; returns its arrays.");

  m.def(
      "check_output",
      [](const std::string& name, nb::ndarray<const float, nb::c_contig, nb::device::cpu> got,
         nb::ndarray<const float, nb::c_contig, nb::device::cpu> ref, double atol, double rtol,
         double max_rel_l2) {
        CUTELAB_REQUIRE(got.size() == ref.size(), name, ": ", got.size(), " values, the reference has ",
                        ref.size());
        const CheckResult r =
            check_output(name, DType::f32, got.data(), std::span<const float>(ref.data(), ref.size()),
                         Tolerance{atol, rtol, max_rel_l2});
        return to_python(r.to_json());
      },
      "name"_a, "got"_a, "ref"_a, "atol"_a, "rtol"_a, "max_rel_l2"_a);

  m.def("summarize_samples", [](std::vector<double> samples_us) {
    return to_python(summarize_samples(std::move(samples_us)).to_json());
  });
  m.def(
      "sampling_done",
      [](const std::vector<double>& samples_us, double elapsed_s, int min_samples, int max_samples,
         double max_seconds, double target_rel_ci) {
        TimingOptions o;
        o.min_samples = min_samples;
        o.max_samples = max_samples;
        o.max_seconds = max_seconds;
        o.target_rel_ci = target_rel_ci;
        std::string reason;
        const bool done = sampling_done(samples_us, elapsed_s, o, &reason);
        return std::make_pair(done, reason);
      },
      "samples_us"_a, "elapsed_s"_a, "min_samples"_a, "max_samples"_a, "max_seconds"_a, "target_rel_ci"_a);
  m.def(
      "empty",
      [](const std::vector<std::size_t>& shape, const std::string& dtype, int device) {
        const std::optional<DType> t = parse_dtype(dtype);
        CUTELAB_REQUIRE(t && (*t == DType::bf16 || *t == DType::f16 || *t == DType::f32), "empty: dtype '",
                        dtype, "' (bf16, f16, f32)");
        std::size_t n = 1;
        for (std::size_t e : shape) n *= e;
        DeviceScope scope(device);
        auto* buffer = new DeviceBuffer(std::max<std::size_t>(n, 1) * dtype_size(*t));
        nb::capsule owner(buffer, [](void* p) noexcept { delete static_cast<DeviceBuffer*>(p); });
        nb::dlpack::dtype code{};
        code.lanes = 1;
        code.bits = static_cast<std::uint8_t>(dtype_size(*t) * 8);
        code.code = static_cast<std::uint8_t>(*t == DType::bf16 ? nb::dlpack::dtype_code::Bfloat
                                                                : nb::dlpack::dtype_code::Float);
        return ExportedArray(buffer->data(), shape.size(), shape.data(), owner, nullptr, code, kDlCuda,
                             device);
      },
      "shape"_a, "dtype"_a, "device"_a,
      "An uninitialised device array the caller's framework imports (JAX outputs).");
  m.def(
      "stream_wait",
      [](std::uintptr_t consumer, std::uintptr_t producer) {
        if (consumer == producer) return;
        cudaEvent_t e = nullptr;
        CUTELAB_CUDA(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
        CUTELAB_CUDA(cudaEventRecord(e, as_stream(producer)));
        CUTELAB_CUDA(cudaStreamWaitEvent(as_stream(consumer), e, 0));
        CUTELAB_CUDA(cudaEventDestroy(e));
      },
      "consumer"_a, "producer"_a,
      "Makes `consumer` wait for the work enqueued on `producer` so far (no host sync).");
  m.def(
      "new_stream",
      [](int device) {
        DeviceScope scope(device);
        cudaStream_t s = nullptr;
        CUTELAB_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
        return reinterpret_cast<std::uintptr_t>(s);
      },
      "device"_a, "A non-blocking stream on `device`, never destroyed (one per device, for JAX callers).");
  // The CLI's clock record for Python timings: polls nvidia-smi (read only) between start() and stop().
  nb::class_<ClockSampler>(m, "ClockSampler")
      .def(nb::init<int, int>(), "device"_a, "period_ms"_a = 100)
      .def("start", &ClockSampler::start)
      .def(
          "stop",
          [](ClockSampler& sampler) {
            ClockSummary summary;
            {
              nb::gil_scoped_release release;  // joins the polling thread
              summary = sampler.stop();
            }
            nlohmann::json j = summary.to_json();
            j["brief"] = summary.brief();
            j["text"] = summary.str();
            return to_python(j);
          },
          "The clocks seen since start(): the CLI's JSON `clocks` record, plus `brief` and `text`.");
  m.def("rotating_set_count", &rotating_set_count, "l2_bytes"_a, "set_bytes"_a, "free_bytes"_a,
        "margin_bytes"_a);
  // The board's energy over a sampling loop (runtime/energy.hpp), as the harness's rotating figure has it.
  nb::class_<EnergyMeter>(m, "EnergyMeter")
      .def(nb::init<int>(), "device"_a, "Reads the energy counter now (call just before the loop).")
      .def(
          "finish",
          [](const EnergyMeter& meter, double calls, const std::string& raise) {
            const EnergyMeter::Result r = meter.finish(calls, raise);
            nb::dict d;
            if (r.reading) {
              d["joules_per_call"] = r.reading->joules_per_call;
              d["mean_watts"] = r.reading->mean_watts;
            } else {
              d["energy_note"] = r.note;
            }
            return d;
          },
          "calls"_a, "raise"_a,
          "joules_per_call and mean_watts over the loop, or energy_note saying why not.");
  m.def(
      "energy_unavailable", [](int device) { return EnergyCounter::of(device).why_unavailable(); },
      "device"_a, "Why the device has no energy counter; empty when it has one.");
  m.attr("energy_min_seconds") = kEnergyMinSeconds;
  m.def(
      "l2_bytes",
      [](int device, const std::string& db_path) { return l2_cache_bytes(device_info(device, db_path)); },
      "device"_a, "db_path"_a);
}
