// The one threading layer: OpenBLAS's thread pool. headgrad's own kernels are single
// threaded; GEMMs use `num_threads` OpenBLAS threads. At a fixed thread count results are
// bitwise reproducible. Default: what OpenBLAS picks (OPENBLAS_NUM_THREADS, else cores).
#pragma once

namespace headgrad {

void set_num_threads(int n);
int get_num_threads();

}  // namespace headgrad
