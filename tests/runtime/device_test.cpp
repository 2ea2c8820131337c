#include <gtest/gtest.h>

#include <cstdlib>

#include <nlohmann/json.hpp>

#include "cutelab/core/error.hpp"
#include "cutelab/runtime/device.hpp"

namespace cutelab {
namespace {

const nlohmann::json& small_db_json() {
  static const nlohmann::json j = nlohmann::json::parse(R"({
    "schema": 1,
    "sm": {
      "sm_80": {"smem_per_sm": 167936, "smem_per_block_optin": 166912, "max_threads_per_sm": 2048,
                "peak_bandwidth_gbs": 2039, "peak_bf16_tflops": 312, "source": {"*": "test"}},
      "sm_90": {"smem_per_sm": 233472, "smem_per_block_optin": 232448, "max_threads_per_sm": 2048,
                "regs_per_sm": 65536, "max_regs_per_thread": 255,
                "peak_bandwidth_gbs": 3352, "peak_bf16_tflops": 989, "peak_fp8_tflops": 1979,
                "source": {"*": "test"}}
    },
    "products": {
      "NVIDIA H200": {"peak_bandwidth_gbs": 4800, "source": {"peak_bandwidth_gbs": "test"}}
    }
  })");
  return j;
}

LiveProperties live_sm(int major, int minor, const std::string& name = "Some GPU") {
  LiveProperties l;
  l.name = name;
  l.cc_major = major;
  l.cc_minor = minor;
  return l;
}

DeviceInfo device(int major, int minor, bool present = true) {
  DeviceInfo d;
  d.present = present;
  d.cc_major = major;
  d.cc_minor = minor;
  return d;
}

TEST(DeviceDb, SmEntryThenLiveValuesWin) {
  const DeviceDb db = DeviceDb::from_json(small_db_json());
  LiveProperties live = live_sm(9, 0, "NVIDIA H100 80GB HBM3");
  live.sm_count = 132;
  live.smem_per_block_optin = 232448;
  live.l2_bytes = 52428800;
  live.smem_per_sm = 0;  // not reported: the database value stays
  const DeviceInfo d = merge_device_info(db, live);
  EXPECT_TRUE(d.present);
  EXPECT_EQ(d.sm(), "sm_90");
  EXPECT_EQ(d.sm_count, 132);
  EXPECT_EQ(d.l2_bytes, 52428800u);
  EXPECT_EQ(d.smem_per_sm, 233472u);
  EXPECT_EQ(d.peak_bandwidth_gbs, 3352);
  EXPECT_EQ(d.peak_fp8_tflops, 1979);
  EXPECT_EQ(d.source.at("sm_count"), "live");
  EXPECT_EQ(d.source.at("smem_per_block_optin"), "live");
  EXPECT_EQ(d.source.at("smem_per_sm"), "db:sm_90");
  EXPECT_EQ(d.source.at("peak_bandwidth_gbs"), "db:sm_90");

  // A live value different from the database wins.
  live.smem_per_block_optin = 1000;
  EXPECT_EQ(merge_device_info(db, live).smem_per_block_optin, 1000u);
}

TEST(DeviceDb, ProductEntryOverridesTheSmDefaults) {
  const DeviceDb db = DeviceDb::from_json(small_db_json());
  const DeviceInfo d = merge_device_info(db, live_sm(9, 0, "NVIDIA H200"));
  EXPECT_EQ(d.peak_bandwidth_gbs, 4800);
  EXPECT_EQ(d.peak_bf16_tflops, 989);  // not in the product entry: the SM default
  EXPECT_EQ(d.source.at("peak_bandwidth_gbs"), "db:product:NVIDIA H200");
  EXPECT_EQ(d.source.at("peak_bf16_tflops"), "db:sm_90");
}

TEST(DeviceDb, UnknownSmFallsBackToTheClosestLowerMinorElseLiveOnly) {
  const DeviceDb db = DeviceDb::from_json(small_db_json());
  const DeviceInfo sm86 = merge_device_info(db, live_sm(8, 6));
  EXPECT_EQ(sm86.smem_per_block_optin, 166912u);  // sm_80's, for lack of an sm_86 entry
  EXPECT_EQ(sm86.source.at("smem_per_block_optin"), "db:sm_80 (for sm_86)");
  const DeviceInfo sm75 = merge_device_info(db, live_sm(7, 5));
  EXPECT_EQ(sm75.peak_bandwidth_gbs, 0);
  EXPECT_NE(sm75.source.at("db").find("no entry for sm_75"), std::string::npos);
}

TEST(DeviceDb, RejectsMalformedEntries) {
  nlohmann::json j = small_db_json();
  j["sm"]["sm_90"]["smem_per_sm"] = "lots";
  EXPECT_THROW(DeviceDb::from_json(j), Error);
  j = small_db_json();
  j["sm"]["sm_90"]["smem_per_sn"] = 5;  // a typo
  try {
    (void)DeviceDb::from_json(j);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("sm.sm_90.smem_per_sn"), std::string::npos) << e.message();
  }
  j = small_db_json();
  j["products"]["NVIDIA H200"]["peak_bf16_tflops"] = 1;  // no source note
  EXPECT_THROW(DeviceDb::from_json(j), Error);
  j = small_db_json();
  j["sm"]["hopper"] = nlohmann::json::object();
  EXPECT_THROW(DeviceDb::from_json(j), Error);
  EXPECT_THROW(DeviceDb::from_json(nlohmann::json::array()), Error);
}

