#include "cutelab/runtime/tuner.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "cuda_raii.hpp"
#include "cutelab/runtime/nvtx.hpp"
#include "cutelab/runtime/report.hpp"

namespace cutelab {
namespace {

std::string us(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f us", v);
  return buf;
}

// Leaves NVTX as it found it.
class NvtxEnable {
 public:
  explicit NvtxEnable(bool on) : before_(nvtx_enabled()) { set_nvtx_enabled(on || before_); }
  ~NvtxEnable() { set_nvtx_enabled(before_); }

 private:
  bool before_;
};

bool no_binary(const CudaError& e) {
  return e.code() == cudaErrorNoKernelImageForDevice || e.code() == cudaErrorInvalidDeviceFunction;
}

void check_reference_shape(const std::vector<OutputSpec>& outputs, const std::vector<std::vector<float>>& ref,
                           const std::string& kernel) {
  if (ref.size() != outputs.size())
    throw Error(concat(kernel, ": reference returned ", ref.size(), " arrays for ", outputs.size(), " outputs"));
  for (std::size_t i = 0; i < ref.size(); ++i)
    if (static_cast<std::int64_t>(ref[i].size()) != outputs[i].view.numel())
      throw Error(concat(kernel, ": reference for output '", outputs[i].name, "' has ", ref[i].size(),
                         " elements, the output ", outputs[i].view.describe(), " has ", outputs[i].view.numel()));
}

std::vector<CheckResult> check_all(const Workspace& ws, const std::vector<std::vector<float>>& ref) {
  std::vector<CheckResult> out;
  const std::vector<OutputSpec> outputs = ws.outputs();
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    const std::vector<std::uint8_t> got = copy_to_host_bytes(outputs[i].view);
    out.push_back(check_output(outputs[i].name, outputs[i].view.dtype, got.data(), ref[i], outputs[i].tol));
  }
  return out;
}

const CheckResult* first_failure(const std::vector<CheckResult>& checks) {
  for (const CheckResult& c : checks)
    if (!c.passed) return &c;
  return nullptr;
}

// Whether the kernel has a setup to reuse; a kernel that sets only one of the pair is a bug.
bool has_setup(const Kernel& k) {
  if (static_cast<bool>(k.setup) != static_cast<bool>(k.launch_reusing_setup))
    throw Error(concat(k.name, " ", k.config,
                       ": Kernel::setup and Kernel::launch_reusing_setup must be set together (",
                       k.setup ? "setup" : "launch_reusing_setup", " is set, the other is not)"));
  return static_cast<bool>(k.setup);
}

constexpr const char* kWholePath = "setup in each call (launch)";
constexpr const char* kReusingPath = "setup reused (setup + launch_reusing_setup)";

// Poison, launch once (both ways when the kernel has a setup), wait after each: faults surface
// here as CudaError. With `ref`, checks the outputs after each way and returns the failures'
// reasons, each naming its way when there are two.
std::optional<std::string> run_and_check(const Kernel& k, Workspace& ws,
                                         const std::vector<std::vector<float>>* ref, cudaStream_t stream,
                                         std::vector<CheckResult>* whole, std::vector<CheckResult>* reusing) {
  const bool setup = has_setup(k);
  std::string reasons;
  const auto check = [&](std::vector<CheckResult>* out, const char* path) {
    if (!ref) return;
    *out = check_all(ws, *ref);
    if (const CheckResult* bad = first_failure(*out))
      reasons += setup ? concat(reasons.empty() ? "" : "; ", path, ": ", bad->reason) : bad->reason;
  };
  ws.poison(stream);
  k.launch(stream);
  CUTELAB_CUDA_LAUNCH();
  CUTELAB_CUDA(cudaStreamSynchronize(stream));
  check(whole, kWholePath);
  if (setup) {
    ws.poison(stream);
    k.setup(stream);
    CUTELAB_CUDA_LAUNCH();
    k.launch_reusing_setup(stream);
    CUTELAB_CUDA_LAUNCH();
    CUTELAB_CUDA(cudaStreamSynchronize(stream));
    check(reusing, kReusingPath);
  }
  if (reasons.empty()) return std::nullopt;
  return reasons;
}

// Times the whole call, `launch`: without a graph when it waits on the host (it cannot be captured).
TimingStats time_whole(const Kernel& k, const DeviceInfo& dev, TimingOptions options, cudaStream_t stream) {
  if (!k.launch_syncs_host) return time_launch(k.launch, dev, options, stream);
  options.use_graph = false;
  TimingStats stats = time_launch(k.launch, dev, options, stream);
  stats.stop_reason += " (direct launches: the call waits on the host)";
  return stats;
}

// The primary figure: `setup` once, then `launch_reusing_setup` per call; else `launch`.
TimingStats time_primary(const Kernel& k, const DeviceInfo& dev, const TimingOptions& options,
                         cudaStream_t stream) {
  if (!has_setup(k)) return time_whole(k, dev, options, stream);
  k.setup(stream);
  CUTELAB_CUDA_LAUNCH();
  return time_launch(k.launch_reusing_setup, dev, options, stream);
}

ConfigOutcome outcome_of(const ConfigDesc& config, ConfigOutcome::Status status, std::string reason) {
  ConfigOutcome o;
  o.config = config;
  o.status = status;
  o.reason = std::move(reason);
  return o;
}

// Configs that failed alike are named together ("all 12 configs invalid: <reason>" when every
// one did): a kernel with a dozen configs repeated one reason a dozen times.
std::string list_reasons(const std::vector<ConfigOutcome>& outcomes) {
  struct Group {
    ConfigOutcome::Status status;
    const std::string* reason;
    std::string names;
  };
  std::vector<Group> groups;  // in order of first appearance
  for (const ConfigOutcome& o : outcomes) {
    auto g = std::find_if(groups.begin(), groups.end(),
                          [&](const Group& x) { return x.status == o.status && *x.reason == o.reason; });
    if (g == groups.end()) g = groups.insert(groups.end(), Group{o.status, &o.reason, ""});
    g->names += concat(g->names.empty() ? "" : ", ", o.config.name);
  }
  if (groups.size() == 1 && outcomes.size() > 1)
    return concat("all ", outcomes.size(), " configs ", status_name(groups[0].status), ": ",
                  *groups[0].reason);
  std::string s;
  for (const Group& g : groups)
    s += concat(s.empty() ? "" : "; ", g.names, " ", status_name(g.status), ": ", *g.reason);
  return s;
}

// The context died: nothing after `failed` can run, and the run ends.
void context_lost(RunResult& r, std::vector<ConfigOutcome>& outcomes, const std::vector<ConfigDesc>& configs,
                  std::size_t failed, const CudaError& e) {
  for (std::size_t j = failed + 1; j < configs.size(); ++j)
    outcomes.push_back(outcome_of(configs[j], ConfigOutcome::Status::not_run,
                                  concat("CUDA context lost after ", configs[failed].name)));
  r.tuning = outcomes;
  r.status = RunResult::Status::error;
  r.message = concat("CUDA context lost after config ", configs[failed].name, ": ", e.message());
}

struct Session {
  const KernelPlan& plan;
  const Problem& problem;
  const DeviceInfo& dev;
  const RunOptions& options;
  const ProgressFn& progress;
  RunResult& r;
  Workspace& ws;
  const std::vector<std::vector<float>>& ref;
  cudaStream_t stream;

