// Starting another program without a shell: the program and its arguments are an argument
// vector handed to posix_spawnp, so no character of an argument (a quote, `$(...)`, `;`, a
// space) is ever interpreted. The examples run gnuplot and Python this way, the tests run
// programs this way, and nothing in headgrad calls std::system.
//
//   if (!headgrad::find_program("gnuplot").empty())
//     status = headgrad::run_program({"gnuplot", script.string()},
//                                    headgrad::ProgramOptions()
//                                        .with_stdout_to(headgrad::Redirect::discard())
//                                        .with_stderr_to(headgrad::Redirect::discard()));
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "headgrad/core/options.hpp"

namespace headgrad {

// Where a child's standard output or standard error goes.
struct Redirect {
  enum class Kind {
    inherit,    // this process's own stream
    discard,    // /dev/null
    file,       // `path`, created or emptied
    to_stderr,  // (stdout_to only) wherever the child's stderr goes
    to_stdout,  // (stderr_to only) wherever the child's stdout goes: `> log 2>&1`
  };
  Kind kind = Kind::inherit;
  std::filesystem::path path;

  static Redirect inherit() { return {}; }
  static Redirect discard() { return {Kind::discard, {}}; }
  static Redirect file(std::filesystem::path path) { return {Kind::file, std::move(path)}; }
  static Redirect to_stderr() { return {Kind::to_stderr, {}}; }
  static Redirect to_stdout() { return {Kind::to_stdout, {}}; }
};

struct ProgramOptions {
  Redirect stdout_to;
  Redirect stderr_to;
  // "NAME=value" entries the child's environment has on top of (or instead of) this
  // process's variables of the same name.
  std::vector<std::string> environment;

  HEADGRAD_WITH(stdout_to)
  HEADGRAD_WITH(stderr_to)
  HEADGRAD_WITH(environment)
};

// Runs the program argv[0] with the arguments argv (a name without '/' is looked up on
// PATH, as a shell would), waits for it and returns its exit status: the code it exited
// with (0 to 255), or 128 + the number of the signal that ended it. Throws Error naming
// the program when it cannot be started (not found, not executable) and naming the file
// when a Redirect::file cannot be created; ValueError for an empty argv or a redirect
// used on the wrong stream.
int run_program(const std::vector<std::string>& argv, const ProgramOptions& options = {});

// The executable file `name` runs as: for a name without '/', the first match in the
// folders of PATH; otherwise `name` itself when it is an executable file. Empty when there
// is none ("is gnuplot installed?").
std::filesystem::path find_program(const std::string& name);

// argv as one line for messages, each argument that needs it in single quotes:
// gnuplot -e 'png_output = '\''a b.png'\''' plot.gp
std::string command_text(const std::vector<std::string>& argv);

// This machine's name as the names of temporary files, claims and locks record it: ' ',
// '/' and newlines become '_' ("host" when the system gives none).
const std::string& host_name();

// Whether process `pid` of this machine is gone: no process has that id, or a zombie (exited,
// not yet reaped) holds it. False for this process, for a live one and for an id another
// user's process holds.
bool process_is_gone(long pid);

}  // namespace headgrad
