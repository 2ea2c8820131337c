#pragma once
// The `cutelab` command line. run_cli() is the whole program minus main(), so tests can call it
// with an argv array and read what it printed.

#include <ostream>

namespace cutelab {

// Exit statuses of every command (documented in the README and in --help).
enum ExitStatus : int {
  kExitOk = 0,
  kExitRuntimeError = 1,  // something failed while running (CUDA error, tool failed, file unwritable)
  kExitUsage = 2,         // bad flag, missing or bad value, impossible size, unknown kernel
  kExitSkipped = 3,       // no GPU, architecture mismatch, no valid config
  kExitCheckFailed = 4,   // a result did not match the reference (or a sanitizer found errors)
};

[[nodiscard]] int run_cli(int argc, char** argv, std::ostream& out, std::ostream& err);

}  // namespace cutelab