  void say(const std::string& m) const {
    if (progress) progress(m);
  }

  // The input sets of the rotating figure beyond the run's own workspace (set 0), made once per
  // run: tuning by that figure times every config on the same sets, and the chosen one reuses them.
  struct RotationSets {
    bool made = false;
    std::vector<std::unique_ptr<Workspace>> sets;  // sets 1..K-1
    double set_bytes = 0;
    std::string skipped;  // why there are none
  };
  RotationSets rotation;

  // Fills `o.timing` with the figure tuning ranks by, and the status.
  void time_for_ranking(const ConfigDesc& c, const Kernel& k, ConfigOutcome& o) {
    if (r.tune_basis == TuneBasis::rotating) {
      RotatingTiming rot = measure_rotating(c, k);
      if (rot.stats) {
        o.basis = TuneBasis::rotating;
        o.rotating_sets = rot.sets;
        o.timing = rot.stats;
        o.status = ConfigOutcome::Status::ok;
        return;
      }
      if (!rotation.sets.empty()) {  // the sets exist: this config's own failure
        o.status = ConfigOutcome::Status::launch_failed;
        o.reason = rot.skipped;
        return;
      }
      // No sets at all (made at the first config timed, so nothing is ranked yet): every config by
      // the flush figure instead, said once.
      r.tune_basis = TuneBasis::flush;
      r.warnings.push_back(
          concat("Tuning ranked the configs by the flush figure: the rotating one needs input "
                 "sets that are not available (",
                 rot.skipped, ")."));
    }
    o.basis = TuneBasis::flush;
    o.timing = time_primary(k, dev, options.timing, stream);
    o.status = ConfigOutcome::Status::ok;
  }

