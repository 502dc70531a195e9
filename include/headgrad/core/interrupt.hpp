// Interrupts: stopping headgrad's long loops from outside, as Ctrl-C stops a Python loop.
// The loops that run for a long time without returning to their caller ask
// interrupt_requested() between units of work: Trainer::fit and EnsembleTrainer::fit after
// every step, activation patching and head ablation before every patched run. When it
// answers yes they stop at that boundary (a Trainer as on TrainerOptions::stop_requested:
// it evaluates and writes its final checkpoint, whole) and throw Interrupted.
//
// A front end installs the check. The Python module's runs Python's signal handlers, so
// Ctrl-C raises KeyboardInterrupt out of Trainer.fit(), heads_compare or Patching.by_head()
// within a fraction of a second. Without a check (C++ programs, which set stop_requested
// from their own SIGINT handler) nothing is ever requested.
#pragma once

#include "headgrad/core/error.hpp"

namespace headgrad {

// Thrown by a loop that stopped because interrupt_requested() answered yes; the message
// names the loop and where it stopped.
class Interrupted : public Error {
 public:
  using Error::Error;
};

// Whether the loops should stop now. Called from any thread, between steps: it must be
// cheap, and once it has answered yes it must keep answering yes until the front end has
// handled the interrupt.
using InterruptCheck = bool (*)();

// Installs `check` (nullptr removes it) and returns the one it replaces.
InterruptCheck set_interrupt_check(InterruptCheck check);

// The installed check's answer; false when none is installed.
bool interrupt_requested();

}  // namespace headgrad
