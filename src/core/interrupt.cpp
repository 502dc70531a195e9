// The process-wide interrupt check of core/interrupt.hpp.
#include "headgrad/core/interrupt.hpp"

#include <atomic>

namespace headgrad {

namespace {
std::atomic<InterruptCheck> installed{nullptr};
}  // namespace

InterruptCheck set_interrupt_check(InterruptCheck check) { return installed.exchange(check); }

bool interrupt_requested() {
  const InterruptCheck check = installed.load(std::memory_order_acquire);
  return check != nullptr && check();
}

}  // namespace headgrad