  // Times every config. Returns the winner, or nothing with r.status/r.message set.
  std::optional<ConfigDesc> tune(const std::vector<ConfigDesc>& configs) {
    NvtxRange range("cutelab/tune");
    std::vector<ConfigOutcome> outcomes;
    for (std::size_t i = 0; i < configs.size(); ++i) {
      const ConfigDesc& c = configs[i];
      const std::string head = concat("tuning ", i + 1, "/", configs.size(), ": ", c.name);
      say(head + " ...");
      ConfigOutcome o = outcome_of(c, ConfigOutcome::Status::not_run, {});
      o.basis = r.tune_basis;
      try {
        if (auto why = plan.validate(problem, c, dev)) {
          o.status = ConfigOutcome::Status::invalid;
          o.reason = *why;
        } else {
          Kernel k;
          try {
            k = plan.plan(problem, c, ws, dev);
          } catch (const CudaError& e) {
            if (!no_binary(e)) throw;
            o.status = ConfigOutcome::Status::launch_failed;
            o.reason = concat("no binary for ", dev.sm(), " in this build (", e.message(), ")");
          }
          if (o.status == ConfigOutcome::Status::not_run) {
            if (auto bad = run_and_check(k, ws, &ref, stream, &o.checks, &o.checks_reusing_setup)) {
              o.status = ConfigOutcome::Status::check_failed;
              o.reason = *bad;
            } else {
              time_for_ranking(c, k, o);
            }
          }
        }
      } catch (const CudaError& e) {
        o.status = ConfigOutcome::Status::launch_failed;
        o.reason = e.message();
        if (e.sticky()) {
          outcomes.push_back(o);
          say(concat(head, " ... ", e.message()));
          context_lost(r, outcomes, configs, i, e);
          return std::nullopt;
        }
      } catch (const Error& e) {  // UsageError from plan() included: this config cannot run
        o.status = ConfigOutcome::Status::invalid;
        o.reason = e.message();
      }
      say(concat(head, " ... ",
                 o.status != ConfigOutcome::Status::ok ? concat(status_name(o.status), ": ", o.reason)
                 : o.basis == TuneBasis::rotating
                     ? concat(us(o.timing->median_us), " (rotating K=", o.rotating_sets, ")")
                     : us(o.timing->median_us)));
      outcomes.push_back(std::move(o));
    }
    r.tuning = outcomes;

    const ConfigOutcome* best = nullptr;
    for (const ConfigOutcome& o : outcomes)
      if (o.status == ConfigOutcome::Status::ok && (!best || o.timing->median_us < best->timing->median_us)) best = &o;
    if (!best) {
      const auto any = [&](ConfigOutcome::Status s) {
        return std::any_of(outcomes.begin(), outcomes.end(), [&](const ConfigOutcome& o) { return o.status == s; });
      };
      r.status = any(ConfigOutcome::Status::check_failed)    ? RunResult::Status::check_failed
                 : any(ConfigOutcome::Status::launch_failed) ? RunResult::Status::error
                                                             : RunResult::Status::skipped;
      r.message = concat("no config of ", r.kernel, " ran correctly on ", dev.sm(), ": ", list_reasons(outcomes));
      return std::nullopt;
    }
    store_winner(*best, outcomes);
    return best->config;
  }

