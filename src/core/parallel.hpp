// Intra-op parallelism: headgrad's own thread pool (set_num_threads sizes it; see
// include/headgrad/core/threads.hpp). Kernels split their work into contiguous chunks with
// parallel_for; the caller runs the first chunk and the pool's workers the others.
//
// Determinism: chunk boundaries depend only on the item count, the grain and the thread
// count, never on timing, so a kernel whose chunks write disjoint outputs gives bitwise the
// same result at every thread count, and any kernel gives the same result at the same
// thread count. A parallel_for inside a chunk (a GEMM inside an attention head's loop), or
// one started while another user thread holds the pool, runs its chunks one after another
// in the calling thread with the same boundaries.
#pragma once

#include <cstdint>
#include <functional>

namespace headgrad::detail {

// The pool's size (>= 1); the first call reads the default (threads.hpp).
int pool_threads();

// Splits [0, n) into min(pool_threads(), ceil(n / grain)) contiguous chunks of near-equal
// size and runs body(begin, end) on each; returns when all have finished. An exception
// thrown by a chunk is rethrown here (the first one, by chunk order) after every chunk ended.
void parallel_for(std::int64_t n, std::int64_t grain,
                  const std::function<void(std::int64_t, std::int64_t)>& body);

// parallel_for over the elements [0, n) with every chunk boundary but the last end (n) on
// a multiple of `align`, and at least `grain_elements` elements per chunk. A vector loop
// over each chunk then runs every element through the same instructions as one loop over
// [0, n) (only the final tail is scalar): the same bits at every thread count.
void parallel_for_aligned(std::int64_t n, std::int64_t align, std::int64_t grain_elements,
                          const std::function<void(std::int64_t, std::int64_t)>& body);

// The number of chunks parallel_for(n, grain, ...) makes, and chunk i's [begin, end).
std::int64_t parallel_chunks(std::int64_t n, std::int64_t grain);
std::int64_t chunk_begin(std::int64_t n, std::int64_t chunks, std::int64_t i);

// True inside a chunk of parallel_for (a nested parallel_for runs serially).
bool in_parallel_region();

}  // namespace headgrad::detail
