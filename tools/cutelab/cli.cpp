#include "cli.hpp"

#include <CLI/CLI.hpp>

#include <cstdlib>
#include <set>
#include <string>
#include <vector>

#include "commands.hpp"
#include "cutelab/core/error.hpp"
#include "cutelab/runtime/problem.hpp"
#include "cutelab/runtime/registry.hpp"
#include "process.hpp"

namespace cutelab {
namespace {

constexpr const char* kExitHelp =
    "Exit status: 0 ok; 1 runtime error; 2 usage error (bad flag, missing or bad value, impossible\n"
    "size, unknown kernel); 3 skipped (no GPU, architecture mismatch, no valid config); 4 check failed.\n"
    "Environment: CUTELAB_VERBOSE=1 says which config was chosen and why; CUTELAB_CACHE_DIR moves the\n"
    "tuning and ceilings cache (default ~/.cache/cutelab).";

// Options of `run` that take a value in the next word when written without '='.
const std::set<std::string> kRunValueOptions = {"--config",   "--prof",        "--json",  "--seed",
                                                "--max-time", "--min-samples", "--timing"};
// Names a family may not use for its parameters: they are `run`'s own long flags. ("--h" is
// fine: CLI11 keeps "-h" and "--h" apart.)
const std::set<std::string> kRunOwnNames = {"help",        "check",      "no-check", "tune",
                                            "config",      "prof",       "json",     "max-time",
                                            "min-samples", "no-measure", "seed",     "timing",
                                            "floor"};

struct KernelLookup {
  const KernelPlan* plan = nullptr;
  std::string error;  // the registry's message when the kernel named on the command line is unknown
};

// `run` defines its problem flags from the kernel's family, so the kernel is looked up before
// CLI11 parses anything. Words that follow an unknown option without '=' may be its value, so
// they are tried last.
KernelLookup find_run_kernel(const std::vector<std::string>& args, std::size_t run_index) {
  std::vector<std::string> strong, weak;
  bool after_unknown_option = false;
  for (std::size_t i = run_index + 1; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") break;
    if (!a.empty() && a[0] == '-') {
      const bool has_value = a.find('=') != std::string::npos;
      if (kRunValueOptions.count(a) && !has_value) {
        ++i;  // its value
        after_unknown_option = false;
      } else {
        // A short option ("-h") takes no value here; a long one not of `run` may (a problem flag).
        const bool long_option = a.size() > 2 && a[1] == '-';
        after_unknown_option = long_option && !has_value && !kRunOwnNames.count(a.substr(2));
      }
      continue;
    }
    (after_unknown_option ? weak : strong).push_back(a);
    after_unknown_option = false;
  }
  KernelLookup found;
  std::vector<std::string> candidates = strong;
  candidates.insert(candidates.end(), weak.begin(), weak.end());
  for (const std::string& c : candidates) {
    try {
      found.plan = &Registry::instance().find(c);
      return found;
    } catch (const UsageError& e) {
      if (found.error.empty()) found.error = e.message();
    }
  }
  return found;
}

void add_measure_options(CLI::App* cmd, MeasureArgs& m, const std::string& default_timing) {
  m.timing = default_timing;
  cmd->add_flag("--check,!--no-check", m.check, "Compare the result with the reference (default: on)");
  cmd->add_flag("--tune", m.tune,
                "Time every valid config and cache the winner (ranked by the rotating figure with "
                "--timing rotating, else by the flush one; cached per figure)");
  cmd->add_option("--json", m.json, "Also write the full report as JSON to FILE")->type_name("FILE");
  cmd->add_option("--seed", m.seed, "Seed of the random inputs (default: 1)");
  cmd->add_option("--max-time", m.max_time, "Cap on the sampling loop, seconds (default: 2)")
      ->check(CLI::NonNegativeNumber)
      ->type_name("S");
  cmd->add_option("--min-samples", m.min_samples, "At least this many timed samples (default: 20)")
      ->check(CLI::PositiveNumber)
      ->type_name("N");
  cmd->add_option("--timing", m.timing,
                  "flush (one call per sample, L2 flushed), rotating (K calls on K input sets in one graph, "
                  "time / K, no flush) or both (default: " +
                      default_timing + ")")
      ->check(CLI::IsMember({"flush", "rotating", "both"}))
      ->type_name("MODE");
  cmd->add_flag("--floor", m.floor,
                "Also time a plain read of the case's bytes (the cost model's) the way the flush figure is "
                "timed, and report the call's time over it (the fixed costs of a call that size included)");
}

std::string describe_param(const ParamSpec& p) {
  std::string text = p.help;
  if (!p.default_value.empty()) text += " [default: " + p.default_value + "]";
  if (p.kind == ParamSpec::Kind::integer && (p.min != 0 || p.max != INT64_MAX))
    text += " [" + std::to_string(p.min) + ".." +
            (p.max == INT64_MAX ? std::string("") : std::to_string(p.max)) + "]";
  if (p.kind == ParamSpec::Kind::choice) {
    std::string list;
    for (const std::string& c : p.choices) list += (list.empty() ? "" : "|") + c;
    text += " {" + list + "}";
  }
  if (p.kind == ParamSpec::Kind::integer_list)
    text += " [comma-separated, each " + std::to_string(p.min) + ".." +
            (p.max == INT64_MAX ? std::string("") : std::to_string(p.max)) + "]";
  return text;
}

int dispatch(int argc, char** argv, Io io) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  std::size_t command_index = args.size();
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (!args[i].empty() && args[i][0] != '-') {
      command_index = i;
      break;
    }
  }
  if (command_index < args.size()) {
    static const std::set<std::string> commands = {"list", "device", "run", "suite"};
    if (!commands.count(args[command_index]))
      throw UsageError("unknown command '" + args[command_index] +
                       "' (expected list, device, run or suite; see --help)");
  }
  const bool wants_help = [&] {
    for (const std::string& a : args)
      if (a == "--help" || a == "-h") return true;
    return false;
  }();