  void store_winner(const ConfigOutcome& best, const std::vector<ConfigOutcome>& outcomes) {
    std::vector<const ConfigOutcome*> ranked;
    for (const ConfigOutcome& o : outcomes)
      if (o.status == ConfigOutcome::Status::ok) ranked.push_back(&o);
    std::sort(ranked.begin(), ranked.end(),
              [](const ConfigOutcome* a, const ConfigOutcome* b) { return a->timing->median_us < b->timing->median_us; });
    nlohmann::json runners_up = nlohmann::json::array();
    for (const ConfigOutcome* o : ranked)
      if (o != &best) runners_up.push_back({{"config", o->config.name}, {"median_us", o->timing->median_us}});
    TuneEntry entry{best.config.name,
                    best.timing->median_us,
                    utc_timestamp(),
                    {{"runners_up", runners_up},
                     {"timing", best.timing->to_json()},
                     {"basis", tune_basis_name(best.basis)},
                     {"params", best.config.params}}};
    TuneCache cache(cache_path());
    try {
      cache.store(tune_key(r), entry);
    } catch (const Error& e) {
      r.warnings.push_back(concat("The tuning result was not cached: ", e.message()));
    }
    for (const std::string& w : cache.warnings()) r.warnings.push_back(w);
  }

  std::string cache_path() const {
    return (options.cache_dir.empty() ? TuneCache::default_dir() : options.cache_dir) + "/tune.json";
  }

  // The cached winner of the run's basis, else of the other basis, when it is still a valid
  // config; else the first valid one.
  std::optional<ConfigDesc> pick(const std::vector<ConfigDesc>& configs) {
    TuneCache cache(cache_path());
    const TuneBasis other = r.tune_basis == TuneBasis::flush ? TuneBasis::rotating : TuneBasis::flush;
    for (const TuneBasis basis : {r.tune_basis, other}) {
      const std::optional<TuneEntry> cached = cache.lookup(tune_key(r.kernel, problem, dev, basis));
      if (!cached) continue;
      bool found = false;
      for (const ConfigDesc& c : configs) {
        if (c.name != cached->config) continue;
        found = true;
        if (auto why = plan.validate(problem, c, dev))
          r.warnings.push_back(concat("The cached config ", c.name, " is no longer valid (", *why, "); not used."));
        else {
          r.config_source = basis == TuneBasis::flush ? "cache" : "cache (rotating)";
          for (const std::string& w : cache.warnings()) r.warnings.push_back(w);
          return c;
        }
      }
      if (!found)
        r.warnings.push_back(concat("The cached config ", cached->config, " is not among the configs of ", r.kernel,
                                    "; not used."));
    }
    for (const std::string& w : cache.warnings()) r.warnings.push_back(w);
    for (const ConfigDesc& c : configs) {
      if (!plan.validate(problem, c, dev)) {
        r.config_source = "first valid";
        return c;
      }
    }
    // run_kernel skips a problem no config can serve before it gets here.
    throw std::logic_error("no valid config after the validity check");
  }

