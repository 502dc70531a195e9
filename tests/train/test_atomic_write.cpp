// train/atomic_write.hpp: a replacement is whole or absent, an append all or nothing, a
// failure names the file and the system's reason, and only the temporary files of writers
// that are gone are removed.
#include <doctest/doctest.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "headgrad/train/atomic_write.hpp"
#include "headgrad/train/npz.hpp"
#include "train/file_size_limit.hpp"

namespace fs = std::filesystem;
using headgrad::train::append_to_file;
using headgrad::train::IOError;
using headgrad::train::remove_stale_temp_files;
using headgrad::train::temp_path_for;
using headgrad::train::write_file_atomically;

using headgrad::testing::FileSizeLimit;
using headgrad::testing::io_error_of;

namespace {

struct Scratch {
  fs::path path;
  explicit Scratch(const std::string& name)
      : path(fs::temp_directory_path() /
             ("headgrad_atomic_write_" + std::to_string(::getpid()) + "_" + name)) {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~Scratch() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::set<std::string> listing() const {
    std::set<std::string> names;
    for (const auto& e : fs::directory_iterator(path)) names.insert(e.path().filename().string());
    return names;
  }
};

std::string text_of(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void put(const fs::path& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

// A process id no process has now.
long dead_pid() {
  long pid = 4000000;
  while (fs::exists("/proc/" + std::to_string(pid))) ++pid;
  return pid;
}

std::string host() {
  char name[256] = {};
  ::gethostname(name, sizeof name - 1);
  return name;
}

}  // namespace

TEST_CASE("write_file_atomically replaces a file whole, and a refused write leaves the old one") {
  Scratch dir("replace");
  const fs::path file = dir.path / "table.csv";
  write_file_atomically(file, "a,b\n1,2\n", "test");
  CHECK(text_of(file) == "a,b\n1,2\n");
  const std::string big(4096, 'x');
  std::string message;
  {
    FileSizeLimit limit(1024);  // the new text stops a quarter of the way in
    message = io_error_of([&] { write_file_atomically(file, big, "test"); });
  }
  CHECK(message.rfind("test: cannot write '" + file.string() + "'", 0) == 0);
  CHECK(message.find("File too large") != std::string::npos);
  CHECK(text_of(file) == "a,b\n1,2\n");
  CHECK(dir.listing() == std::set<std::string>{"table.csv"});
  write_file_atomically(file, big, "test", /*durable=*/false);
  CHECK(text_of(file) == big);
}

TEST_CASE("write_file_atomically names a missing folder and a folder in the way") {
  Scratch dir("missing");
  const std::string missing =
      io_error_of([&] { write_file_atomically(dir.path / "no" / "x.json", "{}", "test"); });
  CHECK(missing.find("x.json") != std::string::npos);
  CHECK(missing.find("No such file or directory") != std::string::npos);
  fs::create_directories(dir.path / "folder.json");
  const std::string folder =
      io_error_of([&] { write_file_atomically(dir.path / "folder.json", "{}", "test"); });
  CHECK(folder.find("folder.json") != std::string::npos);
  CHECK(folder.find("Is a directory") != std::string::npos);
  CHECK(dir.listing() == std::set<std::string>{"folder.json"});
}

TEST_CASE("append_to_file appends all of the text or none of it") {
  Scratch dir("append");
  const fs::path file = dir.path / "metrics.jsonl";
  append_to_file(file, "{\"step\": 1}\n", "test");
  append_to_file(file, "{\"step\": 2}\n", "test");
  const std::string two_rows = text_of(file);
  CHECK(two_rows == "{\"step\": 1}\n{\"step\": 2}\n");
  std::string message;
  {
    FileSizeLimit limit(two_rows.size() + 5);  // 5 bytes of the next row fit
    message = io_error_of([&] { append_to_file(file, "{\"step\": 3, \"more\": 1}\n", "test"); });
  }
  CHECK(message.find(file.string()) != std::string::npos);
  CHECK(message.find("File too large") != std::string::npos);
  CHECK(text_of(file) == two_rows);
}

TEST_CASE("temp_path_for names a hidden file beside the target with this host and process") {
  const fs::path a = temp_path_for("/some/folder/summary.json");
  const fs::path b = temp_path_for("/some/folder/summary.json");
  CHECK(a.parent_path() == "/some/folder");
  CHECK(a != b);
  const std::string prefix = ".summary.json.tmp." + host() + "." + std::to_string(::getpid()) + ".";
  CHECK(a.filename().string().rfind(prefix, 0) == 0);
}

TEST_CASE("remove_stale_temp_files removes a gone writer's files and nothing else") {
  Scratch dir("stale");
  const std::string me = std::to_string(::getpid()), dead = std::to_string(dead_pid());
  const std::set<std::string> gone = {
      ".ablation.csv.tmp." + host() + "." + dead + ".0",  // a killed writer on this host
      ".checkpoint.npz.tmp-" + dead + "-3-123456",        // earlier versions' name
  };
  const std::set<std::string> kept = {
      ".summary.json.tmp." + host() + "." + me + ".1",  // a write in progress (this process)
      ".summary.json.tmp.elsewhere." + dead + ".0",     // another host: it cannot be asked
      "notes.tmp.txt",                                  // not a temporary name
      "summary.json",
  };
  for (const auto& names : {gone, kept})
    for (const std::string& name : names) put(dir.path / name, "x");
  CHECK(remove_stale_temp_files(dir.path) == 2);
  CHECK(dir.listing() == kept);
  // An hour-old file of another host's writer is no write in progress.
  const fs::path old = dir.path / ".summary.json.tmp.elsewhere.4242.0";
  put(old, "x");
  fs::last_write_time(old, fs::file_time_type::clock::now() - std::chrono::hours(2));
  CHECK(remove_stale_temp_files(dir.path) == 1);
  CHECK(!fs::exists(old));
  CHECK(remove_stale_temp_files(dir.path / "no_such_folder") == 0);
}
