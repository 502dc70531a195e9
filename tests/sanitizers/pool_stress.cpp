// A ThreadSanitizer stress test of the intra-op thread pool (src/core/parallel.cpp), built
// from that one source file with -fsanitize=thread (tests/CMakeLists.txt): three user
// threads issue parallel_for calls at once (one of them holds the pool, the others run
// serially), chunks throw now and then, and the pool is resized between rounds. Exits 1
// when a chunk was missed or run twice; TSan exits 66 on a data race.
#include <atomic>
#include <cstdio>
#include <stdexcept>
#include <thread>
#include <vector>

#include "core/parallel.hpp"
#include "headgrad/core/threads.hpp"

int main() {
  using headgrad::detail::parallel_for;
  std::atomic<int> wrong{0};
  auto work = [&] {
    for (int round = 0; round < 400; ++round) {
      std::vector<int> hits(1000, 0);
      parallel_for(1000, 1, [&](std::int64_t begin, std::int64_t end) {
        for (std::int64_t i = begin; i < end; ++i) hits[static_cast<std::size_t>(i)] += 1;
      });
      for (int h : hits)
        if (h != 1) ++wrong;
      if (round % 100 == 0) {
        try {
          parallel_for(10, 1, [](std::int64_t, std::int64_t end) {
            if (end == 10) throw std::runtime_error("the last chunk failed");
          });
          ++wrong;  // the exception must arrive
        } catch (const std::runtime_error&) {
        }
      }
    }
  };
  headgrad::set_num_threads(2);
  std::thread a(work), b(work);
  work();
  a.join();
  b.join();
  for (int n : {3, 1, 2, 4, 2}) {
    headgrad::set_num_threads(n);
    work();
  }
  std::printf("pool stress: %d wrong results\n", wrong.load());
  return wrong.load() == 0 ? 0 : 1;
}