  void run_chosen(const ConfigDesc& chosen) {
    r.config = chosen;
    if (verbose_from_env())
      std::fprintf(stderr, "cutelab: %s: config %s (%s)\n", r.kernel.c_str(), chosen.name.c_str(),
                   r.config_source.c_str());
    Kernel k;
    try {
      k = plan.plan(problem, chosen, ws, dev);
    } catch (const CudaError& e) {
      if (!no_binary(e)) throw;
      r.status = RunResult::Status::skipped;
      r.message = concat("no binary for ", dev.sm(), " in this build (", e.message(), ")");
      return;
    }
    r.resources = k.resources;
    r.has_setup = has_setup(k);
    {
      std::optional<NvtxRange> range;
      if (options.check) range.emplace("cutelab/check");
      if (auto bad = run_and_check(k, ws, options.check ? &ref : nullptr, stream, &r.checks,
                                   &r.checks_reusing_setup)) {
        r.status = RunResult::Status::check_failed;  // still measured: the numbers help the diagnosis
        r.message = *bad;
      }
    }
    if (!options.measure) return;
    const std::string head = concat("measuring ", r.kernel, " ", chosen.name);
    ClockSampler sampler(dev.index);
    sampler.start();
    if (times_flush(options.timing_mode)) {
      // The primary figure first: a long row heats the GPU, and whatever is measured second runs
      // at the lower clock of its power cap. --prof=ncu profiles the first launches inside
      // "cutelab/measure/<kernel>", which must be the whole call (only `launch` runs the setup's
      // functions too), so with a setup the reused-setup timing has a range of its own.
      if (r.has_setup) {
        NvtxRange range("cutelab/reused/" + r.kernel);
        say(head + " (setup reused) ...");
        r.timing = time_primary(k, dev, options.timing, stream);
      }
      NvtxRange range("cutelab/measure/" + r.kernel);
      if (r.has_setup) {
        say(head + " (setup in each call) ...");
        r.timing_with_setup = time_whole(k, dev, options.timing, stream);
      } else {
        say(head + " ...");
        r.timing = time_primary(k, dev, options.timing, stream);
      }
      say(concat(head, " ... ", us(r.timing->median_us)));
    }
    // Outside the measure range (--prof=ncu profiles that one), right after the figure it stands beside.
    if (options.read_floor && r.timing) {
      if (r.cost.bytes >= 16) {
        NvtxRange range("cutelab/read_floor");
        say(concat("reading the case's ", format_bytes(r.cost.bytes), " the same way (read floor) ..."));
        r.read_floor = measure_read_floor(r.cost.bytes, dev, options.timing, stream);
      } else {
        r.read_floor = ReadFloor{r.cost.bytes, "", std::nullopt, "the cost model counts no bytes for this case"};
      }
    }
    if (times_rotating(options.timing_mode)) {
      NvtxRange range("cutelab/rotating/" + r.kernel);
      say(head + " (rotating) ...");
      r.rotating = measure_rotating(chosen, k);
      if (r.rotating->stats)
        say(concat(head, " (rotating K=", r.rotating->sets, ") ... ", us(r.rotating->stats->median_us)));
    }
    r.clocks = sampler.stop();
  }

  // Makes the rotation's sets once. K follows from the memory that set 1 and a kernel of `sizing`
  // on it take (plans with per-call scratch count), as many as exceed L2 and fit; a config whose
  // scratch is larger than `sizing`'s and does not fit then fails its own rotating timing, named.
  // Afterwards either there are at least two sets (set 0 is the run's) or `skipped` says why not;
  // only a lost context propagates.
  void make_rotation_sets(const ConfigDesc& sizing) {
    if (rotation.made) return;
    rotation.made = true;
    const auto make_set = [&](int index) {
      rotation.sets.push_back(plan.inputs(problem, options.seed + static_cast<std::uint64_t>(index)));
      CUTELAB_CUDA(cudaDeviceSynchronize());
    };
    std::size_t free_before = 0, free_after = 0, total = 0;
    try {
      CUTELAB_CUDA(cudaDeviceSynchronize());
      CUTELAB_CUDA(cudaMemGetInfo(&free_before, &total));
      make_set(1);
      const Kernel sized = plan.plan(problem, sizing, *rotation.sets.back(), dev);
      CUTELAB_CUDA(cudaDeviceSynchronize());
      CUTELAB_CUDA(cudaMemGetInfo(&free_after, &total));
    } catch (const CudaError& e) {
      rotation.sets.clear();
      if (e.sticky()) throw;
      (void)cudaGetLastError();
      rotation.skipped = e.code() == cudaErrorMemoryAllocation
                             ? concat("a second input set does not fit in device memory (",
                                      format_bytes(free_before), " free): ", e.message())
                             : concat("the second input set failed: ", e.message());
      return;
    } catch (const Error& e) {
      rotation.sets.clear();
      rotation.skipped = concat("the second input set failed: ", e.message());
      return;
    }
    // Room for the graph, the runtime and whatever else shares the device.
    const double margin = std::max(512.0 * 1024 * 1024, static_cast<double>(total) / 20);
    // Allocations smaller than the allocator's granularity may not show: the cost's bytes (each
    // input read once) are a floor.
    rotation.set_bytes = std::max(
        free_before > free_after ? static_cast<double>(free_before - free_after) : 0.0, r.cost.bytes);
    if (static_cast<double>(free_after) < margin) {
      rotation.sets.clear();
      rotation.skipped =
          concat("two input sets of ", format_bytes(rotation.set_bytes), " leave ", format_bytes(free_after),
                 " of device memory free, less than the margin of ", format_bytes(margin));
      return;
    }
    const double l2_bytes = static_cast<double>(l2_cache_bytes(dev));
    const double l2 = l2_bytes > 0 ? l2_bytes : static_cast<double>(kUnknownL2Bytes);
    const int wanted = rotating_set_count(l2, rotation.set_bytes, static_cast<double>(free_after), margin);
    for (int i = 2; i < wanted; ++i) {
      try {
        make_set(i);
      } catch (const CudaError& e) {
        if (e.sticky()) throw;
        (void)cudaGetLastError();
        if (rotation.sets.size() == static_cast<std::size_t>(i))
          rotation.sets.pop_back();  // made, not synced
        break;  // fewer sets than planned, still at least two
      } catch (const Error&) {
        break;
      }
    }
  }