  CLI::App app{"cutelab: write, check, tune, measure and profile GPU kernels (CuTe on NVIDIA GPUs).",
               "cutelab"};
  app.footer(kExitHelp);
  app.require_subcommand(1);
  app.set_version_flag("--version", [] { return "cutelab (git " + git_commit() + ")"; });

  ListArgs list_args;
  CLI::App* list_cmd = app.add_subcommand("list", "List every registered kernel (no GPU needed)");
  list_cmd->add_option("--json", list_args.json, "Also write the list as JSON to FILE")->type_name("FILE");
  list_cmd->add_flag("--names", list_args.names, "Print only the kernel names, one per line (for scripts)");

  DeviceArgs device_args;
  CLI::App* device_cmd =
      app.add_subcommand("device", "Show the GPU, its limits and peaks; --ceilings measures them");
  device_cmd->add_flag("--ceilings", device_args.ceilings,
                       "Measure copy, read and cuBLAS bf16 GEMM ceilings and cache them");
  device_cmd->add_option("--json", device_args.json, "Also write the report as JSON to FILE")
      ->type_name("FILE");

  RunArgs run_args;
  CLI::App* run_cmd =
      app.add_subcommand("run", "Run one kernel: check it, time it, compare it with the ceilings");
  run_cmd->add_option("kernel", run_args.kernel, "Registry name, a prefix of one, or a family (its default)")
      ->required();
  add_measure_options(run_cmd, run_args.m, "flush");
  CLI::Option* tune_opt = run_cmd->get_option("--tune");
  CLI::Option* config_opt =
      run_cmd->add_option("--config", run_args.config, "Use this config (skip tuning)")->type_name("NAME");
  tune_opt->excludes(config_opt);
  run_cmd
      ->add_option(
          "--prof", run_args.prof,
          "disabled | annotation (NVTX ranges) | ncu (Nsight Compute) | sanitize (compute-sanitizer)")
      ->check(CLI::IsMember({"disabled", "annotation", "ncu", "sanitize"}))
      ->type_name("MODE");
  bool no_measure = false;
  run_cmd->add_flag("--no-measure", no_measure, "Check only: take no timing samples");
  run_cmd->footer("Problem flags come from the kernel's family: `cutelab run <kernel> --help` lists them.");

