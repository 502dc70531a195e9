#!/usr/bin/env python3
"""Interleaved A/B of one bench_case binary against two builds of libheadgrad.

A change that should not move a hot path (a refactor of the kernels, a new hook) is checked
by timing the same bench_case with the previous commit's libheadgrad.so (side A, loaded
through LD_LIBRARY_PATH, which the loader searches before the binary's RUNPATH) and with
its own (side B), alternating A and B in fresh processes, round by round. A frozen study
binary's lib/ folder (scripts/full_study.sh) is such a previous build. Prints, per case,
the median over rounds of each side's median step and B / A per round; run it on a quiet
machine.

  /usr/bin/python3 bench/side_by_side/ab_library.py --old-lib runs/heads_compare-full/frozen-<commit>/lib
"""
import argparse
import importlib.util
import json
import os
import statistics
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))


def study_args():
    """bench_case's arguments for run.py's study model (STUDY_GPT, defined there once)."""
    spec = importlib.util.spec_from_file_location("side_by_side_run", os.path.join(HERE, "run.py"))
    run = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(run)
    args = ["--case", "gpt", "--iterations", "50"]
    for key, value in run.STUDY_GPT.items():
        args += ["--" + key.replace("_", "-"), str(value)]
    return args


STUDY = study_args()
CASES = {
    "toy": ["--case", "gpt", "--iterations", "20"],
    "study_h1": STUDY + ["--heads", "1"],
    "study_h8": STUDY + ["--heads", "8"],
    # run.py's K = 10 ensemble row (members of H = 8), 5 timed steps after 2 warm-up ones.
    "ensemble_k10": ["--case", "ensemble", "--members", "10", "--warmup", "2", "--iterations", "5"]
    + STUDY[4:] + ["--heads", "8"],
}


def step_ms(binary, args, lib):
    """One bench_case run's median step in ms, with libheadgrad from `lib` (None: its own)."""
    env = dict(os.environ)
    if lib:
        env["LD_LIBRARY_PATH"] = lib
    else:
        env.pop("LD_LIBRARY_PATH", None)
    out = subprocess.run([binary] + args, env=env, capture_output=True, text=True, check=True)
    return statistics.median(json.loads(out.stdout.strip().splitlines()[-1])["times_ms"])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--old-lib", required=True, help="folder holding side A's libheadgrad.so")
    parser.add_argument("--binary", default="build/release/bench/bench_case")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--cases", default=",".join(CASES), help="of: " + ", ".join(CASES))
    o = parser.parse_args()
    if not os.path.exists(os.path.join(o.old_lib, "libheadgrad.so")):
        parser.error(f"--old-lib {o.old_lib}: no libheadgrad.so there")
    cases = [c for c in o.cases.split(",") if c]
    unknown = [c for c in cases if c not in CASES]
    if unknown:
        parser.error(f"--cases: unknown {', '.join(unknown)} (known: {', '.join(CASES)})")
    times = {(c, side): [] for c in cases for side in "AB"}
    for r in range(o.rounds):
        for c in cases:
            for side in ("AB" if r % 2 == 0 else "BA"):
                lib = o.old_lib if side == "A" else None
                times[(c, side)].append(step_ms(o.binary, CASES[c], lib))
    for c in cases:
        a, b = times[(c, "A")], times[(c, "B")]
        per_round = " ".join(f"{y / x:.3f}" for x, y in zip(a, b))
        print(f"{c}: A {statistics.median(a):.3f} ms, B {statistics.median(b):.3f} ms, "
              f"B/A {statistics.median(b) / statistics.median(a):.3f}; per round B/A {per_round}")


if __name__ == "__main__":
    main()
