// Ctrl-C in headgrad's long C++ loops (core/interrupt.hpp). Python runs its signal handlers
// only between bytecodes of the main thread, so a Trainer.fit(), a heads_compare study or
// a patching sweep, running in C++ (most without the GIL), would ignore Ctrl-C until it
// returned. The check installed here runs them from the loops instead: on the main
// thread, at most every 50 ms, it takes the GIL and calls PyErr_CheckSignals. When a
// handler raises (KeyboardInterrupt for SIGINT) the exception is kept and every loop, on
// any thread, hears "stop"; the loop throws headgrad::Interrupted, and the exception
// translator raises the kept exception in its place, with the loop's message as a note.
#include <Python.h>
#include <pythread.h>

#include <atomic>
#include <chrono>
#include <mutex>

#include "common.hpp"
#include "headgrad/core/interrupt.hpp"

namespace headgrad::python {

namespace {

constexpr auto kPollInterval = std::chrono::milliseconds(50);

std::atomic<unsigned long> main_thread{0};
std::atomic<bool> pending{false};  // a handler raised; not yet handed to Python
std::mutex kept_mutex;
// The exception the handler raised (strong references, touched with the GIL held).
PyObject* kept_type = nullptr;
PyObject* kept_value = nullptr;
PyObject* kept_traceback = nullptr;

bool python_interrupt_check() {
  if (pending.load(std::memory_order_acquire)) return true;
  // Python runs signal handlers on its main thread only; elsewhere there is nothing to do.
  if (PyThread_get_thread_ident() != main_thread.load(std::memory_order_relaxed)) return false;
  thread_local std::chrono::steady_clock::time_point next_poll{};
  const auto now = std::chrono::steady_clock::now();
  if (now < next_poll) return false;
  next_poll = now + kPollInterval;
  if (!Py_IsInitialized()) return false;
  py::gil_scoped_acquire gil;
  if (PyErr_CheckSignals() == 0) return false;
  std::lock_guard<std::mutex> lock(kept_mutex);
  Py_XDECREF(kept_type);
  Py_XDECREF(kept_value);
  Py_XDECREF(kept_traceback);
  PyErr_Fetch(&kept_type, &kept_value, &kept_traceback);
  pending.store(true, std::memory_order_release);
  return true;
}

}  // namespace

void install_interrupt_check() {
  main_thread.store(
      py::module_::import("threading").attr("main_thread")().attr("ident").cast<unsigned long>());
  set_interrupt_check(&python_interrupt_check);
}

void forget_interrupt() {
  if (!pending.exchange(false)) return;
  std::lock_guard<std::mutex> lock(kept_mutex);
  Py_CLEAR(kept_type);
  Py_CLEAR(kept_value);
  Py_CLEAR(kept_traceback);
}

void raise_interrupted(const Interrupted& e) {
  std::lock_guard<std::mutex> lock(kept_mutex);
  if (!pending.exchange(false) || kept_type == nullptr) {
    // Not ours (a C++ caller threw it): a KeyboardInterrupt with the message.
    PyErr_SetString(PyExc_KeyboardInterrupt, e.what());
    return;
  }
  PyErr_NormalizeException(&kept_type, &kept_value, &kept_traceback);
  if (kept_value != nullptr && PyObject_HasAttrString(kept_value, "add_note")) {
    PyObject* r = PyObject_CallMethod(kept_value, "add_note", "s", e.what());
    if (r == nullptr) PyErr_Clear();
    Py_XDECREF(r);
  }
  PyErr_Restore(kept_type, kept_value, kept_traceback);  // steals the references
  kept_type = kept_value = kept_traceback = nullptr;
}

}  // namespace headgrad::python
