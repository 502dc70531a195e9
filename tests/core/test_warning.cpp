// warn() and the warning handler: a handler receives every message, a guard restores the
// previous handler, an empty handler restores the default, and a handler may warn itself.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "headgrad/core/warning.hpp"

using namespace headgrad;

TEST_CASE("warnings reach the installed handler, and guards restore the previous one") {
  std::vector<std::string> outer, inner;
  {
    WarningHandlerGuard a([&](const std::string& m) { outer.push_back(m); });
    warn("first");
    {
      WarningHandlerGuard b([&](const std::string& m) { inner.push_back(m); });
      warn("second");
    }
    warn("third");
  }
  CHECK(outer == std::vector<std::string>{"first", "third"});
  CHECK(inner == std::vector<std::string>{"second"});
  // Back to the default: set_warning_handler returns the empty (default) handler.
  WarningHandler previous = set_warning_handler([](const std::string&) {});
  CHECK_FALSE(previous);
  WarningHandler mine = set_warning_handler(previous);
  CHECK(mine);
}

TEST_CASE("a warning handler may itself warn without deadlocking") {
  std::vector<std::string> seen;
  WarningHandlerGuard guard([&](const std::string& m) {
    seen.push_back(m);
    if (m == "outer") warn("from the handler");
  });
  warn("outer");
  CHECK(seen == std::vector<std::string>{"outer", "from the handler"});
}