TEST(DeviceDb, TheRealDatabaseLoads) {
  const DeviceDb db = DeviceDb::load(std::string(CUTELAB_SOURCE_DIR) + "/conf/devices.json");
  for (const char* sm : {"sm_80", "sm_90", "sm_100", "sm_120"}) {
    const std::vector<std::string> v = db.sm_versions();
    EXPECT_NE(std::find(v.begin(), v.end(), sm), v.end()) << sm;
  }
  const DeviceInfo a100 = merge_device_info(db, live_sm(8, 0, "NVIDIA A100-SXM4-80GB"));
  const DeviceInfo h100 = merge_device_info(db, live_sm(9, 0, "NVIDIA H100 80GB HBM3"));
  const DeviceInfo b200 = merge_device_info(db, live_sm(10, 0, "NVIDIA B200"));
  const DeviceInfo rtx = merge_device_info(db, live_sm(12, 0, "NVIDIA GeForce RTX 5090"));
  EXPECT_EQ(a100.smem_per_block_optin, 166912u);  // 163 KB
  EXPECT_EQ(h100.smem_per_sm, 228u * 1024);
  EXPECT_EQ(h100.smem_per_block_optin, 227u * 1024);
  EXPECT_EQ(b200.smem_per_block_optin, 227u * 1024);
  EXPECT_EQ(rtx.smem_per_sm, 100u * 1024);
  EXPECT_EQ(rtx.smem_per_block_optin, 99u * 1024);
  EXPECT_EQ(h100.regs_per_sm, 65536);
  EXPECT_EQ(h100.max_regs_per_thread, 255);
  EXPECT_EQ(h100.peak_bandwidth_gbs, 3352);
  EXPECT_EQ(h100.peak_bf16_tflops, 989);
  EXPECT_EQ(h100.peak_fp8_tflops, 1979);
  EXPECT_EQ(a100.peak_bandwidth_gbs, 2039);
  EXPECT_EQ(a100.peak_fp8_tflops, 0);
  const DeviceInfo h200 = merge_device_info(db, live_sm(9, 0, "NVIDIA H200"));
  EXPECT_EQ(h200.peak_bandwidth_gbs, 4800);
  EXPECT_EQ(h200.peak_bf16_tflops, 989);
  EXPECT_GT(b200.peak_fp8_tflops, 0);
  EXPECT_GT(rtx.peak_bandwidth_gbs, 0);
}

TEST(DeviceDb, LoadDefaultHonoursTheEnvironment) {
  setenv("CUTELAB_DEVICE_DB", (std::string(CUTELAB_SOURCE_DIR) + "/conf/devices.json").c_str(), 1);
  EXPECT_NE(DeviceDb::load_default().path().find("conf/devices.json"), std::string::npos);
  setenv("CUTELAB_DEVICE_DB", "/nonexistent/devices.json", 1);
  EXPECT_THROW(DeviceDb::load_default(), Error);
  unsetenv("CUTELAB_DEVICE_DB");
  EXPECT_NO_THROW(DeviceDb::load_default());  // the build's or the source tree's copy
}

TEST(ArchGate, StrAndParse) {
  EXPECT_EQ(parse_arch("sm_90a"), (ArchRequirement{9, 0, true}));
  EXPECT_EQ(parse_arch("sm_80+"), (ArchRequirement{8, 0, false}));
  EXPECT_EQ(parse_arch("sm_80"), (ArchRequirement{8, 0, false}));
  EXPECT_EQ(parse_arch("sm_100a"), (ArchRequirement{10, 0, true}));
  EXPECT_EQ(parse_arch("sm_120a").str(), "sm_120a");
  EXPECT_EQ((ArchRequirement{8, 0, false}).str(), "sm_80+");
  EXPECT_THROW((void)parse_arch("hopper"), UsageError);
  EXPECT_THROW((void)parse_arch("sm_9"), UsageError);
  EXPECT_THROW((void)parse_arch("sm_90x"), UsageError);
}

TEST(ArchGate, ExactVersusAtLeast) {
  const ArchRequirement sm90a{9, 0, true};
  const ArchRequirement sm80{8, 0, false};
  struct Case { int major, minor; bool runs_sm90a, runs_sm80; };
  for (const Case c : {Case{8, 0, false, true}, Case{8, 6, false, true}, Case{9, 0, true, true},
                       Case{10, 0, false, true}, Case{12, 0, false, true}, Case{7, 5, false, false}}) {
    const DeviceInfo d = device(c.major, c.minor);
    EXPECT_EQ(!arch_mismatch(sm90a, d), c.runs_sm90a) << d.sm();
    EXPECT_EQ(!arch_mismatch(sm80, d), c.runs_sm80) << d.sm();
  }
  EXPECT_EQ(arch_mismatch(sm90a, device(8, 0)).value(), "needs sm_90a, found sm_80");
  EXPECT_EQ(arch_mismatch(sm90a, device(10, 0)).value(), "needs sm_90a, found sm_100");
  EXPECT_EQ(arch_mismatch(sm80, device(7, 5)).value(), "needs sm_80+, found sm_75");
  EXPECT_EQ(arch_mismatch(sm80, device(0, 0, false)).value(), "no CUDA GPU found");
  EXPECT_EQ(arch_mismatch(sm90a, device(9, 0, false)).value(), "no CUDA GPU found");
}

TEST(Device, CountNeverThrows) {
  std::string why;
  const int n = cuda_device_count(&why);
  EXPECT_GE(n, 0);
  if (n == 0) EXPECT_NE(why.find("no CUDA GPU found"), std::string::npos) << why;
}

}  // namespace
}  // namespace cutelab
