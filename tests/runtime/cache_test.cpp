#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "cutelab/runtime/cache.hpp"

namespace cutelab {
namespace {

namespace fs = std::filesystem;

class CacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir = fs::temp_directory_path() /
          ("cutelab-cache-test-" + std::to_string(::getpid()) + "-" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir);
    path = (dir / "nested" / "tune.json").string();  // parent folders do not exist yet
  }
  void TearDown() override { fs::remove_all(dir); }

  static TuneKey key(const std::string& problem) {
    return TuneKey{"cute/rmsnorm/rowwise/v1", problem, "NVIDIA H100 80GB HBM3", "sm_90", "13.0", "580.65.06"};
  }
  void write_raw(const std::string& text) const {
    fs::create_directories(fs::path(path).parent_path());
    std::ofstream(path) << text;
  }
  std::vector<fs::path> corrupt_copies() const {
    std::vector<fs::path> out;
    for (const auto& e : fs::directory_iterator(fs::path(path).parent_path()))
      if (e.path().filename().string().find("tune.json.corrupt-") == 0) out.push_back(e.path());
    return out;
  }

  fs::path dir;
  std::string path;
};

TEST_F(CacheTest, RoundTrip) {
  TuneCache cache(path);
  EXPECT_FALSE(cache.lookup(key("rows=1")));
  cache.store(key("rows=1"), TuneEntry{"rows4_vec8", 12.5, "2025-01-01T00:00:00Z", {{"runners_up", {"a", "b"}}}});
  cache.store(key("rows=2"), TuneEntry{"rows8_vec8", 20.0, "", nullptr});

  TuneCache again(path);
  const auto e = again.lookup(key("rows=1"));
  ASSERT_TRUE(e);
  EXPECT_EQ(e->config, "rows4_vec8");
  EXPECT_EQ(e->median_us, 12.5);
  EXPECT_EQ(e->recorded_at, "2025-01-01T00:00:00Z");
  EXPECT_EQ(e->extra.at("runners_up").size(), 2u);
  const auto e2 = again.lookup(key("rows=2"));
  ASSERT_TRUE(e2);
  EXPECT_EQ(e2->recorded_at.size(), 20u);  // filled in: "YYYY-MM-DDTHH:MM:SSZ"
  EXPECT_TRUE(again.warnings().empty());

  // Every part of the key matters: another driver is another entry.
  TuneKey other = key("rows=1");
  other.driver = "575.00";
  EXPECT_FALSE(again.lookup(other));

  // Overwrite.
  again.store(key("rows=1"), TuneEntry{"rows2_vec4", 11.0, "", nullptr});
  EXPECT_EQ(TuneCache(path).lookup(key("rows=1"))->config, "rows2_vec4");

  std::ifstream in(path);
  const nlohmann::json doc = nlohmann::json::parse(in);
  EXPECT_EQ(doc.at("schema"), 1);
  EXPECT_TRUE(doc.at("entries").contains(key("rows=2").str()));
}

// Winners ranked by the rotating figure are entries of their own; a flush key reads as it did
// before the basis was part of the key, so caches written then are still found.
TEST_F(CacheTest, TheRankingFigureIsPartOfTheKey) {
  const TuneKey flush = key("rows=1");
  TuneKey rotating = flush;
  rotating.timing = "rotating";
  EXPECT_EQ(flush.str(), "cute/rmsnorm/rowwise/v1|rows=1|NVIDIA H100 80GB HBM3|sm_90|13.0|580.65.06");
  EXPECT_EQ(rotating.str(), flush.str() + "|timing=rotating");

  TuneCache cache(path);
  cache.store(flush, TuneEntry{"rows4_vec8", 12.5, "", nullptr});
  EXPECT_FALSE(cache.lookup(rotating));
  cache.store(rotating, TuneEntry{"rows8_vec8", 9.5, "", nullptr});
  EXPECT_EQ(cache.lookup(flush)->config, "rows4_vec8");
  EXPECT_EQ(cache.lookup(rotating)->config, "rows8_vec8");
  std::ifstream in(path);
  const nlohmann::json doc = nlohmann::json::parse(in);
  EXPECT_EQ(doc.at("entries").at(flush.str()).at("key").at("timing"), "flush");
  EXPECT_EQ(doc.at("entries").at(rotating.str()).at("key").at("timing"), "rotating");
}

