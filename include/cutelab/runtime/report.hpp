#pragma once
// Terminal tables and number formatting shared by every command.

#include <optional>
#include <string>
#include <vector>

#include "cutelab/runtime/tuner.hpp"

namespace cutelab {

class Table {
 public:
  enum class Align { left, right };
  void add_column(std::string header, Align align = Align::right);
  void add_row(std::vector<std::string> cells);
  [[nodiscard]] std::string render() const;  // aligned, with a header rule

 private:
  std::vector<std::string> headers_;
  std::vector<Align> aligns_;
  std::vector<std::vector<std::string>> rows_;
};

[[nodiscard]] std::string format_fixed(double v, int digits);
[[nodiscard]] std::string format_bytes(double bytes);  // "1.50 GiB"
[[nodiscard]] std::string format_percent(double fraction);  // "87.3%"

// The report of one run: what ran, its check, its numbers against the ceilings.
[[nodiscard]] std::string render_run(const RunResult& r);
// One row per run, for suites.
[[nodiscard]] std::string render_suite(const std::vector<RunResult>& runs);

// A published time for the same problem on the same device, to compare with (suite files carry
// them per device name, each with its source), and which of the lab's figures it was taken as.
struct Anchor {
  double us = 0;
  std::string source;
  bool rotating = false;  // taken as the rotating figure; else as the flush (primary) one
};
// As above, with an anchor per run (nothing where none exists for this device): adds the
// anchor's µs and the speedup anchor / ours, ours being the figure of the anchor's kind ("-" where
// the run did not take it: a flush anchor is never set against a rotating time). Rotating anchors
// get columns of their own.
[[nodiscard]] std::string render_suite(const std::vector<RunResult>& runs,
                                       const std::vector<std::optional<Anchor>>& anchors);
// A run's anchors: at most one of each kind.
using RowAnchors = std::vector<Anchor>;

// Each run's time against the fastest baseline-tier kernel (id "baseline/...") of the same case
// in the same run: best baseline µs / this run's µs (> 1: faster than the best baseline), on the
// figure rates use. Nothing for a run whose case has no measured baseline. `case_of[i]` is run
// i's case.
[[nodiscard]] std::vector<std::optional<double>> vs_best_baseline(const std::vector<RunResult>& runs,
                                                                  const std::vector<std::size_t>& case_of);
// As above, with a "vs best baseline" column when some run has that ratio.
[[nodiscard]] std::string render_suite(const std::vector<RunResult>& runs,
                                       const std::vector<std::optional<Anchor>>& anchors,
                                       const std::vector<std::size_t>& case_of);
[[nodiscard]] std::string render_suite(const std::vector<RunResult>& runs,
                                       const std::vector<RowAnchors>& anchors,
                                       const std::vector<std::size_t>& case_of);

// A progress line on stderr, rewritten in place on a terminal, one line per update otherwise.
class ProgressLine {
 public:
  ProgressLine();
  void update(const std::string& text);
  void done();
  [[nodiscard]] ProgressFn fn();

 private:
  bool tty_;
  std::size_t last_len_ = 0;
  std::string last_text_;    // off a terminal: repeated updates are dropped
  double last_print_s_ = 0;  // and a burst of updates on one step is thinned out
};

}  // namespace cutelab
