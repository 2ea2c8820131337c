#include "process.hpp"

#include <fcntl.h>
#include <glob.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>

extern char** environ;

namespace cutelab {
namespace {

bool is_executable(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  return s;
}

}  // namespace

ProcessResult run_process(const std::vector<std::string>& argv, Stderr err) {
  ProcessResult result;
  if (argv.empty()) {
    result.start_error = "empty command";
    return result;
  }
  int fds[2];
  if (::pipe(fds) != 0) {
    result.start_error = std::string("pipe: ") + std::strerror(errno);
    return result;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addclose(&actions, fds[0]);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
  if (err == Stderr::merge) posix_spawn_file_actions_adddup2(&actions, fds[1], STDERR_FILENO);
  if (err == Stderr::discard)
    posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addclose(&actions, fds[1]);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);

  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);

  pid_t pid = 0;
  const int rc = ::posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(fds[1]);
  if (rc != 0) {
    ::close(fds[0]);
    result.start_error = std::string("cannot run ") + argv[0] + ": " + std::strerror(rc);
    return result;
  }
  result.started = true;
  char buffer[65536];
  for (;;) {
    const ssize_t n = ::read(fds[0], buffer, sizeof(buffer));
    if (n > 0) {
      result.output.append(buffer, static_cast<std::size_t>(n));
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      break;
    }
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status)) {
    result.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    result.exit_code = 128 + WTERMSIG(status);
  }
  // posix_spawnp reports a failed exec through the child's exit status 127.
  if (result.exit_code == 127 && result.output.empty()) {
    result.started = false;
    result.start_error = "cannot run " + argv[0] + " (not found or not executable)";
  }
  return result;
}

std::string self_exe() {
  std::error_code ec;
  const auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string() : p.string();
}

std::optional<std::string> find_tool(const std::string& name, const std::vector<std::string>& extra_dirs) {
  if (const char* path = std::getenv("PATH")) {
    std::string all = path;
    std::size_t start = 0;
    while (start <= all.size()) {
      const std::size_t end = all.find(':', start);
      const std::string dir = all.substr(start, end == std::string::npos ? std::string::npos : end - start);
      if (!dir.empty() && is_executable(dir + "/" + name)) return dir + "/" + name;
      if (end == std::string::npos) break;
      start = end + 1;
    }
  }
  for (const std::string& pattern : extra_dirs) {
    glob_t g{};
    if (::glob((pattern + "/" + name).c_str(), 0, nullptr, &g) == 0) {
      // Newest install last in sorted order: prefer it.
      for (std::size_t i = g.gl_pathc; i-- > 0;) {
        const std::string candidate = g.gl_pathv[i];
        if (is_executable(candidate)) {
          ::globfree(&g);
          return candidate;
        }
      }
    }
    ::globfree(&g);
  }
  return std::nullopt;
}

std::string git_commit() {
  if (const char* env = std::getenv("CUTELAB_GIT_COMMIT"); env && *env) return env;
  std::vector<std::string> dirs;
#ifdef CUTELAB_SOURCE_DIR
  dirs.emplace_back(CUTELAB_SOURCE_DIR);
#endif
  dirs.emplace_back(".");
  for (const std::string& dir : dirs) {
    std::error_code ec;
    if (!std::filesystem::exists(dir, ec)) continue;
    const ProcessResult head =
        run_process({"git", "-C", dir, "rev-parse", "--short", "HEAD"}, Stderr::discard);
    if (!head.started || head.exit_code != 0) continue;
    std::string commit = trim(head.output);
    if (commit.empty()) continue;
    const ProcessResult st =
        run_process({"git", "-C", dir, "status", "--porcelain", "--untracked-files=no"}, Stderr::discard);
    if (st.started && st.exit_code == 0 && !trim(st.output).empty()) commit += "-dirty";
    return commit;
  }
  return "unknown";
}

std::string shell_join(const std::vector<std::string>& argv) {
  std::string out;
  for (const std::string& a : argv) {
    if (!out.empty()) out += ' ';
    const bool plain = !a.empty() && a.find_first_not_of(
                                         "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                         "0123456789-_=./,:+@%") == std::string::npos;
    if (plain) {
      out += a;
    } else {
      out += '\'';
      for (char c : a) out += (c == '\'') ? std::string("'\\''") : std::string(1, c);
      out += '\'';
    }
  }
  return out;
}

}  // namespace cutelab
