#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "cutelab/runtime/clocks.hpp"
#include "cutelab/runtime/energy.hpp"
#include "cutelab/runtime/timing.hpp"

namespace cutelab {
namespace {

TEST(Timing, QuantilesInterpolateBetweenSortedSamples) {
  // 1..11 shuffled: median 6, p10 at position 1.0 -> 2, p90 at position 9.0 -> 10.
  const TimingStats s = summarize_samples({7, 3, 11, 1, 5, 9, 2, 10, 4, 8, 6});
  EXPECT_EQ(s.n, 11);
  EXPECT_DOUBLE_EQ(s.median_us, 6);
  EXPECT_DOUBLE_EQ(s.p10_us, 2);
  EXPECT_DOUBLE_EQ(s.p90_us, 10);
  EXPECT_DOUBLE_EQ(s.min_us, 1);
  EXPECT_DOUBLE_EQ(s.max_us, 11);
  EXPECT_DOUBLE_EQ(s.mean_us, 6);
  EXPECT_DOUBLE_EQ(s.stdev_us, std::sqrt(11.0));  // sum of squares 110 over n-1 = 10
  EXPECT_DOUBLE_EQ(s.rel_ci, 1.96 * std::sqrt(11.0) / std::sqrt(11.0) / 6);
  EXPECT_EQ(s.samples_us.front(), 7);  // kept in the order taken

  // Even count: median between the middle two; p10 at 0.3 of the way from 10 to 20.
  const TimingStats e = summarize_samples({40, 10, 30, 20});
  EXPECT_DOUBLE_EQ(e.median_us, 25);
  EXPECT_DOUBLE_EQ(e.p10_us, 13);
  EXPECT_DOUBLE_EQ(e.p90_us, 37);

  const TimingStats one = summarize_samples({5});
  EXPECT_EQ(one.median_us, 5);
  EXPECT_EQ(one.stdev_us, 0);
  EXPECT_EQ(summarize_samples({}).n, 0);
}

TEST(Timing, SamplingStopsOnConvergenceTimeCapOrSampleCap) {
  TimingOptions o;
  o.min_samples = 20;
  o.max_samples = 100;
  o.max_seconds = 1.0;
  o.target_rel_ci = 0.005;
  std::string why;
  // Identical samples converge, but never before min_samples.
  EXPECT_FALSE(sampling_done(std::vector<double>(19, 10.0), 0.1, o, &why));
  EXPECT_TRUE(sampling_done(std::vector<double>(20, 10.0), 0.1, o, &why));
  EXPECT_EQ(why, "converged");
  // Even past the time cap, fewer than min_samples is not enough.
  EXPECT_FALSE(sampling_done(std::vector<double>(5, 10.0), 5.0, o, &why));

  // Noisy samples (alternating 5 and 15: rel CI ~ 0.22 at n = 20) run to a cap.
  std::vector<double> noisy;
  for (int i = 0; i < 20; ++i) noisy.push_back(i % 2 ? 15.0 : 5.0);
  EXPECT_FALSE(sampling_done(noisy, 0.5, o, &why));
  EXPECT_TRUE(sampling_done(noisy, 1.0, o, &why));
  EXPECT_EQ(why, "time cap");
  for (int i = 20; i < 100; ++i) noisy.push_back(i % 2 ? 15.0 : 5.0);
  EXPECT_TRUE(sampling_done(noisy, 0.5, o, &why));
  EXPECT_EQ(why, "sample cap");

  // A cap below the floor wins.
  o.max_samples = 10;
  EXPECT_TRUE(sampling_done(std::vector<double>{1, 9, 1, 9, 1, 9, 1, 9, 1, 9}, 0.0, o, &why));
  EXPECT_EQ(why, "sample cap");
}

TEST(Timing, RotatingSetCountCoversThreeL2sWithinMemory) {
  constexpr double MiB = 1024.0 * 1024.0, GiB = 1024.0 * MiB;
  const double l2 = 50 * MiB, plenty = 100 * GiB, margin = 4 * GiB;
  EXPECT_EQ(rotating_set_count(l2, 10 * MiB, plenty, margin), 15);  // ceil(150 / 10)
  EXPECT_EQ(rotating_set_count(l2, 11 * MiB, plenty, margin), 14);  // ceil(150 / 11) = 14
  EXPECT_EQ(rotating_set_count(l2, 1 * MiB, plenty, margin), 32);   // at most 32
  EXPECT_EQ(rotating_set_count(l2, 600 * MiB, plenty, margin), 2);  // at least 2
  EXPECT_EQ(rotating_set_count(l2, 0, plenty, margin), 32);         // nothing measured: the most
  // Memory: sets beyond the two made must fit in free - margin.
  EXPECT_EQ(rotating_set_count(l2, 10 * MiB, margin + 35 * MiB, margin), 5);  // 2 + 3
  EXPECT_EQ(rotating_set_count(l2, 10 * MiB, margin + 5 * MiB, margin), 2);
  EXPECT_EQ(rotating_set_count(l2, 10 * MiB, margin / 2, margin), 2);  // never below 2
}

TEST(Timing, ModesParseByName) {
  for (TimingMode m : {TimingMode::flush, TimingMode::rotating, TimingMode::both})
    EXPECT_EQ(parse_timing_mode(timing_mode_name(m)), m);
  EXPECT_FALSE(parse_timing_mode("Flush"));
  EXPECT_FALSE(parse_timing_mode(""));
  EXPECT_TRUE(times_flush(TimingMode::both) && times_rotating(TimingMode::both));
  EXPECT_FALSE(times_rotating(TimingMode::flush));
  EXPECT_FALSE(times_flush(TimingMode::rotating));
}

TEST(Clocks, ParseNvidiaSmiLines) {
  const auto r = parse_clock_line("1755, 2619, 1980, 345.67, 61");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->sm_mhz, 1755);
  EXPECT_EQ(r->mem_mhz, 2619);
  EXPECT_EQ(r->sm_max_mhz, 1980);
  EXPECT_DOUBLE_EQ(r->power_w, 345.67);
  EXPECT_EQ(r->temperature_c, 61);
  const auto na = parse_clock_line("1410, 1593, 1410, [N/A], 40\n");
  ASSERT_TRUE(na);
  EXPECT_EQ(na->power_w, 0);
  EXPECT_FALSE(parse_clock_line(""));
  EXPECT_FALSE(parse_clock_line("1755, 2619"));
  EXPECT_FALSE(parse_clock_line("No devices were found"));
  EXPECT_FALSE(parse_clock_line("fast, 2619, 1980, 300, 60"));
  EXPECT_FALSE(na->event_reasons);
}

TEST(Clocks, ParsesTheDriversSlowdownReasons) {
  const auto capped = parse_clock_line("1710, 3201, 1980, 522.21, 58, 0x0000000000000004");
  ASSERT_TRUE(capped);
  EXPECT_EQ(capped->sm_mhz, 1710);
  ASSERT_TRUE(capped->event_reasons);
  EXPECT_EQ(*capped->event_reasons, kSwPowerCap);
  const auto idle = parse_clock_line("345, 3201, 1980, 90.8, 36, 0x0000000000000001\n");
  ASSERT_TRUE(idle);
  EXPECT_EQ(*idle->event_reasons, 0x1u);
  const auto unsupported = parse_clock_line("1980, 3201, 1980, 300, 40, [N/A]");
  ASSERT_TRUE(unsupported);
  EXPECT_FALSE(unsupported->event_reasons);
  EXPECT_FALSE(parse_clock_line("1980, 3201, 1980, 300, 40, Active"));
  EXPECT_FALSE(parse_clock_line("1980, 3201, 1980, 300, 40, 0x4g"));
  EXPECT_FALSE(parse_clock_line("1980, 3201, 1980, 300, 40, 0x4, 7"));
  EXPECT_EQ(slowdown_names(kSwPowerCap | kHwThermal | 0x1), "SW power cap, HW thermal slowdown");
  EXPECT_EQ(slowdown_names(0x1 | 0x10), "");
}

TEST(Clocks, SummaryCountsSlowedReadings) {
  ClockReading cool{1980, 3201, 1980, 300, 40, std::uint64_t{0}};
  ClockReading idle{1980, 3201, 1980, 90, 36, std::uint64_t{0x1}};  // idle is no slowdown
  ClockReading capped{1710, 3201, 1980, 520, 58, kSwPowerCap};
  ClockReading braked{1650, 3201, 1980, 560, 59, kHwPowerBrake | kSwPowerCap};
  ClockReading silent{1700, 3201, 1980, 500, 57, std::nullopt};  // the driver gave no reasons
  const ClockSummary s = summarize_clocks({cool, idle, capped, braked, silent});
  EXPECT_EQ(s.samples, 5);
  EXPECT_EQ(s.reason_samples, 4);
  EXPECT_EQ(s.slowed_samples, 2);
  EXPECT_EQ(s.slowdowns_seen, kSwPowerCap | kHwPowerBrake);
  EXPECT_NE(s.str().find("SW power cap, HW power brake in 2 of 4 samples"), std::string::npos) << s.str();
  EXPECT_EQ(s.brief(), "1650-1980 slow 2/4");
  const nlohmann::json j = s.to_json();
  EXPECT_EQ(j.at("slowed_samples"), 2);
  EXPECT_EQ(j.at("slowdown_bits").get<std::uint64_t>(), kSwPowerCap | kHwPowerBrake);
  const ClockSummary steady = summarize_clocks({cool, cool});
  EXPECT_EQ(steady.brief(), "1980");
  EXPECT_NE(steady.str().find("no slowdown"), std::string::npos) << steady.str();
  EXPECT_EQ(summarize_clocks({silent}).str().find("slowdown"), std::string::npos);
}

TEST(Clocks, SummaryAndString) {
  const ClockSummary s = summarize_clocks({{1650, 2619, 1980, 300, 55}, {1755, 2619, 1980, 345, 61},
                                           {1980, 2619, 1980, 320, 58}});
  EXPECT_TRUE(s.available);
  EXPECT_EQ(s.samples, 3);
  EXPECT_EQ(s.sm_mhz_min, 1650);
  EXPECT_EQ(s.sm_mhz_median, 1755);
  EXPECT_EQ(s.sm_mhz_max, 1980);
  EXPECT_EQ(s.mem_mhz_median, 2619);
  EXPECT_EQ(s.temperature_c_max, 61);
  EXPECT_EQ(s.str().rfind("SM 1755 MHz (1650-1980)", 0), 0u) << s.str();
  EXPECT_NE(s.str().find("mem 2619 MHz"), std::string::npos) << s.str();
  EXPECT_FALSE(summarize_clocks({}).available);
}

class FakeSmi : public ::testing::Test {
 protected:
  void SetUp() override {
    script = std::filesystem::temp_directory_path() / ("cutelab-fake-smi-" + std::to_string(::getpid()));
  }
  void TearDown() override {
    unsetenv("CUTELAB_NVIDIA_SMI");
    std::filesystem::remove(script);
  }
  void install(const std::string& body) {
    std::ofstream(script) << "#!/bin/sh\n" << body << "\n";
    std::filesystem::permissions(script, std::filesystem::perms::owner_all);
    setenv("CUTELAB_NVIDIA_SMI", script.c_str(), 1);
  }
  std::filesystem::path script;
};

TEST_F(FakeSmi, MissingNvidiaSmiIsUnavailableNotAnError) {
  setenv("CUTELAB_NVIDIA_SMI", "/nonexistent/nvidia-smi", 1);
  std::string why;
  EXPECT_FALSE(read_clocks(0, &why));
  EXPECT_NE(why.find("nvidia-smi not found"), std::string::npos) << why;
  ClockSampler sampler(0, 10);
  sampler.start();
  const ClockSummary s = sampler.stop();
  EXPECT_FALSE(s.available);
  EXPECT_NE(s.why_unavailable.find("nvidia-smi not found"), std::string::npos) << s.why_unavailable;
  EXPECT_NE(s.str().find("not recorded"), std::string::npos);
}

TEST_F(FakeSmi, SamplerCollectsReadings) {
  install("echo '1500, 2619, 1980, 250.5, 50'");
  const auto r = read_clocks(0);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->sm_mhz, 1500);
  ClockSampler sampler(0, 5);
  sampler.start();
  usleep(100 * 1000);
  const ClockSummary s = sampler.stop();
  EXPECT_TRUE(s.available) << s.why_unavailable;
  EXPECT_GE(s.samples, 1);
  EXPECT_EQ(s.sm_mhz_median, 1500);
}

