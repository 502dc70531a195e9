// Thread control: OpenBLAS is the only threading layer. This file includes <cblas.h> only
// (no xtensor-blas in the same translation unit: their CBLAS_ORDER definitions clash).
#include <cblas.h>

#include <string>

#include "headgrad/core/error.hpp"
#include "headgrad/core/threads.hpp"

namespace headgrad {

void set_num_threads(int n) {
  if (n < 1) throw ValueError("set_num_threads: expected n >= 1, got " + std::to_string(n));
  openblas_set_num_threads(n);
}

int get_num_threads() { return openblas_get_num_threads(); }

}  // namespace headgrad
