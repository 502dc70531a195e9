// headgrad.study: heads_compare, run in this process on its own command line (the same
// options, checks, cache and report as the program), without the GIL.
#include "common.hpp"

#if HEADGRAD_PYTHON_WITH_STUDY
#include "command.hpp"
#endif

namespace headgrad::python {

void bind_study(py::module_& m) {
  m.def(
      "_run_command_line",
      [](const std::vector<std::string>& args) {
#if HEADGRAD_PYTHON_WITH_STUDY
        std::vector<std::string> owned = {"heads_compare"};
        owned.insert(owned.end(), args.begin(), args.end());
        std::vector<char*> argv;
        for (auto& a : owned) argv.push_back(a.data());
        argv.push_back(nullptr);
        forget_interrupt();
        // Ctrl-C: the running trainers stop after their step, nothing unfinished is cached,
        // and KeyboardInterrupt is raised (interrupt.cpp).
        py::gil_scoped_release release;
        return heads_compare::run_command_line(static_cast<int>(owned.size()), argv.data(),
                                               /*rethrow=*/true);
#else
        throw Error(
            "heads_compare: this headgrad module was built without the examples "
            "(HEADGRAD_BUILD_EXAMPLES=OFF)");
#endif
      },
      py::arg("args"), "heads_compare's command line (without the program name); its exit status");
}

}  // namespace headgrad::python
