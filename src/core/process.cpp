// Running a program from an argument vector with posix_spawnp (see core/process.hpp).
#include "headgrad/core/process.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "headgrad/core/error.hpp"

extern char** environ;

namespace headgrad {

namespace {

// The file actions of one spawn, released by the destructor.
struct FileActions {
  posix_spawn_file_actions_t actions;
  std::vector<int> fds;  // opened here, closed after the spawn
  FileActions() { posix_spawn_file_actions_init(&actions); }
  ~FileActions() {
    posix_spawn_file_actions_destroy(&actions);
    for (int fd : fds) ::close(fd);
  }
  FileActions(const FileActions&) = delete;
  FileActions& operator=(const FileActions&) = delete;
};

// Opens a Redirect::file here, so that a file that cannot be created is named as such
// rather than reported as a program that did not start.
int open_output(const std::filesystem::path& path, const std::string& program) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    const int err = errno;
    throw Error("run_program: cannot create '" + path.string() + "' for the output of '" + program +
                "': " + std::strerror(err));
  }
  return fd;
}

// Points the child's descriptor `target` (1 or 2) at a file or /dev/null; the crossed
// redirects (to_stderr, to_stdout) are added afterwards by add_crossed.
void add_direct(FileActions& f, const Redirect& r, int target, const std::string& program) {
  if (r.kind == Redirect::Kind::discard) {
    posix_spawn_file_actions_addopen(&f.actions, target, "/dev/null", O_WRONLY, 0);
  } else if (r.kind == Redirect::Kind::file) {
    const int fd = open_output(r.path, program);
    f.fds.push_back(fd);
    posix_spawn_file_actions_adddup2(&f.actions, fd, target);
  }
}

void set_up_streams(FileActions& f, const ProgramOptions& options, const std::string& program) {
  using Kind = Redirect::Kind;
  if (options.stdout_to.kind == Kind::to_stdout || options.stderr_to.kind == Kind::to_stderr)
    throw ValueError("run_program('" + program +
                     "'): stdout_to may be Redirect::to_stderr() and stderr_to "
                     "Redirect::to_stdout(), not the other way round");
  if (options.stdout_to.kind == Kind::to_stderr && options.stderr_to.kind == Kind::to_stdout)
    throw ValueError("run_program('" + program +
                     "'): stdout and stderr cannot each go where the other goes");
  add_direct(f, options.stdout_to, STDOUT_FILENO, program);
  add_direct(f, options.stderr_to, STDERR_FILENO, program);
  if (options.stdout_to.kind == Kind::to_stderr)
    posix_spawn_file_actions_adddup2(&f.actions, STDERR_FILENO, STDOUT_FILENO);
  if (options.stderr_to.kind == Kind::to_stdout)
    posix_spawn_file_actions_adddup2(&f.actions, STDOUT_FILENO, STDERR_FILENO);
}

// This process's environment with `extra` ("NAME=value") replacing variables of the
// same name.
std::vector<std::string> child_environment(const std::vector<std::string>& extra) {
  auto name_of = [](const std::string& entry) { return entry.substr(0, entry.find('=')); };
  std::vector<std::string> out;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string entry = *e;
    bool replaced = false;
    for (const std::string& x : extra) replaced = replaced || name_of(x) == name_of(entry);
    if (!replaced) out.push_back(entry);
  }
  out.insert(out.end(), extra.begin(), extra.end());
  return out;
}

std::vector<char*> pointers(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (std::string& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

bool is_executable_file(const std::filesystem::path& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

// Whether `text` can stand in a command line without quotes.
bool plain_word(const std::string& text) {
  if (text.empty()) return false;
  for (char c : text)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || std::strchr("-_./=:,+@%", c) != nullptr))
      return false;
  return true;
}

}  // namespace

int run_program(const std::vector<std::string>& argv, const ProgramOptions& options) {
  if (argv.empty() || argv[0].empty())
    throw ValueError("run_program: no program given (argv is empty or argv[0] is \"\")");
  const std::string& program = argv[0];
  FileActions files;
  set_up_streams(files, options, program);
  std::vector<std::string> args = argv;
  std::vector<char*> arg_pointers = pointers(args);
  std::vector<std::string> env = child_environment(options.environment);
  std::vector<char*> env_pointers = pointers(env);
  pid_t pid = 0;
  const int err = ::posix_spawnp(&pid, program.c_str(), &files.actions, nullptr,
                                 arg_pointers.data(), env_pointers.data());
  if (err != 0)
    throw Error("run_program: cannot start '" + program + "': " + std::strerror(err) +
                (err == ENOENT && program.find('/') == std::string::npos
                     ? " (is it installed, and is its folder on PATH?)"
                     : ""));
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0)
    if (errno != EINTR)
      throw Error("run_program: waiting for '" + program + "' failed: " + std::strerror(errno));
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 255;
}

std::filesystem::path find_program(const std::string& name) {
  if (name.empty()) return {};
  if (name.find('/') != std::string::npos)
    return is_executable_file(name) ? std::filesystem::path(name) : std::filesystem::path();
  const char* path = std::getenv("PATH");
  const std::string folders = path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin";
  std::size_t start = 0;
  while (start <= folders.size()) {
    const std::size_t end = std::min(folders.find(':', start), folders.size());
    const std::string folder = folders.substr(start, end - start);  // "" is the current folder
    const std::filesystem::path candidate =
        (folder.empty() ? std::filesystem::path(".") : std::filesystem::path(folder)) / name;
    if (is_executable_file(candidate)) return candidate;
    start = end + 1;
  }
  return {};
}

std::string command_text(const std::vector<std::string>& argv) {
  std::string out;
  for (const std::string& a : argv) {
    if (!out.empty()) out += ' ';
    if (plain_word(a)) {
      out += a;
      continue;
    }
    out += '\'';
    for (char c : a) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    out += '\'';
  }
  return out;
}

const std::string& host_name() {
  static const std::string host = [] {
    char name[256] = {};
    if (::gethostname(name, sizeof name - 1) != 0 || name[0] == '\0') return std::string("host");
    std::string text(name);
    for (char& c : text)
      if (c == ' ' || c == '/' || c == '\n') c = '_';
    return text;
  }();
  return host;
}

bool process_is_gone(long pid) {
  if (pid <= 0 || pid == static_cast<long>(::getpid())) return false;
  if (::kill(static_cast<pid_t>(pid), 0) != 0) return errno == ESRCH;
  // It exists: gone all the same when it is a zombie (its state after the command's ')').
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  std::getline(stat, text);
  const std::size_t name_end = text.rfind(')');
  if (name_end == std::string::npos || name_end + 2 >= text.size()) return false;
  const char state = text[name_end + 2];
  return state == 'Z' || state == 'X';
}

}  // namespace headgrad
