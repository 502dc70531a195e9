#!/usr/bin/env python3
"""Peak memory of loading a char_lm corpus, against the corpus's size.

Writes a generated UTF-8 corpus of --mb megabytes (paragraphs of words separated by
blank lines, a few accented letters among them), then runs

    /usr/bin/time -v TRAIN_TOY --task char_lm --corpus FILE --steps 1 ...

with the smallest model, once on that corpus and once on a 1 MB one (the program's own
footprint), and prints each run's maximum resident set size and the extra memory the
large corpus costs per byte of the file. A measurement, not a test: its figures go to
docs/performance.md ("Loading a char_lm corpus").

    /usr/bin/python3 bench/corpus_memory.py build/release/examples/train_toy --mb 200
"""
import argparse
import os
import random
import re
import subprocess
import sys
import tempfile

WORDS = ["the", "of", "and", "a", "to", "in", "is", "you", "that", "it", "he", "was", "for",
         "on", "are", "as", "with", "his", "they", "at", "be", "this", "have", "from", "or",
         "one", "had", "by", "word", "but", "not", "what", "all", "were", "we", "when",
         "café", "naïve", "señor", "Zürich", "fiancée", "–", "…"]


def write_corpus(path, megabytes, seed=0):
    """About `megabytes` MB of paragraphs: 1-6 lines of 4-14 words, a blank line after."""
    rng = random.Random(seed)
    target = megabytes * 1_000_000
    # One block of text repeated with fresh paragraph breaks keeps generation fast.
    block = []
    for _ in range(4000):
        lines = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 14)))
                 for _ in range(rng.randint(1, 6))]
        block.append("\n".join(lines) + "\n\n")
    data = "".join(block).encode()
    written = 0
    with open(path, "wb") as f:
        while written < target:
            piece = data[: target - written]
            f.write(piece)
            written += len(piece)
    return written


def peak_rss_kib(train_toy, corpus, work):
    cmd = ["/usr/bin/time", "-v", train_toy, "--task", "char_lm", "--corpus", corpus,
           "--length", "8", "--d-model", "8", "--layers", "1", "--heads", "1",
           "--batch-size", "1", "--steps", "1", "--eval-every", "0", "--checkpoint-every", "0",
           "--quiet", "--out", work]
    run = subprocess.run(cmd, capture_output=True, text=True)
    if run.returncode != 0:
        raise SystemExit(f"FAIL: {' '.join(cmd)} exited {run.returncode}:\n{run.stderr[-2000:]}")
    match = re.search(r"Maximum resident set size \(kbytes\): (\d+)", run.stderr)
    elapsed = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (\S+)", run.stderr)
    return int(match.group(1)), elapsed.group(1) if elapsed else "?"


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("train_toy")
    parser.add_argument("--mb", type=int, default=200, help="corpus size in MB (default 200)")
    parser.add_argument("--work", default=None, help="scratch folder (default a temporary one)")
    args = parser.parse_args()
    if not os.access("/usr/bin/time", os.X_OK):
        raise SystemExit("needs GNU time at /usr/bin/time (apt-get install time)")
    with tempfile.TemporaryDirectory(dir=args.work) as work:
        small, large = os.path.join(work, "small.txt"), os.path.join(work, "large.txt")
        write_corpus(small, 1)
        size = write_corpus(large, args.mb)
        base, base_time = peak_rss_kib(args.train_toy, small, os.path.join(work, "run_small"))
        peak, peak_time = peak_rss_kib(args.train_toy, large, os.path.join(work, "run_large"))
    mib = 1024 * 1024
    print(f"corpus {size / mib:.1f} MiB ({size} bytes)")
    print(f"peak RSS, 1 MB corpus:          {base / 1024:8.1f} MiB  ({base_time})")
    print(f"peak RSS, {args.mb} MB corpus: {peak / 1024:8.1f} MiB  ({peak_time})")
    print(f"peak RSS / corpus size:         {peak * 1024 / size:8.2f}")
    print(f"(peak - 1 MB run) / corpus:     {(peak - base) * 1024 / size:8.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
