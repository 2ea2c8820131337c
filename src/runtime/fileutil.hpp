#pragma once
// File helpers shared by the tuning cache and the ceilings cache (private to src/runtime).

#include <string>

namespace cutelab::detail {

// An exclusive flock() on `<path>` held for the object's lifetime; creates the file and its
// folder. Throws Error naming the path when the lock cannot be taken.
class FileLock {
 public:
  explicit FileLock(const std::string& path);
  ~FileLock();
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  int fd_ = -1;
};

// The whole file, or nothing when it does not exist; throws Error when it cannot be read.
[[nodiscard]] bool read_file(const std::string& path, std::string* text);
void create_parent_dirs(const std::string& path);

}  // namespace cutelab::detail
