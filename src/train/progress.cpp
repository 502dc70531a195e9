// Progress bar and metrics files (see progress.hpp).
#include "train/progress.hpp"

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "headgrad/core/error.hpp"
#include "headgrad/train/atomic_write.hpp"
#include "headgrad/train/npz.hpp"

namespace headgrad::train::detail {

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  auto s = static_cast<long long>(seconds + 0.5);
  char buf[32];
  if (s >= 3600)
    std::snprintf(buf, sizeof buf, "%lld:%02lld:%02lld", s / 3600, (s / 60) % 60, s % 60);
  else
    std::snprintf(buf, sizeof buf, "%lld:%02lld", s / 60, s % 60);
  return buf;
}

Progress::Progress(std::int64_t first_step, std::int64_t total_steps, std::int64_t line_every,
                   bool enabled)
    : first_step_(first_step),
      total_steps_(total_steps),
      line_every_(line_every > 0 ? line_every : 100),
      enabled_(enabled),
      terminal_(isatty(STDERR_FILENO) != 0),
      start_(std::chrono::steady_clock::now()),
      last_draw_(start_) {}

double Progress::elapsed_seconds() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

double Progress::steps_per_second(std::int64_t step) const {
  const double t = elapsed_seconds();
  return t > 0 ? static_cast<double>(step - first_step_) / t : 0.0;
}

std::string Progress::render(std::int64_t step, double loss, double accuracy) const {
  const double rate = steps_per_second(step);
  const double eta = rate > 0 ? static_cast<double>(total_steps_ - step) / rate : NAN;
  const int width = 24;
  const int filled =
      total_steps_ > 0 ? static_cast<int>(width * static_cast<double>(step) / total_steps_) : 0;
  std::string bar(static_cast<std::size_t>(filled), '#');
  bar.resize(width, '.');
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "step %6lld/%lld [%s] loss %.4f acc %5.1f%% | %.1f steps/s | ETA %s",
                static_cast<long long>(step), static_cast<long long>(total_steps_), bar.c_str(),
                loss, 100.0 * accuracy, rate, format_duration(eta).c_str());
  return buf;
}

void Progress::update(std::int64_t step, double loss, double accuracy) {
  if (!enabled_) return;
  if (terminal_) {
    const auto now = std::chrono::steady_clock::now();
    if (step != total_steps_ && drawn_ &&
        std::chrono::duration<double>(now - last_draw_).count() < 0.1)
      return;
    last_draw_ = now;
    std::fprintf(stderr, "\r%s\033[K", render(step, loss, accuracy).c_str());
    drawn_ = true;
  } else if (step % line_every_ == 0 || step == total_steps_) {
    std::fprintf(stderr, "%s\n", render(step, loss, accuracy).c_str());
  }
  std::fflush(stderr);
}

void Progress::message(const std::string& line) {
  if (enabled_) notice(line);
}

void Progress::notice(const std::string& line) {
  if (enabled_ && terminal_ && drawn_) std::fprintf(stderr, "\r\033[K");
  std::fprintf(stderr, "%s\n", line.c_str());
  drawn_ = false;
  std::fflush(stderr);
}

void Progress::finish() {
  if (enabled_ && terminal_ && drawn_) std::fprintf(stderr, "\n");
  drawn_ = false;
}

namespace {

constexpr const char* kCsvHeader = "step,split,loss,accuracy,lr,elapsed_s,steps_per_s\n";

// Keeps the header (if any) and the lines whose leading step number is <= `step`; the
// file is replaced atomically, so a failed rewrite leaves it as it was.
void truncate_after(const std::string& path, std::int64_t step, bool has_header,
                    const std::string& prefix) {
  std::ifstream in(path);
  if (!in) return;
  std::string kept, line;
  bool first = true;
  while (std::getline(in, line)) {
    const bool header = first && has_header;
    first = false;
    if (!header) {
      if (line.compare(0, prefix.size(), prefix) != 0) continue;
      if (std::atoll(line.c_str() + prefix.size()) > step) continue;
    }
    kept += line + "\n";
  }
  in.close();
  write_file_atomically(path, kept, "trainer");
}

}  // namespace

MetricsLog::MetricsLog(const std::string& out_dir, std::int64_t resumed_step) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(out_dir, ec);
  if (ec || !fs::is_directory(out_dir))
    throw IOError("trainer: cannot create the output folder '" + out_dir + "': " +
                      (ec ? ec.message() : std::string("a file of that name is in the way")),
                  out_dir);
  csv_path_ = (fs::path(out_dir) / "metrics.csv").string();
  jsonl_path_ = (fs::path(out_dir) / "metrics.jsonl").string();
  for (const std::string& path : {csv_path_, jsonl_path_})
    if (fs::is_directory(path))
      throw IOError("trainer: '" + path + "' is a folder; the metrics file needs its name", path);
  if (resumed_step > 0) {
    truncate_after(csv_path_, resumed_step, true, "");
    truncate_after(jsonl_path_, resumed_step, false, "{\"step\": ");
  }
  if (resumed_step == 0) {  // a fresh run: the files of an earlier one are replaced whole
    write_file_atomically(jsonl_path_, "", "trainer");
    write_file_atomically(csv_path_, kCsvHeader, "trainer");
    return;
  }
  append_to_file(jsonl_path_, "", "trainer");
  append_to_file(csv_path_, "", "trainer");
  const auto size = fs::file_size(csv_path_, ec);
  if (ec || size == 0) append_to_file(csv_path_, kCsvHeader, "trainer");
}

void MetricsLog::write(std::int64_t step, const std::string& split, double loss, double accuracy,
                       double lr, double elapsed_s, double steps_per_s) {
  if (csv_path_.empty()) return;
  char row[256];
  std::snprintf(row, sizeof row, "%lld,%s,%.6g,%.6g,%.6g,%.3f,%.3f\n", static_cast<long long>(step),
                split.c_str(), loss, accuracy, lr, elapsed_s, steps_per_s);
  append_to_file(csv_path_, row, "trainer");
  // JSON has no NaN or infinity: such values are written as null.
  auto num = [](double v, const char* fmt) {
    if (!std::isfinite(v)) return std::string("null");
    char buf[64];
    std::snprintf(buf, sizeof buf, fmt, v);
    return std::string(buf);
  };
  std::snprintf(row, sizeof row,
                "{\"step\": %lld, \"split\": \"%s\", \"loss\": %s, \"accuracy\": %s, "
                "\"lr\": %s, \"elapsed_s\": %s, \"steps_per_s\": %s}\n",
                static_cast<long long>(step), split.c_str(), num(loss, "%.6g").c_str(),
                num(accuracy, "%.6g").c_str(), num(lr, "%.6g").c_str(),
                num(elapsed_s, "%.3f").c_str(), num(steps_per_s, "%.3f").c_str());
  append_to_file(jsonl_path_, row, "trainer");
}

}  // namespace headgrad::train::detail