  std::map<std::string, std::string> param_text;
  std::map<std::string, CLI::Option*> param_opts;
  std::map<std::string, std::string> param_files;  // --X-file of each list parameter X
  std::map<std::string, CLI::Option*> param_file_opts;
  const bool is_run = command_index < args.size() && args[command_index] == "run";
  if (is_run) {
    const KernelLookup lookup = find_run_kernel(args, command_index);
    if (!lookup.plan && !lookup.error.empty() && !wants_help) throw UsageError(lookup.error);
    if (lookup.plan) {
      const Family& family = lookup.plan->family();
      const std::string group = "Problem (" + family.name + ")";
      for (const ParamSpec& p : family.params) {
        if (kRunOwnNames.count(p.name))
          throw Error("family " + family.name + " declares parameter '" + p.name +
                      "', which is a flag of `run`");
        std::string& slot = param_text[p.name];
        CLI::Option* opt = nullptr;
        if (p.kind == ParamSpec::Kind::boolean) {
          opt = run_cmd->add_flag("--" + p.name + ",!--no-" + p.name, slot, describe_param(p));
        } else {
          opt = run_cmd->add_option("--" + p.name, slot, describe_param(p))
                    ->type_name(p.kind == ParamSpec::Kind::integer        ? "INT"
                                : p.kind == ParamSpec::Kind::integer_list ? "A,B,..."
                                                                          : "NAME");
        }
        opt->group(group);
        param_opts[p.name] = opt;
        if (p.kind == ParamSpec::Kind::integer_list) {
          // A long list (a trace of a whole batch) is easier to keep in a file.
          if (kRunOwnNames.count(p.name + "-file"))
            throw Error("family " + family.name + " declares parameter '" + p.name + "', whose --" + p.name +
                        "-file is a flag of `run`");
          CLI::Option* file_opt =
              run_cmd
                  ->add_option("--" + p.name + "-file", param_files[p.name],
                               "--" + p.name +
                                   " read from FILE: integers separated by commas, spaces or "
                                   "newlines; '#' starts a comment")
                  ->type_name("FILE")
                  ->group(group);
          file_opt->excludes(opt);
          param_file_opts[p.name] = file_opt;
        }
      }
      run_cmd->footer("Problem flags of " + lookup.plan->id().full() + " are listed above under '" + group +
                      "'.");
    }
  }

  SuiteArgs suite_args;
  CLI::App* suite_cmd =
      app.add_subcommand("suite", "Run every case of a suite file for every kernel; one table");
  suite_cmd->add_option("file", suite_args.file, "Suite file (format: bench/suites/README.md)")->required();
  suite_cmd->add_option("--kernels", suite_args.kernels, "Run these kernels instead of the suite's list")
      ->delimiter(',')
      ->type_name("A,B");
  add_measure_options(suite_cmd, suite_args.m, "both");

  if (args.empty()) {
    io.out << app.help();
    return kExitUsage;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) {  // --help, --version
      (void)app.exit(e, io.out, io.err);
      return kExitOk;
    }
    io.err << "error: " << e.what() << "\n";
    std::string cmd;
    for (CLI::App* sub : app.get_subcommands()) cmd = " " + sub->get_name();
    io.err << "run 'cutelab" << cmd << " --help' for usage\n";
    return kExitUsage;
  }

  const std::vector<std::string> command_line(argv, argv + argc);
  if (app.got_subcommand(list_cmd)) {
    list_args.command_line = command_line;
    return cmd_list(list_args, io);
  }
  if (app.got_subcommand(device_cmd)) {
    device_args.command_line = command_line;
    return cmd_device(device_args, io);
  }
  if (app.got_subcommand(suite_cmd)) {
    suite_args.command_line = command_line;
    return cmd_suite(suite_args, io);
  }
  if (app.got_subcommand(run_cmd)) {
    for (const auto& [name, opt] : param_opts)
      if (opt->count() > 0) run_args.params[name] = param_text[name];
    for (const auto& [name, opt] : param_file_opts) {
      if (opt->count() == 0) continue;
      try {
        run_args.params[name] = cutelab::param_text(read_integer_list_file(param_files[name]));
      } catch (const UsageError& e) {
        throw UsageError("--" + name + "-file: " + e.message());
      }
    }
    run_args.m.measure = !no_measure;
    run_args.command_line = command_line;
    return cmd_run(run_args, io);
  }
  return kExitUsage;
}

}  // namespace

int run_cli(int argc, char** argv, std::ostream& out, std::ostream& err) {
  Io io{out, err};
  const bool verbose = std::getenv("CUTELAB_VERBOSE") != nullptr;
  try {
    return dispatch(argc, argv, io);
  } catch (const UsageError& e) {
    err << "error: " << e.message() << "\n";
    return kExitUsage;
  } catch (const Error& e) {
    err << "error: " << e.message() << (verbose ? " (at " + e.where() + ")" : std::string()) << "\n";
    return kExitRuntimeError;
  } catch (const std::exception& e) {
    err << "error: " << e.what() << "\n";
    return kExitRuntimeError;
  }
}

}  // namespace cutelab
