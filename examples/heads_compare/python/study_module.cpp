// headgrad._study: the heads_compare study's own Python extension, built with the study
// (examples/heads_compare) so that the library's module (headgrad._headgrad) links none of
// it. It runs heads_compare in this process on its own command line (the same options,
// checks, cache and report as the program), without the GIL. headgrad/study.py imports it
// after headgrad._headgrad, whose exception translators (headgrad.Error and its
// subclasses, KeyboardInterrupt for an interrupted run) then apply to it as well.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>
#include <vector>

#include "command.hpp"

namespace py = pybind11;

PYBIND11_MODULE(_study, m) {
  m.doc() = "heads_compare's command line; use headgrad.study, not this module";
  m.def(
      "_run_command_line",
      [](const std::vector<std::string>& args) {
        std::vector<std::string> owned = {"heads_compare"};
        owned.insert(owned.end(), args.begin(), args.end());
        std::vector<char*> argv;
        for (auto& a : owned) argv.push_back(a.data());
        argv.push_back(nullptr);
        // Ctrl-C: the running trainers stop after their step, nothing unfinished is cached,
        // and KeyboardInterrupt is raised (python/src/interrupt.cpp).
        py::gil_scoped_release release;
        return heads_compare::run_command_line(static_cast<int>(owned.size()), argv.data(),
                                               /*rethrow=*/true);
      },
      py::arg("args"), "heads_compare's command line (without the program name); its exit status");
}
