#pragma once
// The KernelPlan every paged_sm90 version uses: same tuning knobs, same validation, the same
// Runner; a version supplies its name, summary, main-kernel table and resource needs.
//
//   struct Version {
//     static KernelId id();  static std::string summary();
//     static paged_sm90::MainKernel main_kernel(DType, KvFormat);  // function null: not served
//       (or main_kernel(DType, KvFormat, PartialFormat): also split pieces in out's dtype; or
//       main_kernel(DType, KvFormat, PartialFormat, int rows): by query rows a KV head as well)
//     static constexpr int kRegistersPerSm;   // registers one CTA needs (after setmaxnreg, if any)
//     static constexpr int kThreads, kStages;  // kThreads: the largest block of its main kernels
//     static constexpr int kMinBlocksPerPart[N];  // the schedule's shortest-part values to tune over
//     static constexpr MlaArithmetic kArithmetic;  // optional: what it rounds to e4m3 (default none)
//     static MlaArithmetic arithmetic_for_rows(int rows);  // optional, instead: by query rows a KV head
//     static constexpr int kEvictFirstAboveRows;  // optional: the untuned default's evict-first rows
//     // Optional: more than one main kernel, a tuning choice like the schedule's knobs. Their names
//     // (the first one's left out of config names), main_kernel(DType, KvFormat, PartialFormat, int
//     // rows, int kernel) with null where that kernel does not serve the rows, and the index the
//     // untuned default takes for a problem (which may also set the schedule knobs that kernel wants).
//     static constexpr std::array<const char*, N> kMainKernels;
//     static constexpr std::array<int, N> kMainKernelThreads;  // where their blocks differ
//     static int preferred_main_kernel(const MlaDecodeProblem&, const DeviceInfo&, TuneConfig&);
//   };

#include <algorithm>
#include <array>
#include <climits>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cute/mla_decode/paged_sm90/common/host.hpp"
#include "mla_decode/common/decoder.hpp"
#include "mla_decode/common/plan_base.hpp"

namespace cutelab::mla::paged_sm90 {

// The config an untuned call starts from, read off the tuned suites (v3 over 26-32 runs, the FP8
// designs over 3-22; docs/kernels/mla-decode.md, "The untuned default"): within 1.5% of each row's
// best (3% at b1 h128) where the first of the tuning order was up to 1.25x behind. Shortest parts
// of one page; a piece costed at 8 pages unless the lengths vary or a request has at most 16 pages;
// KV pages evicted first below 64 requests and, in a design that says so, above
// `evict_first_above_rows` query rows a KV head (from 64 requests at one M tile a KV head the normal
// hint is 4-6% faster in the flush figure, which ranks configs; the rotating figure is even there);
// partial rows in out's dtype where a KV head has more than one M tile (their combine reads half the
// bytes).
[[nodiscard]] inline TuneConfig untuned_default(const MlaDecodeProblem& p, bool spare_sms,
                                                bool partials_in_out_dtype, int evict_first_above_rows) {
  const bool varied_lengths =
      p.varlen || std::adjacent_find(p.lens.begin(), p.lens.end(), std::not_equal_to<>()) != p.lens.end();
  const int longest = p.lens.empty() ? p.t : *std::max_element(p.lens.begin(), p.lens.end());
  const bool shapes_ok = p.h_kv > 0 && p.h_q % p.h_kv == 0;
  const int rows = shapes_ok ? rows_per_kv_head(p.s_q, p.h_q, p.h_kv) : 0;
  TuneConfig c;
  c.fixed_overhead_blocks = varied_lengths || longest <= 16 * kPageSize ? 2 : 8;
  c.kv_evict_first = p.b < 64 || rows > evict_first_above_rows;
  c.min_blocks_per_part = 1;
  c.partials = partials_in_out_dtype && shapes_ok && m_tiles_of(p.s_q, p.h_q, p.h_kv) > 1
                   ? PartialFormat::out_dtype
                   : PartialFormat::fp32;
  c.tail_parts = spare_sms;
  return c;
}

// How many main kernels a version tunes over (kMainKernels), 1 without a choice.
template <class Version>
[[nodiscard]] constexpr int main_kernel_count() {
  if constexpr (requires { Version::kMainKernels; })
    return static_cast<int>(Version::kMainKernels.size());
  else
    return 1;
}

// The block size of a version's main kernel `kernel` (kMainKernelThreads where its kernels differ).
template <class Version>
[[nodiscard]] constexpr int main_kernel_threads(int kernel) {
  if constexpr (requires { Version::kMainKernelThreads; })
    return Version::kMainKernelThreads[kernel];
  else
    return Version::kThreads;
}

// A version's main kernel for (dtype, KV format, partial rows); function null when not served. A
// version that writes partial rows in out's dtype has main_kernel(DType, KvFormat, PartialFormat);
// one whose kernel depends on the query rows a KV head (`rows` = s_q * h_q / h_kv, 0 where no
// problem is known) has main_kernel_for_rows(DType, KvFormat, int), or both main_kernel(DType,
// KvFormat, PartialFormat, int); one with a choice of main kernels (`kernel`, an index into
// kMainKernels) main_kernel(DType, KvFormat, PartialFormat, int, int).
template <class Version>
[[nodiscard]] MainKernel main_kernel_for(DType dtype, KvFormat kv, PartialFormat partials, int rows = 0,
                                         int kernel = 0) {
  if constexpr (requires { Version::main_kernel(dtype, kv, partials, rows, kernel); })
    return Version::main_kernel(dtype, kv, partials, rows, kernel);
  else if (kernel != 0)
    return {};
  else if constexpr (requires { Version::main_kernel(dtype, kv, partials, rows); })
    return Version::main_kernel(dtype, kv, partials, rows);
  else if constexpr (requires { Version::main_kernel(dtype, kv, partials); })
    return Version::main_kernel(dtype, kv, partials);
  else if constexpr (requires { Version::main_kernel_for_rows(dtype, kv, rows); })
    return partials == PartialFormat::fp32 ? Version::main_kernel_for_rows(dtype, kv, rows) : MainKernel{};
  else
    return partials == PartialFormat::fp32 ? Version::main_kernel(dtype, kv) : MainKernel{};
}

[[nodiscard]] inline const char* partial_format_name(PartialFormat f) {
  return f == PartialFormat::out_dtype ? "out_dtype" : "fp32";
}

template <class Version>
struct PlanConfig {
  TuneConfig tune;
  int main_kernel = 0;  // which of the version's main kernels (kMainKernels); 0 without a choice

