#!/usr/bin/env python3
"""CTest reference.indexing_live_pytorch_oracle: fresh random index lists from PyTorch 1.13
(generate_indexing_cases.py with a new seed each run, printed for a rerun), replayed by
headgrad_tests' indexing oracle case. Without torch it prints SKIPPED and exits 77.

    indexing_live_oracle.py --tests-binary BIN --work-dir DIR [--count 200] [--seed S]
"""
import argparse
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tests-binary", required=True)
    parser.add_argument("--work-dir", required=True)
    parser.add_argument("--count", type=int, default=200)
    parser.add_argument("--seed", type=int, default=None)
    args = parser.parse_args()
    try:
        import torch  # noqa: F401
    except ImportError:
        print("SKIPPED: no torch for", sys.executable)
        return 77
    seed = args.seed if args.seed is not None else int(time.time()) % 1_000_000
    os.makedirs(args.work_dir, exist_ok=True)
    cases = os.path.join(args.work_dir, "cases.json")
    print(f"seed {seed} (rerun with --seed {seed})", flush=True)
    subprocess.run([sys.executable, os.path.join(HERE, "generate_indexing_cases.py"),
                    "--count", str(args.count), "--seed", str(seed), "--out", cases], check=True)
    env = dict(os.environ, HEADGRAD_INDEXING_CASES=cases)
    run = subprocess.run([args.tests_binary,
                          "-tc=*agree with PyTorch on random advanced indexing"], env=env)
    return run.returncode


if __name__ == "__main__":
    sys.exit(main())
