// Test helpers for writes that fail: a file-size limit that makes writes past it fail with
// EFBIG (as a full disk does), and the message of the IOError a call throws.
#pragma once

#include <doctest/doctest.h>
#include <signal.h>
#include <sys/resource.h>

#include <string>

#include "headgrad/train/npz.hpp"

namespace headgrad::testing {

// RLIMIT_FSIZE for the scope, SIGXFSZ ignored: writes past `bytes` fail with EFBIG, as on
// a full disk.
struct FileSizeLimit {
  rlimit old_limit{};
  void (*old_handler)(int) = nullptr;
  explicit FileSizeLimit(rlim_t bytes) {
    REQUIRE(::getrlimit(RLIMIT_FSIZE, &old_limit) == 0);
    old_handler = ::signal(SIGXFSZ, SIG_IGN);
    rlimit small = old_limit;
    small.rlim_cur = bytes;
    REQUIRE(::setrlimit(RLIMIT_FSIZE, &small) == 0);
  }
  ~FileSizeLimit() {
    ::setrlimit(RLIMIT_FSIZE, &old_limit);
    ::signal(SIGXFSZ, old_handler);
  }
};

// The message of the IOError `f` throws, "" when it throws none.
template <class F>
std::string io_error_of(F&& f) {
  try {
    f();
  } catch (const train::IOError& e) {
    return e.what();
  }
  return "";
}

}  // namespace headgrad::testing
