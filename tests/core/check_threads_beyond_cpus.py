"""More pool threads than CPUs costs little: train_toy at 2, 3, 16 and 64 threads, pinned
to two CPUs, takes less than 10x its 1-thread wall time (medians of 3 runs each).

    check_threads_beyond_cpus.py TRAIN_TOY WORK_DIR

Before the pool limited its running threads to the usable CPUs and stopped spinning when
descheduled, 16 threads on 2 CPUs took about 150x the 1-thread time and 64 threads about
600x. The bound is generous so a busy machine does not fail the test; a run that passes
20x the 1-thread time is stopped and counted as a failure. On a machine with one usable
CPU, both runs are pinned to it.
"""
import os
import statistics
import subprocess
import sys
import time

RATIO_LIMIT = 10.0
RUNS = 3


def main():
    train_toy, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    cpus = sorted(os.sched_getaffinity(0))[:2]

    def wall(threads, timeout):
        args = [train_toy, "--threads", str(threads), "--steps", "10", "--eval-every", "0",
                "--quiet", "--out", os.path.join(work, f"t{threads}")]
        start = time.monotonic()
        try:
            subprocess.run(args, check=True, capture_output=True, timeout=timeout,
                           preexec_fn=lambda: os.sched_setaffinity(0, cpus))
        except subprocess.TimeoutExpired:
            return float("inf")
        return time.monotonic() - start

    one = statistics.median(wall(1, 600) for _ in range(RUNS))
    print(f"1 thread on CPUs {cpus}: {one:.3f} s (median of {RUNS})")
    failed = []
    for threads in (2, 3, 16, 64):
        t = statistics.median(wall(threads, max(20.0, 20 * one)) for _ in range(RUNS))
        print(f"{threads} threads: {t:.3f} s, {t / one:.2f}x the 1-thread time")
        if not t < RATIO_LIMIT * one:
            failed.append(f"{threads} threads took {t:.3f} s, {t / one:.1f}x the 1-thread "
                          f"{one:.3f} s (limit {RATIO_LIMIT:g}x)")
    if failed:
        sys.exit("FAILED: the pool costs too much with more threads than CPUs:\n  " +
                 "\n  ".join(failed))
    print("OK")


if __name__ == "__main__":
    main()
