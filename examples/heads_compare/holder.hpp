// Who wrote a file that stands for a running process (a claim, the folder lock, a
// temporary file): its process id, host name and start time, so that another process can
// tell whether the writer still runs.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace heads_compare {

struct Holder {
  long pid = 0;
  std::string host;
  std::int64_t started = 0;  // Unix time, seconds

  // "pid 1234 on host node1, started 2026-11-26 10:00:00 UTC"
  std::string describe() const;
  // One line, "<pid> <host> <started>", read back by holder_from.
  std::string line() const;
};

// This process.
Holder this_process();
// The holder a line() wrote, or nullopt when the text is not one.
std::optional<Holder> holder_from(const std::string& text);
// True when the holder ran on this host and no process has its id any more, or the one
// that has it exited (a zombie not yet reaped). A holder on another host cannot be
// checked from here: false.
bool holder_is_gone(const Holder& holder);

}  // namespace heads_compare