  [[nodiscard]] static std::string main_kernel_name(int k) {
    if constexpr (main_kernel_count<Version>() > 1)
      return Version::kMainKernels[static_cast<std::size_t>(k)];
    else
      return "";
  }
  [[nodiscard]] std::string name() const {
    return main_kernel == 0 ? tune.name() : concat(tune.name(), "_", main_kernel_name(main_kernel));
  }
  // The inverse of to_json (a ConfigDesc's params).
  [[nodiscard]] static PlanConfig from_json(const nlohmann::json& j) {
    // "partials" is absent from configs written before it existed: fp32, what they ran.
    const std::string partials = j.value("partials", std::string("fp32"));
    if (partials != "fp32" && partials != "out_dtype")
      throw UsageError(concat("partials \"", partials, "\": expected \"fp32\" or \"out_dtype\""));
    int kernel = 0;
    if constexpr (main_kernel_count<Version>() > 1) {
      const std::string name = j.value("main_kernel", main_kernel_name(0));
      while (kernel < main_kernel_count<Version>() && main_kernel_name(kernel) != name) ++kernel;
      if (kernel == main_kernel_count<Version>()) {
        std::string names;
        for (int k = 0; k < main_kernel_count<Version>(); ++k)
          names += concat(k ? ", " : "", "\"", main_kernel_name(k), "\"");
        throw UsageError(concat("main_kernel \"", name, "\": expected one of ", names));
      }
    }
    // "tail_parts" likewise (false: full rows of parts only).
    return PlanConfig{TuneConfig{j.at("fixed_overhead_blocks").get<int>(), j.at("kv_evict_first").get<bool>(),
                                 j.at("min_blocks_per_part").get<int>(),
                                 partials == "out_dtype" ? PartialFormat::out_dtype : PartialFormat::fp32,
                                 j.value("tail_parts", false)},
                      kernel};
  }
  [[nodiscard]] nlohmann::json to_json() const {
    nlohmann::json j = {{"fixed_overhead_blocks", tune.fixed_overhead_blocks},
                        {"kv_evict_first", tune.kv_evict_first},
                        {"min_blocks_per_part", tune.min_blocks_per_part},
                        {"partials", partial_format_name(tune.partials)},
                        {"tail_parts", tune.tail_parts},
                        {"block_m", kBlockM},
                        {"threads", main_kernel_threads<Version>(main_kernel)},
                        {"stages", Version::kStages}};
    if constexpr (main_kernel_count<Version>() > 1) j["main_kernel"] = main_kernel_name(main_kernel);
    return j;
  }
  [[nodiscard]] std::optional<std::string> validate(const MlaDecodeProblem& p, const DeviceInfo& dev) const {
    if (p.dtype != DType::bf16 && p.dtype != DType::f16)
      return concat("dtype ", dtype_name(p.dtype), " is not supported (bf16, f16)");
    if (main_kernel_for<Version>(p.dtype, p.kv_format, PartialFormat::fp32).function == nullptr)
      return concat("reads no ", kv_format_name(p.kv_format), " KV cache with ", dtype_name(p.dtype), " q");
    const int rows = rows_per_kv_head(p.s_q, p.h_q, p.h_kv);
    if (main_kernel != 0 &&
        main_kernel_for<Version>(p.dtype, p.kv_format, PartialFormat::fp32, rows, main_kernel).function ==
            nullptr)
      return concat("its ", main_kernel_name(main_kernel), " main kernel serves no ", rows,
                    " query rows a KV head with ", dtype_name(p.dtype), " q and a ",
                    kv_format_name(p.kv_format), " cache");
    const MainKernel main = main_kernel_for<Version>(p.dtype, p.kv_format, tune.partials, rows, main_kernel);
    if (main.function == nullptr)
      return concat("writes no partial rows in out's dtype (partials ", partial_format_name(tune.partials),
                    ")");
    if (main.q_map && p.h_kv > 0 && p.h_q % p.h_kv == 0)
      if (std::optional<std::string> why = q_tile_refusal(p.h_q / p.h_kv, p.s_q)) return why;
    const std::size_t smem = main.shared_bytes;
    if (smem > dev.smem_per_block_optin)
      return concat("needs ", smem, " B of shared memory per block, the device allows ",
                    dev.smem_per_block_optin);
    if (Version::kRegistersPerSm > dev.regs_per_sm)
      return concat("needs ", Version::kRegistersPerSm, " registers per SM, the device has ",
                    dev.regs_per_sm);
    if (dev.sm_count < 1) return std::string("device reports no SMs");
    if (tune.fixed_overhead_blocks < 0)
      return concat("fixed_overhead_blocks ", tune.fixed_overhead_blocks, " < 0");
    if (tune.min_blocks_per_part < 1) return concat("min_blocks_per_part ", tune.min_blocks_per_part, " < 1");
    return std::nullopt;
  }
};

template <class Version>
class VersionPlan final : public MlaDecodePlanBase<PlanConfig<Version>>, public DecoderSource {
  using Config = PlanConfig<Version>;

