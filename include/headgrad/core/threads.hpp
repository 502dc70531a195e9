// Intra-op threads, as torch.set_num_threads: headgrad's own pool runs every GEMM (split
// into row or column blocks, or over a batch of products) and the elementwise, row and
// optimizer kernels, in contiguous chunks; OpenBLAS itself stays at one thread. Default:
// OMP_NUM_THREADS, else OPENBLAS_NUM_THREADS, else the CPUs this process may use (its
// affinity mask, capped by a cgroup CPU quota; divided by the ranks an MPI launcher started
// on this machine, OMPI_COMM_WORLD_LOCAL_SIZE). n sets how work is split; with more threads
// than usable CPUs, only as many threads as CPUs run the pieces. At a fixed thread
// count results are bitwise reproducible; elementwise and row kernels give the same bits at
// every count. Programs that train several models side by side (heads_compare --jobs) set
// 1 thread, so the runs do not oversubscribe the cores.
#pragma once

namespace headgrad {

// n in [1, 1024]; ValueError otherwise, or when called from inside a parallel region.
void set_num_threads(int n);
int get_num_threads();

}  // namespace headgrad
