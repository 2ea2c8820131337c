#pragma once
// The tuning cache: winners keyed by kernel, problem and the exact device/software stack.
// A corrupt file is reported and rebuilt, never trusted; writes are atomic and serialized
// with an advisory lock so concurrent processes neither corrupt it nor lose entries.

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace cutelab {

struct TuneKey {
  std::string kernel;   // "cute/mla_decode/paged_sm90/v1"
  std::string problem;  // Problem::key()
  std::string device;   // device name
  std::string sm;       // "sm_90"
  std::string cuda_runtime;
  std::string driver;
  std::string timing;  // the figure the winner was ranked by: "" = flush (the lab method), "rotating"

  [[nodiscard]] std::string str() const;
};

struct TuneEntry {
  std::string config;
  double median_us = 0;
  std::string recorded_at;  // ISO 8601 UTC
  nlohmann::json extra;     // anything worth keeping (runners-up, clocks)
};

class TuneCache {
 public:
  // Default location: $CUTELAB_CACHE_DIR, else $XDG_CACHE_HOME/cutelab, else ~/.cache/cutelab.
  [[nodiscard]] static std::string default_dir();
  explicit TuneCache(std::string path);  // the JSON file; created on first store()

  [[nodiscard]] std::optional<TuneEntry> lookup(const TuneKey& key);
  void store(const TuneKey& key, const TuneEntry& entry);
  // Problems met while reading the file (corrupt JSON, wrong schema), each a full sentence.
  [[nodiscard]] const std::vector<std::string>& warnings() const noexcept { return warnings_; }
  [[nodiscard]] const std::string& path() const noexcept { return path_; }

 private:
  nlohmann::json read_locked_file();
  std::string path_;
  std::vector<std::string> warnings_;
};

// Atomic JSON file write: temp file in the same folder, fsync, rename.
void write_json_atomic(const std::string& path, const nlohmann::json& j);
// Now, as ISO 8601 UTC: "2025-06-01T12:34:56Z".
[[nodiscard]] std::string utc_timestamp();

}  // namespace cutelab
