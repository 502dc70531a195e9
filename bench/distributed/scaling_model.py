#!/usr/bin/env python3
"""Step time against ranks for data-parallel training with a ring all-reduce: the model of
docs/distributed.md, printed as its tables.

Strong scaling (the global batch fixed): with N ranks,
    compute(N)  = compute(1) / N                      every rank does 1/N of the batch
    ring(N)     = 2 (N - 1) / N * S / bandwidth + k * 2 (N - 1) * latency
                                                      S = gradient bytes per step, in
                                                      k = ceil(S / bucket) buckets
    exposed(N)  = max(ring(N) - overlap * compute(N), last)
                                                      buckets reduce while backward runs;
                                                      `overlap` is backward's share of the
                                                      step, `last` the final bucket's ring
    step(N)     = compute(N) + exposed(N)
Communication dominates from the N where ring(N) > compute(N).

    scaling_model.py [--toy-ms 65.2] [--toy-bytes 1685504] [--big-ms ...] [--big-bytes ...]
The defaults are the measurements docs/distributed.md quotes (bench_ddp_step).
"""
import argparse
import math

LINKS = [  # name, bytes per second, seconds per message
    ("shared memory (this machine)", 1.5e9, 5e-6),
    ("10 Gb/s Ethernet", 1.25e9, 25e-6),
    ("100 Gb/s InfiniBand", 12.5e9, 2e-6),
]
RANKS = [1, 2, 4, 8, 16, 32, 64]
OVERLAP = 2 / 3  # backward is about two thirds of a training step's arithmetic


def ring(n, size, bandwidth, latency, buckets=1):
    return 0.0 if n == 1 else 2 * (n - 1) / n * size / bandwidth + buckets * 2 * (n - 1) * latency


def table(name, compute_s, size, bucket, batch):
    print(f"\n{name}: compute(1) = {compute_s * 1e3:.1f} ms per step, S = {size / 1e6:.2f} MB of "
          f"gradients, global batch {batch}, buckets of {bucket / 1e6:.2f} MB")
    print("| link | " + " | ".join(f"N = {n}" for n in RANKS) + " | comm > compute from |")
    print("|---|" + "---|" * (len(RANKS) + 1))
    for link, bandwidth, latency in LINKS:
        cells, crossover = [], None
        for n in RANKS:
            if batch % n or batch // n < 1:
                cells.append("–")
                continue
            compute = compute_s / n
            comm = ring(n, size, bandwidth, latency, math.ceil(size / bucket))
            last = ring(n, min(bucket, size), bandwidth, latency)
            step = compute + max(comm - OVERLAP * compute, last if n > 1 else 0.0)
            cells.append(f"{step * 1e3:.1f} ms ({compute_s / step:.1f}×)")
            if crossover is None and comm > compute:
                crossover = n
        print(f"| {link} | " + " | ".join(cells) + f" | {crossover or 'beyond 64'} |")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--toy-ms", type=float, default=65.2, help="toy GPT step, 1 rank, 1 thread")
    p.add_argument("--toy-bytes", type=float, default=1685504)
    p.add_argument("--big-ms", type=float, default=None,
                   help="d512 x 6 GPT step at batch 64, 1 rank (default: from --big-ms-b8 x 8)")
    p.add_argument("--big-ms-b8", type=float, default=None, help="the same at batch 8")
    p.add_argument("--big-bytes", type=float, default=None)
    p.add_argument("--bucket-mb", type=float, default=25.0)
    a = p.parse_args()
    bucket = a.bucket_mb * 2**20
    table("Toy GPT (vocab 64, d 128, 4 heads, 2 layers, context 64)", a.toy_ms / 1e3, a.toy_bytes,
          min(bucket, 0.25 * 2**20), 32)
    big_ms = a.big_ms if a.big_ms is not None else (a.big_ms_b8 * 8 if a.big_ms_b8 else None)
    if big_ms and a.big_bytes:
        table("GPT d512 x 6 layers (8 heads, context 256)", big_ms / 1e3, a.big_bytes, bucket, 64)


if __name__ == "__main__":
    main()