TEST_F(FakeSmi, ReasonsFieldFallsBackToTheOlderNameAndThenToNone) {
  // An R5xx driver before R535 knows only clocks_throttle_reasons.active.
  install(
      "case \"$*\" in *clocks_event_reasons*) echo 'Field \"clocks_event_reasons.active\" is not a valid "
      "field to query.'; exit 2;; *clocks_throttle_reasons*) echo '1650, 2619, 1980, 600.5, 70, "
      "0x0000000000000004';; *) echo '1650, 2619, 1980, 600.5, 70';; esac");
  auto r = read_clocks(0);
  ASSERT_TRUE(r);
  ASSERT_TRUE(r->event_reasons);
  EXPECT_EQ(*r->event_reasons, kSwPowerCap);
  ClockSampler sampler(0, 5);
  sampler.start();
  usleep(100 * 1000);
  const ClockSummary s = sampler.stop();
  ASSERT_TRUE(s.available) << s.why_unavailable;
  EXPECT_EQ(s.slowed_samples, s.samples);
  // A driver that knows neither name: the clocks are still read, without reasons.
  install(
      "case \"$*\" in *reasons*) echo 'Field is not a valid field to query.'; exit 2;; "
      "*) echo '1500, 2619, 1980, 250.5, 50';; esac");
  r = read_clocks(0);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->sm_mhz, 1500);
  EXPECT_FALSE(r->event_reasons);
}

