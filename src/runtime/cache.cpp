#include "cutelab/runtime/cache.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cutelab/core/error.hpp"
#include "fileutil.hpp"

namespace cutelab {
namespace detail {

FileLock::FileLock(const std::string& path) {
  create_parent_dirs(path);
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) throw Error(concat("cannot open lock file ", path, ": ", std::strerror(errno)));
  while (::flock(fd_, LOCK_EX) != 0) {
    if (errno == EINTR) continue;
    const int err = errno;
    ::close(fd_);
    throw Error(concat("cannot lock ", path, ": ", std::strerror(err)));
  }
}

FileLock::~FileLock() {
  if (fd_ >= 0) {
    ::flock(fd_, LOCK_UN);
    ::close(fd_);
  }
}

bool read_file(const std::string& path, std::string* text) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    if (errno == ENOENT || !std::filesystem::exists(path)) return false;
    throw Error(concat("cannot read ", path, ": ", std::strerror(errno)));
  }
  std::ostringstream buf;
  buf << in.rdbuf();
  *text = buf.str();
  return true;
}

void create_parent_dirs(const std::string& path) {
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  if (parent.empty()) return;
  std::error_code ec;
  std::filesystem::create_directories(parent, ec);
  if (ec) throw Error(concat("cannot create folder ", parent.string(), ": ", ec.message()));
}

}  // namespace detail

namespace {

constexpr int kSchema = 1;

nlohmann::json empty_cache() { return {{"schema", kSchema}, {"entries", nlohmann::json::object()}}; }

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

nlohmann::json entry_to_json(const TuneKey& key, const TuneEntry& e) {
  return {{"config", e.config},
          {"median_us", e.median_us},
          {"recorded_at", e.recorded_at.empty() ? utc_now() : e.recorded_at},
          {"extra", e.extra},
          {"key",
           {{"kernel", key.kernel},
            {"problem", key.problem},
            {"device", key.device},
            {"sm", key.sm},
            {"cuda_runtime", key.cuda_runtime},
            {"driver", key.driver},
            {"timing", key.timing.empty() ? "flush" : key.timing}}}};
}

}  // namespace

std::string utc_timestamp() { return utc_now(); }

std::string TuneKey::str() const {
  // A flush winner keeps the key it had before the rotating basis existed.
  return concat(kernel, '|', problem, '|', device, '|', sm, '|', cuda_runtime, '|', driver,
                timing.empty() ? "" : "|timing=", timing);
}

std::string TuneCache::default_dir() {
  if (const char* d = std::getenv("CUTELAB_CACHE_DIR"); d && *d) return d;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::string(x) + "/cutelab";
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.cache/cutelab";
  return concat("/tmp/cutelab-cache-", ::getuid());
}

TuneCache::TuneCache(std::string path) : path_(std::move(path)) {}

// Called with the lock held: a corrupt file is moved aside only by one process, and only
// after this re-read confirmed it is still corrupt.
nlohmann::json TuneCache::read_locked_file() {
  std::string text;
  try {
    if (!detail::read_file(path_, &text)) return empty_cache();
  } catch (const Error& e) {
    warnings_.push_back(concat("the tuning cache could not be read (", e.message(), "); tuning results are not reused."));
    return empty_cache();
  }
  std::string problem;
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(text);
    if (!doc.is_object()) problem = "the top level is not an object";
    else if (!doc.contains("schema") || doc.at("schema") != kSchema)
      problem = concat("schema ", doc.contains("schema") ? doc.at("schema").dump() : "missing", ", expected ", kSchema);
    else if (!doc.contains("entries") || !doc.at("entries").is_object())
      problem = "no \"entries\" object";
  } catch (const nlohmann::json::exception& e) {
    problem = e.what();
  }
  if (problem.empty()) return doc;

  const std::string aside = concat(path_, ".corrupt-", std::time(nullptr));
  std::error_code ec;
  std::filesystem::rename(path_, aside, ec);
  warnings_.push_back(ec ? concat("The tuning cache ", path_, " is unusable (", problem,
                                  ") and could not be moved aside (", ec.message(), "); it is ignored and will be rewritten.")
                         : concat("The tuning cache ", path_, " is unusable (", problem, "); moved it to ", aside,
                                  " and starting from an empty cache."));
  return empty_cache();
}

std::optional<TuneEntry> TuneCache::lookup(const TuneKey& key) {
  if (!std::filesystem::exists(path_)) return std::nullopt;
  nlohmann::json doc;
  try {
    detail::FileLock lock(path_ + ".lock");
    doc = read_locked_file();
  } catch (const Error& e) {
    warnings_.push_back(concat("The tuning cache ", path_, " could not be locked (", e.message(), "); not used."));
    return std::nullopt;
  }
  const nlohmann::json& entries = doc.at("entries");
  auto it = entries.find(key.str());
  if (it == entries.end()) return std::nullopt;
  const nlohmann::json& e = *it;
  if (!e.is_object() || !e.contains("config") || !e.at("config").is_string()) {
    warnings_.push_back(concat("The tuning cache ", path_, " holds a malformed entry for ", key.str(), "; ignored."));
    return std::nullopt;
  }
  TuneEntry out;
  out.config = e.at("config").get<std::string>();
  out.median_us = e.value("median_us", 0.0);
  out.recorded_at = e.value("recorded_at", std::string());
  out.extra = e.value("extra", nlohmann::json());
  return out;
}

void TuneCache::store(const TuneKey& key, const TuneEntry& entry) {
  detail::FileLock lock(path_ + ".lock");
  nlohmann::json doc = read_locked_file();
  doc["schema"] = kSchema;
  doc["entries"][key.str()] = entry_to_json(key, entry);
  write_json_atomic(path_, doc);
}

void write_json_atomic(const std::string& path, const nlohmann::json& j) {
  detail::create_parent_dirs(path);
  std::random_device rd;
  char suffix[16];
  std::snprintf(suffix, sizeof(suffix), "%08x", static_cast<unsigned>(rd()));
  const std::string tmp = concat(path, ".tmp-", ::getpid(), '-', suffix);
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) throw Error(concat("cannot create ", tmp, ": ", std::strerror(errno)));
  const std::string text = j.dump(2) + "\n";
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      throw Error(concat("cannot write ", tmp, ": ", std::strerror(err)));
    }
    done += static_cast<std::size_t>(n);
  }
  // Data on disk before the rename makes it visible: a crash leaves the old file or the new.
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    throw Error(concat("cannot flush ", tmp, ": ", std::strerror(err)));
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    throw Error(concat("cannot rename ", tmp, " to ", path, ": ", std::strerror(err)));
  }
  const std::string dir = std::filesystem::path(path).parent_path().string();
  if (const int dfd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); dfd >= 0) {
    (void)::fsync(dfd);
    ::close(dfd);
  }
}

}  // namespace cutelab
