// train/progress: MetricsLog writes every row before returning, and a write the disk
// refuses is an IOError naming the file (never a row silently missing, or half of one).
#include <doctest/doctest.h>
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "headgrad/train/npz.hpp"
#include "train/file_size_limit.hpp"
#include "train/progress.hpp"

using headgrad::train::IOError;
using headgrad::train::detail::MetricsLog;
namespace fs = std::filesystem;

using headgrad::testing::FileSizeLimit;
using headgrad::testing::io_error_of;

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

TEST_CASE("MetricsLog keeps whole rows: a row the disk refuses midway is cut back and named") {
  const fs::path dir = scratch("full_jsonl");
  MetricsLog log(dir.string(), 0);
  log.write(1, "train", 1, 0.5, 1e-3, 0, 0);
  const std::string csv = text_of(dir / "metrics.csv"), jsonl = text_of(dir / "metrics.jsonl");
  std::string message;
  {
    // The next csv row fits under the limit; the jsonl row stops 20 bytes in.
    FileSizeLimit limit(jsonl.size() + 20);
    message = io_error_of([&] { log.write(2, "train", 1, 0.5, 1e-3, 0, 0); });
  }
  CHECK(message.find((dir / "metrics.jsonl").string()) != std::string::npos);
  CHECK(message.find("File too large") != std::string::npos);
  CHECK(text_of(dir / "metrics.jsonl") == jsonl);  // no partial row
  CHECK(text_of(dir / "metrics.csv").rfind(csv, 0) == 0);
  fs::remove_all(dir);
}

TEST_CASE("MetricsLog throws IOError naming metrics.csv when the disk refuses its header") {
  const fs::path dir = scratch("full_csv");
  const std::string earlier =
      "step,split,loss,accuracy,lr,elapsed_s,steps_per_s\n9,train,1,1,1,1,1\n";
  std::ofstream(dir / "metrics.csv") << earlier;
  std::string message;
  {
    FileSizeLimit limit(0);
    message = io_error_of([&] { MetricsLog log(dir.string(), 0); });
  }
  CHECK(message.find((dir / "metrics.csv").string()) != std::string::npos);
  CHECK(message.find("trainer: cannot write") != std::string::npos);
  CHECK(message.find("File too large") != std::string::npos);
  CHECK(text_of(dir / "metrics.csv") == earlier);  // the earlier run's file, whole
  for (const auto& entry : fs::directory_iterator(dir))
    CHECK(entry.path().filename().string().find(".tmp") == std::string::npos);
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
