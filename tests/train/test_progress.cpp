// train/progress: MetricsLog writes every row before returning, and a write the disk
// refuses is an IOError naming the file (never a row silently missing).
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "headgrad/train/npz.hpp"
#include "train/progress.hpp"

using headgrad::train::IOError;
using headgrad::train::detail::MetricsLog;
namespace fs = std::filesystem;

namespace {

fs::path scratch(const std::string& name) {
  fs::path p = fs::temp_directory_path() / ("headgrad_progress_" + name);
  fs::remove_all(p);
  fs::create_directories(p);
  return p;
}

std::string text_of(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The message of the IOError `f` throws, "" when it throws none.
template <class F>
std::string io_error_of(F&& f) {
  try {
    f();
  } catch (const IOError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("MetricsLog writes each row to both files before write returns") {
  const fs::path dir = scratch("rows");
  MetricsLog log(dir.string(), 0);
  log.write(5, "train", 1.5, 0.25, 1e-3, 0.5, 10);
  CHECK(text_of(dir / "metrics.csv") ==
        "step,split,loss,accuracy,lr,elapsed_s,steps_per_s\n5,train,1.5,0.25,0.001,0.500,10.000\n");
  CHECK(text_of(dir / "metrics.jsonl").find("{\"step\": 5, \"split\": \"train\"") == 0);
  fs::remove_all(dir);
}

TEST_CASE("MetricsLog throws IOError naming metrics.jsonl when the disk refuses a row") {
  if (!fs::exists("/dev/full")) return;  // no device that refuses writes here
  const fs::path dir = scratch("full_jsonl");
  fs::create_symlink("/dev/full", dir / "metrics.jsonl");
  MetricsLog log(dir.string(), 0);  // the header goes to metrics.csv, which takes it
  const std::string message = io_error_of([&] { log.write(1, "train", 1, 0.5, 1e-3, 0, 0); });
  CHECK(message.find((dir / "metrics.jsonl").string()) != std::string::npos);
  CHECK(message.find("No space left on device") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("MetricsLog throws IOError naming metrics.csv when the disk refuses its header") {
  if (!fs::exists("/dev/full")) return;
  const fs::path dir = scratch("full_csv");
  fs::create_symlink("/dev/full", dir / "metrics.csv");
  const std::string message = io_error_of([&] { MetricsLog log(dir.string(), 0); });
  CHECK(message.find((dir / "metrics.csv").string()) != std::string::npos);
  CHECK(message.find("trainer: cannot write") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("MetricsLog on resume keeps the header and the rows up to the resumed step") {
  const fs::path dir = scratch("resume");
  {
    MetricsLog log(dir.string(), 0);
    for (int step : {2, 4, 6}) log.write(step, "train", 1, 0.5, 1e-3, 0, 0);
  }
  MetricsLog resumed(dir.string(), 4);
  const std::string csv = text_of(dir / "metrics.csv");
  CHECK(csv.find("step,split") == 0);
  CHECK(csv.find("\n4,train") != std::string::npos);
  CHECK(csv.find("\n6,train") == std::string::npos);
  CHECK(text_of(dir / "metrics.jsonl").find("\"step\": 6") == std::string::npos);
  fs::remove_all(dir);
}
