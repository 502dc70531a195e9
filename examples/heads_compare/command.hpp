// heads_compare's whole command line as a function (see command.cpp).
#pragma once

namespace heads_compare {

// Parses heads_compare's options from argv (argv[0] is the program name) and runs the
// study: the exit status of the program. With `rethrow`, an error (a bad option, a failed
// run) is thrown as the headgrad exception that describes it instead of printed; otherwise
// it is printed on stderr and the status is 1.
int run_command_line(int argc, char** argv, bool rethrow = false);

}  // namespace heads_compare