TEST_F(FakeSmi, FailingNvidiaSmiSaysWhy) {
  install("echo 'NVIDIA-SMI has failed because it could not communicate with the NVIDIA driver.'; exit 9");
  std::string why;
  EXPECT_FALSE(nvidia_smi_query(0, "driver_version", &why));
  EXPECT_NE(why.find("exit 9"), std::string::npos) << why;
  EXPECT_NE(why.find("could not communicate"), std::string::npos) << why;
}

}  // namespace
}  // namespace cutelab

namespace cutelab {
namespace {

// Joules a call from the counter's two readings: only over a loop long enough for its resolution.
TEST(Energy, JoulesPerCallOverALongEnoughLoop) {
  const std::optional<EnergyReading> e = energy_over(10'000, 10'450, 1.5, 1000);  // 450 mJ, 1.5 s, 1000 calls
  ASSERT_TRUE(e);
  EXPECT_DOUBLE_EQ(e->joules_per_call, 0.45 / 1000);
  EXPECT_DOUBLE_EQ(e->mean_watts, 0.3);
  EXPECT_FALSE(energy_over(10'000, 10'450, kEnergyMinSeconds / 2, 1000));  // too short to mean anything
  EXPECT_FALSE(energy_over(10'000, 10'000, 1.5, 1000));                    // the counter did not move
  EXPECT_FALSE(energy_over(10'450, 10'000, 1.5, 1000));                    // nor backwards
  EXPECT_FALSE(energy_over(10'000, 10'450, 1.5, 0));
}

// A meter finished at once has no figure and says why: no counter here, or a loop far under the floor.
TEST(Energy, MeterOverAnInstantSaysWhyNot) {
  const EnergyMeter meter(0);
  const EnergyMeter::Result r = meter.finish(10, "--min-samples");
  EXPECT_FALSE(r.reading);
  const bool no_counter = r.note.rfind("no energy counter: ", 0) == 0;
  const bool too_short = r.note.find("raise --min-samples") != std::string::npos;
  EXPECT_TRUE(no_counter != too_short) << r.note;
  EXPECT_EQ(no_counter, !EnergyCounter::of(0).available()) << r.note;
}

}  // namespace
}  // namespace cutelab