TEST_F(CacheTest, CorruptFileIsReportedMovedAsideAndRebuilt) {
  write_raw("{\"schema\": 1, \"entries\": {\"x\": ");  // truncated
  TuneCache cache(path);
  EXPECT_FALSE(cache.lookup(key("rows=1")));
  ASSERT_EQ(cache.warnings().size(), 1u);
  const std::string& w = cache.warnings()[0];
  EXPECT_NE(w.find(path), std::string::npos) << w;
  EXPECT_NE(w.find("parse error"), std::string::npos) << w;
  EXPECT_NE(w.find("moved it to"), std::string::npos) << w;
  EXPECT_FALSE(fs::exists(path));
  EXPECT_EQ(corrupt_copies().size(), 1u);

  cache.store(key("rows=1"), TuneEntry{"rows4_vec8", 1.0, "", nullptr});
  TuneCache fresh(path);
  ASSERT_TRUE(fresh.lookup(key("rows=1")));
  EXPECT_TRUE(fresh.warnings().empty());
}

TEST_F(CacheTest, WrongSchemaIsNotTrusted) {
  write_raw(R"({"schema": 7, "entries": {}})");
  TuneCache cache(path);
  EXPECT_FALSE(cache.lookup(key("rows=1")));
  ASSERT_EQ(cache.warnings().size(), 1u);
  EXPECT_NE(cache.warnings()[0].find("schema 7, expected 1"), std::string::npos) << cache.warnings()[0];
  EXPECT_EQ(corrupt_copies().size(), 1u);

  write_raw(R"([1, 2, 3])");
  TuneCache array(path);
  EXPECT_FALSE(array.lookup(key("rows=1")));
  EXPECT_EQ(array.warnings().size(), 1u);
}

TEST_F(CacheTest, StoreOverACorruptFileKeepsOnlyGoodData) {
  write_raw("garbage");
  TuneCache cache(path);
  cache.store(key("rows=3"), TuneEntry{"c", 3.0, "", nullptr});
  EXPECT_EQ(cache.warnings().size(), 1u);
  std::ifstream in(path);
  const nlohmann::json doc = nlohmann::json::parse(in);
  EXPECT_EQ(doc.at("entries").size(), 1u);
}

TEST_F(CacheTest, ConcurrentWritersLoseNothing) {
  constexpr int kWriters = 8, kKeys = 12, kRounds = 3;
  std::vector<pid_t> children;
  for (int w = 0; w < kWriters; ++w) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      int rc = 0;
      try {
        TuneCache cache(path);
        for (int r = 0; r < kRounds; ++r)
          for (int k = 0; k < kKeys; ++k)
            cache.store(key("w=" + std::to_string(w) + ",k=" + std::to_string(k)),
                        TuneEntry{"cfg" + std::to_string(r), static_cast<double>(r), "", nullptr});
        if (!cache.warnings().empty()) rc = 3;
      } catch (...) {
        rc = 2;
      }
      ::_exit(rc);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0) << "a writer failed or saw a corrupt file";
  }
  std::ifstream in(path);
  nlohmann::json doc;
  ASSERT_NO_THROW(doc = nlohmann::json::parse(in));
  EXPECT_EQ(doc.at("entries").size(), static_cast<std::size_t>(kWriters * kKeys));
  TuneCache cache(path);
  for (int w = 0; w < kWriters; ++w)
    for (int k = 0; k < kKeys; ++k) {
      const auto e = cache.lookup(key("w=" + std::to_string(w) + ",k=" + std::to_string(k)));
      ASSERT_TRUE(e) << w << "," << k;
      EXPECT_EQ(e->config, "cfg" + std::to_string(kRounds - 1));
    }
  for (const auto& e : fs::directory_iterator(fs::path(path).parent_path()))
    EXPECT_EQ(e.path().filename().string().find(".tmp-"), std::string::npos) << "left behind: " << e.path();
  EXPECT_TRUE(corrupt_copies().empty());
}

TEST(CacheDir, DefaultFollowsTheEnvironment) {
  const char* saved = std::getenv("CUTELAB_CACHE_DIR");
  const std::string keep = saved ? saved : "";
  setenv("CUTELAB_CACHE_DIR", "/some/where", 1);
  EXPECT_EQ(TuneCache::default_dir(), "/some/where");
  unsetenv("CUTELAB_CACHE_DIR");
  setenv("XDG_CACHE_HOME", "/xdg", 1);
  EXPECT_EQ(TuneCache::default_dir(), "/xdg/cutelab");
  unsetenv("XDG_CACHE_HOME");
  setenv("HOME", "/home/me", 1);
  EXPECT_EQ(TuneCache::default_dir(), "/home/me/.cache/cutelab");
  if (saved) setenv("CUTELAB_CACHE_DIR", keep.c_str(), 1);
}

TEST(WriteJsonAtomic, ReplacesTheFileWhole) {
  const fs::path p = fs::temp_directory_path() / ("cutelab-atomic-" + std::to_string(::getpid())) / "x.json";
  write_json_atomic(p.string(), {{"a", 1}});
  write_json_atomic(p.string(), {{"b", 2}});
  std::ifstream in(p);
  EXPECT_EQ(nlohmann::json::parse(in), (nlohmann::json{{"b", 2}}));
  fs::remove_all(p.parent_path());
}

}  // namespace
}  // namespace cutelab
