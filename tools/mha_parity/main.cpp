// mha_parity CASE_DIR OUT_DIR: runs nn::MultiheadAttention forward and backward on a parity
// case written by tests/reference/generate_cases.py and writes the results as .npy files
// named like the case's expected/ files (output.npy, attn_weights.npy, grad_query.npy,
// grad_in_proj_weight.npy, ...). Shapes: see parity.hpp.
//
// Exit status: 0 done; 1 a malformed case or a failure, reported as one line
// "mha_parity: <file>: <what is wrong>" on stderr; 2 a usage error.
#include <exception>
#include <iostream>
#include <string>

#include <CLI/CLI.hpp>

#include "parity.hpp"

namespace {

std::string one_line(std::string s) {
  for (char& ch : s)
    if (ch == '\n' || ch == '\r') ch = ' ';
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "Runs headgrad's nn::MultiheadAttention on a parity case (config.json and .npy inputs "
      "and parameters) and writes the output, the attention weights and every gradient of "
      "sum(output * grad_output) as .npy files.",
      "mha_parity"};
  std::string case_dir, out_dir;
  app.add_option("CASE_DIR", case_dir, "case directory: config.json, query.npy, ...")->required();
  app.add_option("OUT_DIR", out_dir, "where to write the results (created if missing)")->required();
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return 2;
  }

  try {
    headgrad::parity::run_case_dir(case_dir, out_dir);
  } catch (const headgrad::parity::CaseError& e) {
    std::cerr << "mha_parity: " << one_line(e.what()) << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "mha_parity: " << case_dir << ": " << one_line(e.what()) << "\n";
    return 1;
  }
  return 0;
}
