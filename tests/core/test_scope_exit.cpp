// detail::ScopeExit (src/core/scope_exit.hpp): the library's one way to put state back runs
// its function when the scope ends by return and when it ends by an exception.
#include <doctest/doctest.h>

#include <stdexcept>

#include "core/scope_exit.hpp"

using headgrad::detail::ScopeExit;

TEST_CASE("ScopeExit restores on return and when an exception leaves the scope") {
  int mode = 1;
  auto leave_normally = [&] {
    const int was = mode;
    const ScopeExit restore([&mode, was] { mode = was; });
    mode = 2;
    return mode;
  };
  CHECK(leave_normally() == 2);
  CHECK(mode == 1);
  auto leave_by_throwing = [&] {
    const int was = mode;
    const ScopeExit restore([&mode, was] { mode = was; });
    mode = 3;
    throw std::runtime_error("inside");
  };
  CHECK_THROWS_AS(leave_by_throwing(), std::runtime_error);
  CHECK(mode == 1);
}