  // Rotating: K input sets (set 0 is the run's own workspace, where `k` was planned), `config`
  // planned and set up once on each, K calls captured in one graph. Problems of the kernel or of
  // memory land in `skipped`; a lost context propagates.
  RotatingTiming measure_rotating(const ConfigDesc& config, const Kernel& k) {
    RotatingTiming rot;
    const bool setup = has_setup(k);
    rot.reuses_setup = setup;
    rot.l2_bytes = static_cast<double>(l2_cache_bytes(dev));
    std::vector<Kernel> kernels;  // one a set beyond set 0; freed on return, after the stream is drained
    try {
      make_rotation_sets(config);
      if (rotation.sets.empty()) {
        rot.skipped = rotation.skipped;
        return rot;
      }
      rot.set_bytes = rotation.set_bytes;
      for (const std::unique_ptr<Workspace>& set : rotation.sets)
        kernels.push_back(plan.plan(problem, config, *set, dev));
      CUTELAB_CUDA(cudaDeviceSynchronize());
      rot.sets = 1 + static_cast<int>(kernels.size());
      std::vector<std::function<void(cudaStream_t)>> launches;
      const auto add = [&](const Kernel& each) {
        if (setup) {
          each.setup(stream);
          CUTELAB_CUDA_LAUNCH();
        }
        launches.push_back(setup ? each.launch_reusing_setup : each.launch);
      };
      add(k);
      for (const Kernel& each : kernels) add(each);
      rot.stats = time_rotating(launches, options.timing, stream);
    } catch (const CudaError& e) {
      if (e.sticky()) throw;
      (void)cudaGetLastError();
      rot.skipped = concat("rotating timing failed: ", e.message());
    } catch (const Error& e) {
      rot.skipped = concat("rotating timing failed: ", e.message());
    }
    CUTELAB_CUDA(cudaStreamSynchronize(stream));
    return rot;
  }
};

// Why no config of `configs` can run `problem` on `dev`; nullopt when one can.
std::optional<std::string> no_valid_config(const KernelPlan& plan, const Problem& problem,
                                           const std::vector<ConfigDesc>& configs, const DeviceInfo& dev) {
  if (configs.empty()) return concat(plan.id().full(), " offers no config for this problem");
  std::vector<ConfigOutcome> rejected;
  for (const ConfigDesc& c : configs) {
    auto why = plan.validate(problem, c, dev);
    if (!why) return std::nullopt;
    rejected.push_back(outcome_of(c, ConfigOutcome::Status::invalid, *why));
  }
  return concat("no valid config for this problem on ", dev.sm(), ": ", list_reasons(rejected));
}

}  // namespace

bool verbose_from_env() {
  const char* v = std::getenv("CUTELAB_VERBOSE");
  return v && *v && std::string(v) != "0";
}

TuneBasis tune_basis(TimingMode m) noexcept {
  return m == TimingMode::rotating ? TuneBasis::rotating : TuneBasis::flush;
}

const char* tune_basis_name(TuneBasis b) noexcept { return b == TuneBasis::rotating ? "rotating" : "flush"; }

TuneKey tune_key(const std::string& kernel, const Problem& problem, const DeviceInfo& dev, TuneBasis basis) {
  return TuneKey{kernel,
                 problem.key(),
                 dev.name,
                 dev.sm(),
                 dev.runtime_version,
                 dev.driver(),
                 basis == TuneBasis::flush ? "" : tune_basis_name(basis)};
}

TuneKey tune_key(const RunResult& r) { return tune_key(r.kernel, r.problem, r.device, r.tune_basis); }

