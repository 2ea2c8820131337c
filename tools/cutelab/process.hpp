#pragma once
// Small host utilities the commands share: child processes, tool lookup, provenance strings.

#include <optional>
#include <string>
#include <vector>

namespace cutelab {

struct ProcessResult {
  int exit_code = -1;       // the child's status; 128 + signal when it was killed
  bool started = false;     // false when the program could not be executed at all
  std::string output;       // stdout and stderr interleaved, as the child wrote them
  std::string start_error;  // why it did not start
};

// Where the child's stderr goes: into `output` with stdout, to this process's stderr, or nowhere.
enum class Stderr { merge, inherit, discard };

// Runs argv[0] (searched on PATH when it has no '/'), waits, and captures its output.
[[nodiscard]] ProcessResult run_process(const std::vector<std::string>& argv, Stderr err = Stderr::merge);

// The path of this executable (/proc/self/exe); empty when unknown.
[[nodiscard]] std::string self_exe();

// Finds an executable: on PATH, then in each of `extra_dirs` (glob patterns allowed).
[[nodiscard]] std::optional<std::string> find_tool(const std::string& name,
                                                   const std::vector<std::string>& extra_dirs);

// `git rev-parse --short HEAD` (with "-dirty" when the tree has changes) of the source tree,
// else of the current directory; $CUTELAB_GIT_COMMIT wins; "unknown" when nothing answers.
[[nodiscard]] std::string git_commit();

// argv joined for display, each word quoted when the shell would need it.
[[nodiscard]] std::string shell_join(const std::vector<std::string>& argv);

}  // namespace cutelab
