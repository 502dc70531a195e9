// run_program and find_program (core/process.hpp): arguments reach the program verbatim
// (no shell reads them), exit codes and signals come back, redirects and the environment
// apply, and a program that cannot start is named.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "headgrad/core/process.hpp"
#include "helpers.hpp"

namespace hg = headgrad;
namespace fs = std::filesystem;

namespace {

const char* kPython = "/usr/bin/python3";

struct Scratch {
  fs::path path;
  explicit Scratch(const std::string& name)
      : path(fs::temp_directory_path() /
             ("headgrad_test_process_" + std::to_string(::getpid()) + "_" + name)) {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~Scratch() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string thrown_by(const std::vector<std::string>& argv, const hg::ProgramOptions& o = {}) {
  try {
    hg::run_program(argv, o);
  } catch (const hg::Error& e) {
    return e.what();
  }
  return {};
}

}  // namespace

TEST_CASE("run_program passes hostile arguments verbatim and no shell runs them") {
  Scratch dir("verbatim");
  const std::vector<std::string> hostile = {"a';touch " + (dir.path / "X").string() + ";'b",
                                            "$(touch " + (dir.path / "Y").string() + ")",
                                            "`touch " + (dir.path / "Z").string() + "`",
                                            "sp ace",
                                            "o'brien",
                                            "",
                                            "*"};
  std::vector<std::string> argv = {"printf", "%s|\\n"};
  argv.insert(argv.end(), hostile.begin(), hostile.end());
  const fs::path out = dir.path / "out.txt";
  REQUIRE(hg::run_program(argv, hg::ProgramOptions().with_stdout_to(hg::Redirect::file(out))) == 0);
  std::string expected;
  for (const std::string& a : hostile) expected += a + "|\n";
  CHECK(read_text(out) == expected);
  for (const char* name : {"X", "Y", "Z"}) CHECK_FALSE(fs::exists(dir.path / name));
}

TEST_CASE("run_program returns the exit code, and 128 plus the signal of a killed program") {
  CHECK(hg::run_program({"true"}) == 0);
  CHECK(hg::run_program({"false"}) == 1);
  if (!fs::exists(kPython)) return;
  CHECK(hg::run_program({kPython, "-c", "import sys; sys.exit(77)"}) == 77);
  CHECK(hg::run_program(
            {kPython, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"}) == 128 + 9);
}

TEST_CASE("run_program sends output to a file, to /dev/null or to the other stream") {
  if (!fs::exists(kPython)) return;
  Scratch dir("redirect");
  const std::string both =
      "import sys; print('out'); sys.stdout.flush(); sys.stderr.write('err\\n')";
  const fs::path log = dir.path / "log.txt";
  REQUIRE(hg::run_program({kPython, "-c", both}, hg::ProgramOptions()
                                                     .with_stdout_to(hg::Redirect::file(log))
                                                     .with_stderr_to(hg::Redirect::to_stdout())) ==
          0);
  CHECK(read_text(log) == "out\nerr\n");
  const fs::path err = dir.path / "err.txt";
  REQUIRE(hg::run_program({kPython, "-c", both}, hg::ProgramOptions()
                                                     .with_stdout_to(hg::Redirect::to_stderr())
                                                     .with_stderr_to(hg::Redirect::file(err))) ==
          0);
  CHECK(read_text(err) == "out\nerr\n");
  const fs::path only = dir.path / "only.txt";
  REQUIRE(hg::run_program({kPython, "-c", both}, hg::ProgramOptions()
                                                     .with_stdout_to(hg::Redirect::file(only))
                                                     .with_stderr_to(hg::Redirect::discard())) ==
          0);
  CHECK(read_text(only) == "out\n");
  // A crossed redirect on the wrong stream is refused.
  CHECK_THROWS_AS(
      hg::run_program({"true"}, hg::ProgramOptions().with_stdout_to(hg::Redirect::to_stdout())),
      hg::ValueError);
}

TEST_CASE("run_program adds environment variables for the child only") {
  Scratch dir("environment");
  const fs::path out = dir.path / "env.txt";
  REQUIRE(hg::run_program({"printenv", "HEADGRAD_TEST_PROCESS_VALUE"},
                          hg::ProgramOptions()
                              .with_stdout_to(hg::Redirect::file(out))
                              .with_environment({"HEADGRAD_TEST_PROCESS_VALUE=a b;$(c)"})) == 0);
  CHECK(read_text(out) == "a b;$(c)\n");
  CHECK(std::getenv("HEADGRAD_TEST_PROCESS_VALUE") == nullptr);
}

TEST_CASE("run_program names a program that cannot start and an output file it cannot create") {
  const std::string missing = thrown_by({"headgrad-no-such-program"});
  CHECK(missing.find("'headgrad-no-such-program'") != std::string::npos);
  CHECK(missing.find("PATH") != std::string::npos);
  const std::string bad_file = thrown_by(
      {"true"},
      hg::ProgramOptions().with_stdout_to(hg::Redirect::file("/nonexistent-folder/out.txt")));
  CHECK(bad_file.find("/nonexistent-folder/out.txt") != std::string::npos);
  CHECK(bad_file.find("'true'") != std::string::npos);
  CHECK_THROWS_AS(hg::run_program({}), hg::ValueError);
}

TEST_CASE("find_program searches PATH, and takes a path with a slash as it is") {
  const fs::path sh = hg::find_program("sh");
  REQUIRE_FALSE(sh.empty());
  CHECK(sh.filename() == "sh");
  CHECK(hg::find_program("headgrad-no-such-program").empty());
  CHECK(hg::find_program(sh.string()) == sh);
  CHECK(hg::find_program("/nonexistent/sh").empty());
  CHECK(hg::find_program("").empty());
}

TEST_CASE("command_text quotes the arguments that need it") {
  CHECK(hg::command_text({"gnuplot", "plot.gp"}) == "gnuplot plot.gp");
  CHECK(hg::command_text({"echo", "o'brien", "a b", ""}) == "echo 'o'\\''brien' 'a b' ''");
}