const char* status_name(ConfigOutcome::Status s) noexcept {
  switch (s) {
    case ConfigOutcome::Status::ok: return "ok";
    case ConfigOutcome::Status::invalid: return "invalid";
    case ConfigOutcome::Status::launch_failed: return "launch_failed";
    case ConfigOutcome::Status::check_failed: return "check_failed";
    case ConfigOutcome::Status::not_run: return "not_run";
  }
  return "?";
}

const char* status_name(RunResult::Status s) noexcept {
  switch (s) {
    case RunResult::Status::ok: return "ok";
    case RunResult::Status::skipped: return "skipped";
    case RunResult::Status::check_failed: return "check_failed";
    case RunResult::Status::error: return "error";
  }
  return "?";
}

RunResult run_kernel(const KernelPlan& plan, const Problem& problem, const DeviceInfo& dev, const RunOptions& options,
                     const std::optional<Ceilings>& ceilings, const ProgressFn& progress) {
  RunResult r;
  r.kernel = plan.id().full();
  r.problem = problem;
  r.device = dev;
  r.ceilings = ceilings;
  r.timing_mode = options.timing_mode;
  r.tune_basis = tune_basis(options.timing_mode);
  const NvtxEnable nvtx(options.annotate);

  // The gate comes first: on the wrong device nothing is allocated or launched.
  if (auto why = arch_mismatch(plan.arch(), dev)) {
    r.status = RunResult::Status::skipped;
    r.message = *why;
    return r;
  }
  plan.check_problem(problem);
  r.cost = plan.cost(problem);
  const std::vector<ConfigDesc> configs = plan.configs(problem, dev);
  std::optional<ConfigDesc> forced;
  if (options.config) {
    std::string names;
    for (const ConfigDesc& c : configs) {
      names += (names.empty() ? "" : ", ") + c.name;
      if (c.name == *options.config) forced = c;
    }
    CUTELAB_REQUIRE(forced, "unknown config '", *options.config, "' for ", r.kernel, " (configs: ", names, ")");
    if (auto why = plan.validate(problem, *forced, dev))
      throw UsageError(concat("config ", forced->name, " cannot run this problem on ", dev.sm(), ": ", *why));
  } else if (auto why = no_valid_config(plan, problem, configs, dev)) {
    // Before the inputs and the reference are made: a suite row that no config can serve (gigabytes
    // of KV cache at b128 t16384) is skipped at once.
    r.status = RunResult::Status::skipped;
    r.message = *why;
    return r;
  }

  try {
    CUTELAB_CUDA(cudaSetDevice(dev.index));
    const detail::Stream stream = detail::make_stream();
    std::unique_ptr<Workspace> ws;
    {
      NvtxRange range("cutelab/inputs");
      ws = plan.inputs(problem, options.seed);
      CUTELAB_CUDA(cudaDeviceSynchronize());
    }
    std::vector<std::vector<float>> ref;
    if (options.check || options.tune) {
      NvtxRange range("cutelab/reference");
      ref = plan.reference(problem, *ws);
      check_reference_shape(ws->outputs(), ref, r.kernel);
    }
    Session s{plan, problem, dev, options, progress, r, *ws, ref, stream.get(), {}};
    std::optional<ConfigDesc> chosen;
    if (forced) {
      r.config_source = "forced";
      chosen = forced;
    } else if (options.tune) {
      chosen = s.tune(configs);
      if (chosen) r.config_source = "tuned";
    } else {
      chosen = s.pick(configs);
    }
    if (chosen) s.run_chosen(*chosen);
  } catch (const UsageError&) {
    throw;
  } catch (const CudaError& e) {
    r.status = RunResult::Status::error;
    r.message = e.sticky() ? concat(e.message(), " (the CUDA context is lost)") : e.message();
  } catch (const std::exception& e) {
    r.status = RunResult::Status::error;
    r.message = e.what();
  }
  return r;
}