  [[nodiscard]] static MlaArithmetic arithmetic_for_rows(int rows) {
    if constexpr (requires { Version::arithmetic_for_rows(0); })
      return Version::arithmetic_for_rows(rows);
    else if constexpr (requires { Version::kArithmetic; })
      return Version::kArithmetic;
    else
      return MlaArithmetic::q_precision;
  }

 public:
  [[nodiscard]] KernelId id() const override { return Version::id(); }
  [[nodiscard]] ArchRequirement arch() const override { return {9, 0, true}; }
  [[nodiscard]] std::string summary() const override { return Version::summary(); }

  [[nodiscard]] MlaArithmetic arithmetic(const MlaDecodeProblem& p) const override {
    return arithmetic_for_rows(rows_per_kv_head(p.s_q, p.h_q, p.h_kv));
  }
  [[nodiscard]] MlaArithmetic arithmetic(const DecoderShape& shape) const override {
    return arithmetic_for_rows(rows_per_kv_head(shape.s_q, shape.h_q, shape.h_kv));
  }
  [[nodiscard]] bool serves(DType dtype, KvFormat kv) const override {
    return main_kernel_for<Version>(dtype, kv, PartialFormat::fp32).function != nullptr;
  }
  [[nodiscard]] std::unique_ptr<Decoder> make_decoder(const DecoderShape& shape, const ConfigDesc& config,
                                                      const DeviceInfo& dev) const override {
    MlaDecodeDims dims;
    dims.b = shape.max_batch;
    dims.s_q = shape.s_q;
    dims.h_q = shape.h_q;
    dims.h_kv = shape.h_kv;
    dims.dtype = shape.dtype;
    const KvFormat kv = shape.cache_format();
    const Config c = Config::from_json(config.params);
    return std::make_unique<RunnerDecoder>(
        Runner(dims, dev, c.tune,
               main_kernel_for<Version>(shape.dtype, kv, c.tune.partials,
                                        rows_per_kv_head(shape.s_q, shape.h_q, shape.h_kv), c.main_kernel)));
  }

