// Progress display and metrics files for the trainer (internal).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace headgrad::train::detail {

// A one-line progress bar on a terminal (redrawn at most every 0.1 s), or plain lines every
// `line_every` steps when stderr is not a terminal.
class Progress {
 public:
  Progress(std::int64_t first_step, std::int64_t total_steps, std::int64_t line_every,
           bool enabled);
  // After `step` steps: the running train loss and accuracy.
  void update(std::int64_t step, double loss, double accuracy);
  void message(const std::string& line);  // a full line (evaluation results)
  // A line printed even when progress output is off: what a resume changed (an explicit
  // setting overriding the checkpoint's, temporary files removed).
  void notice(const std::string& line);
  void finish();
  double steps_per_second(std::int64_t step) const;
  double elapsed_seconds() const;

 private:
  std::string render(std::int64_t step, double loss, double accuracy) const;
  std::int64_t first_step_, total_steps_, line_every_;
  bool enabled_, terminal_, drawn_ = false;
  std::chrono::steady_clock::time_point start_, last_draw_;
};

// metrics.csv and metrics.jsonl in a folder; on resume, rows after the resumed step are
// dropped first so the files read as one uninterrupted run. Every row is written and the
// file closed before write returns; a write the disk refuses (full, read-only) throws
// IOError naming the file, so no row goes missing silently.
class MetricsLog {
 public:
  MetricsLog() = default;
  MetricsLog(const std::string& out_dir, std::int64_t resumed_step);
  void write(std::int64_t step, const std::string& split, double loss, double accuracy, double lr,
             double elapsed_s, double steps_per_s);

 private:
  std::string csv_path_, jsonl_path_;
};

// "1:02:03" / "2:03"
std::string format_duration(double seconds);

}  // namespace headgrad::train::detail