namespace {

nlohmann::json metrics(const RunResult& r) {
  nlohmann::json m = nlohmann::json::object();
  const TimingStats* t = r.rate_timing();
  if (!t || t->median_us <= 0) return m;
  m["basis"] = r.timing && t == &*r.timing ? "timing" : "rotating";
  const double seconds = t->median_us * 1e-6;
  const double tflops = r.cost.flops / seconds / 1e12;
  const double gbs = r.cost.bytes / seconds / 1e9;
  m["tflops"] = tflops;
  m["gbs"] = gbs;
  if (r.device.peak_bandwidth_gbs > 0) m["peak_bandwidth_fraction"] = gbs / r.device.peak_bandwidth_gbs;
  if (r.device.peak_bf16_tflops > 0) m["peak_bf16_fraction"] = tflops / r.device.peak_bf16_tflops;
  if (r.ceilings) {
    if (r.ceilings->copy_gbs > 0) m["copy_fraction"] = gbs / r.ceilings->copy_gbs;
    if (r.ceilings->read_gbs > 0) m["read_fraction"] = gbs / r.ceilings->read_gbs;
    if (r.ceilings->gemm_bf16_tflops > 0) m["gemm_fraction"] = tflops / r.ceilings->gemm_bf16_tflops;
  }
  if (const std::optional<double> x = r.over_read_floor()) m["over_read_floor"] = *x;
  return m;
}

}  // namespace

nlohmann::json ConfigOutcome::to_json() const {
  nlohmann::json j = {{"config", config.name}, {"params", config.params}, {"status", status_name(status)},
                      {"reason", reason}};
  j["basis"] = tune_basis_name(basis);
  j["timing"] = timing ? timing->to_json() : nlohmann::json(nullptr);
  if (basis == TuneBasis::rotating) j["rotating_sets"] = rotating_sets;
  j["checks"] = nlohmann::json::array();
  for (const CheckResult& c : checks) j["checks"].push_back(c.to_json());
  if (!checks_reusing_setup.empty()) {
    j["checks_reusing_setup"] = nlohmann::json::array();
    for (const CheckResult& c : checks_reusing_setup) j["checks_reusing_setup"].push_back(c.to_json());
  }
  return j;
}

std::optional<double> RunResult::over_read_floor() const noexcept {
  if (!timing || !read_floor || !read_floor->stats || read_floor->stats->median_us <= 0) return std::nullopt;
  return timing->median_us / read_floor->stats->median_us;
}

const TimingStats* RunResult::rate_timing() const noexcept {
  if (timing) return &*timing;
  if (rotating && rotating->stats) return &*rotating->stats;
  return nullptr;
}

nlohmann::json RunResult::to_json() const {
  nlohmann::json j = {{"kernel", kernel},
                      {"status", status_name(status)},
                      {"message", message},
                      {"problem", problem.to_json()},
                      {"device", device.to_json()},
                      {"config_source", config_source},
                      {"tune_basis", tune_basis_name(tune_basis)},
                      {"cost", {{"flops", cost.flops}, {"bytes", cost.bytes}}},
                      {"clocks", clocks.to_json()},
                      {"warnings", warnings}};
  j["config"] = config ? nlohmann::json{{"name", config->name}, {"params", config->params}} : nlohmann::json(nullptr);
  j["resources"] = nlohmann::json::array();
  for (const FunctionResources& f : resources) j["resources"].push_back(f.to_json());
  j["checks"] = nlohmann::json::array();
  for (const CheckResult& c : checks) j["checks"].push_back(c.to_json());
  j["has_setup"] = has_setup;
  j["checks_reusing_setup"] = nlohmann::json::array();
  for (const CheckResult& c : checks_reusing_setup) j["checks_reusing_setup"].push_back(c.to_json());
  j["timing_mode"] = timing_mode_name(timing_mode);
  j["timing"] = timing ? timing->to_json(true) : nlohmann::json(nullptr);
  j["timing_with_setup"] = timing_with_setup ? timing_with_setup->to_json(true) : nlohmann::json(nullptr);
  j["rotating"] = rotating ? rotating->to_json(true) : nlohmann::json(nullptr);
  j["read_floor"] = read_floor ? read_floor->to_json() : nlohmann::json(nullptr);
  j["metrics"] = metrics(*this);
  j["ceilings"] = ceilings ? ceilings->to_json() : nlohmann::json(nullptr);
  j["tuning"] = nlohmann::json::array();
  for (const ConfigOutcome& o : tuning) j["tuning"].push_back(o.to_json());
  return j;
}

}  // namespace cutelab