 protected:
  [[nodiscard]] std::vector<Config> make_configs(const MlaDecodeProblem& p,
                                                 const DeviceInfo& dev) const override {
    std::vector<Config> configs;
    // A short last row of parts where the grid's columns leave SMs idle (each config both ways).
    const bool spare_sms =
        p.h_kv > 0 && p.h_q % p.h_kv == 0 && dev.sm_count > 0 &&
        part_grid(p.h_kv * m_tiles_of(p.s_q, p.h_q, p.h_kv), dev.sm_count, true).tail_waves > 0;
    // Each main kernel's (validate() names what one cannot run, e.g. rows a kernel does not serve).
    for (int kernel = 0; kernel < main_kernel_count<Version>(); ++kernel) {
      for (PartialFormat partials : {PartialFormat::fp32, PartialFormat::out_dtype}) {
        // fp32 rows always; 16-bit rows where a main kernel writes them.
        if (partials == PartialFormat::out_dtype &&
            main_kernel_for<Version>(p.dtype, p.kv_format, partials, 0, kernel).function == nullptr)
          continue;
        for (bool evict_first : {true, false})
          for (int fixed : {2, 8})
            for (int min_blocks : Version::kMinBlocksPerPart)
              for (bool tail : {false, true})
                if (!tail || spare_sms)
                  configs.push_back(
                      Config{TuneConfig{fixed, evict_first, min_blocks, partials, tail}, kernel});
      }
    }
    // A call without a tuning-cache entry takes the first valid config: the untuned default first.
    int evict_first_above_rows = INT_MAX;
    if constexpr (requires { Version::kEvictFirstAboveRows; })
      evict_first_above_rows = Version::kEvictFirstAboveRows;
    TuneConfig preferred = untuned_default(
        p, spare_sms,
        main_kernel_for<Version>(p.dtype, p.kv_format, PartialFormat::out_dtype).function != nullptr,
        evict_first_above_rows);
    int preferred_kernel = 0;
    if constexpr (requires { Version::preferred_main_kernel(p, dev, preferred); })
      preferred_kernel = Version::preferred_main_kernel(p, dev, preferred);
    std::stable_partition(configs.begin(), configs.end(), [&](const Config& c) {
      return c.tune == preferred && c.main_kernel == preferred_kernel;
    });
    return configs;
  }

  // setup = the split schedule of the workspace's lengths (once per decode step);
  // launch_reusing_setup = main kernel + combine (every layer); launch = both.
  [[nodiscard]] Kernel make_kernel(const MlaDecodeProblem&, const Config& c, MlaDecodeWorkspace& ws,
                                   const DeviceInfo& dev) const override {
    // Checked once here (reads seqlens and block ids); the launch path itself never syncs.
    // Every format here; the Runner refuses a cache its main kernel does not read.
    const MlaDecodeDims dims = checked_dims(ws, nullptr, KvFormats::all());
    auto runner = std::make_shared<const Runner>(
        dims, dev, c.tune,
        main_kernel_for<Version>(dims.dtype, dims.kv_format, c.tune.partials,
                                 rows_per_kv_head(dims.s_q, dims.h_q, dims.h_kv), c.main_kernel));
    std::shared_ptr<StepPlan> step = runner->make_step_plan();
    const TensorView seqlens = ws.seqlens.view();
    runner->plan_step(*step, seqlens, nullptr);
    // The workspace's arguments never change: check and encode them once, launch only.
    const PreparedCall call = runner->prepare(*step, ws.args());
    Kernel k;
    k.setup = [runner, step, seqlens](cudaStream_t stream) { runner->plan_step(*step, seqlens, stream); };
    k.launch_reusing_setup = [runner, step, call](cudaStream_t stream) { runner->launch(call, stream); };
    k.launch = [runner, step, seqlens, call](cudaStream_t stream) {
      runner->plan_step(*step, seqlens, stream);
      runner->launch(call, stream);
    };
    k.resources = runner->resources();
    return k;
  }
};

}  // namespace cutelab::mla::paged_sm90
