#!/usr/bin/python3
"""Live PyTorch oracle for nn::MultiheadAttention.

Generates fresh random cases with PyTorch 1.13 (generate_cases.py --suite random), runs the
mha_parity binary on each and compares every expected file with its result:
  float64: max|a - b| <= 1e-10 * max(1, max|expected|)
  float32: max|a - b| <= 1e-5  * max(1, max|expected|)
Every expected file must be produced and no other. Prints the seed (reproduce a failure
with --seed), the option coverage, the worst error per dtype, and fails naming the case
and file of every mismatch. Exits 77 (CTest's skip) when torch is not importable.

Usage: live_oracle.py --mha-parity PATH --work-dir DIR [--count 120] [--seed S]
       live_oracle.py --mha-parity PATH --work-dir DIR --cases DIR   (check existing cases)
"""

import argparse
import collections
import json
import os
import shutil
import subprocess
import sys
import time

TOLERANCE = {"float64": 1e-10, "float32": 1e-5}


def skip(reason):
    bar = "!" * 78
    print(f"{bar}\n!!\n!! SKIPPED: python3-torch is not importable by {sys.executable}\n"
          f"!!   ({reason})\n"
          f"!! The live PyTorch oracle for nn::MultiheadAttention did NOT run.\n"
          f"!! Install Debian's python3-torch and python3-numpy (scripts/setup.sh does).\n"
          f"!!\n{bar}", flush=True)
    sys.exit(77)


def compare_case(np, case_dir, out_dir, dtype):
    """Returns (problems, {file: scaled error}) for one case."""
    problems, errors = [], {}
    expected_dir = os.path.join(case_dir, "expected")
    expected = sorted(f for f in os.listdir(expected_dir) if f.endswith(".npy"))
    produced = sorted(f for f in os.listdir(out_dir) if f.endswith(".npy")) \
        if os.path.isdir(out_dir) else []
    for f in sorted(set(produced) - set(expected)):
        problems.append(f"{f}: written by mha_parity but not expected")
    for f in expected:
        if f not in produced:
            problems.append(f"{f}: expected but not written by mha_parity")
            continue
        e = np.load(os.path.join(expected_dir, f))
        a = np.load(os.path.join(out_dir, f))
        if a.dtype != e.dtype:
            problems.append(f"{f}: dtype {a.dtype}, expected {e.dtype}")
            continue
        if a.shape != e.shape:
            problems.append(f"{f}: shape {a.shape}, expected {e.shape}")
            continue
        if e.size == 0:
            errors[f] = 0.0
            continue
        e64, a64 = e.astype(np.float64), a.astype(np.float64)
        if not np.isfinite(a64).all():
            problems.append(f"{f}: non-finite values in mha_parity's result")
            continue
        scale = max(1.0, float(np.abs(e64).max()))
        diff = np.abs(a64 - e64)
        worst = float(diff.max())
        errors[f] = worst / scale
        if worst > TOLERANCE[dtype] * scale:
            at = np.unravel_index(int(diff.argmax()), diff.shape)
            problems.append(f"{f}: max|a-b| = {worst:.3e} at {tuple(int(i) for i in at)} "
                            f"(got {a64[at]:.9g}, expected {e64[at]:.9g}), allowed "
                            f"{TOLERANCE[dtype] * scale:.3e} = {TOLERANCE[dtype]:g} * {scale:.4g}")
    return problems, errors


def float64_diagnosis(np, generate_cases, case_dir, out_dir, config):
    """For a float32 mismatch: each side's error against PyTorch run in float64 on the same
    (float32) inputs, which tells whether headgrad or PyTorch's float32 run is off."""
    arrays = {f[:-4]: np.load(os.path.join(case_dir, f))
              for f in os.listdir(case_dir) if f.endswith(".npy")}
    arrays = {k: v if v.dtype == np.bool_ else v.astype(np.float64) for k, v in arrays.items()}
    truth = generate_cases.compute_expected(dict(config, dtype="float64"), arrays)
    lines = []
    for name, t in truth.items():
        e = np.load(os.path.join(case_dir, "expected", name + ".npy")).astype(np.float64)
        path = os.path.join(out_dir, name + ".npy")
        if not os.path.exists(path):
            continue
        a = np.load(path).astype(np.float64)
        if a.shape != t.shape:
            continue
        scale = max(1.0, float(np.abs(t).max()))
        lines.append(f"{name}.npy: vs float64, PyTorch float32 {np.abs(e - t).max() / scale:.2e}"
                     f", headgrad {np.abs(a - t).max() / scale:.2e}")
    return lines


def coverage_of(case_dir, config, np):
    """Option labels of one case, for the coverage summary."""
    labels = [config["dtype"]]
    q = np.load(os.path.join(case_dir, "query.npy"), mmap_mode="r")
    labels.append("unbatched" if q.ndim == 2 else "batched")
    E = config["embed_dim"]
    if config.get("self_attention"):
        labels.append("self_attention")
    elif config["kdim"] not in (None, E) or config["vdim"] not in (None, E):
        labels.append("kdim/vdim != E")
    else:
        labels.append("cross_attention same dims")
    for key in ("bias", "add_bias_kv", "add_zero_attn", "batch_first", "is_causal"):
        if config[key]:
            labels.append(key)
    if not config["need_weights"]:
        labels.append("need_weights off")
    else:
        labels.append("weights averaged" if config["average_attn_weights"] else "weights per head")
    for name in ("attn_mask", "key_padding_mask"):
        path = os.path.join(case_dir, name + ".npy")
        if os.path.exists(path):
            m = np.load(path)
            kind = "bool" if m.dtype == np.bool_ else "float"
            labels.append(f"{name} {kind}" + (f" {m.ndim}d" if name == "attn_mask" else ""))
    return labels


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--mha-parity", required=True, help="path to the mha_parity binary")
    p.add_argument("--work-dir", required=True, help="scratch directory (its cases/ and out/ are replaced)")
    p.add_argument("--count", type=int, default=120)
    p.add_argument("--seed", type=int, help="default: from the clock")
    p.add_argument("--cases", help="check the cases in this directory instead of new ones")
    args = p.parse_args(argv)

    try:
        import numpy as np
        import torch  # noqa: F401
    except Exception as e:  # ImportError, or a broken installation
        skip(f"{type(e).__name__}: {e}")

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import generate_cases

    start = time.monotonic()
    for sub in ("out", "cases"):  # results and cases of an earlier run
        if os.path.isdir(os.path.join(args.work_dir, sub)):
            shutil.rmtree(os.path.join(args.work_dir, sub))
    os.makedirs(args.work_dir, exist_ok=True)
    if args.cases:
        cases_dir = args.cases
        names = sorted(d for d in os.listdir(cases_dir)
                       if os.path.isfile(os.path.join(cases_dir, d, "config.json")))
        print(f"checking {len(names)} cases in {cases_dir}", flush=True)
    else:
        seed = args.seed if args.seed is not None else time.time_ns() % (2**31)
        cases_dir = os.path.join(args.work_dir, "cases")
        print(f"live PyTorch {torch.__version__} oracle: {args.count} random cases, seed {seed} "
              f"(reproduce: {sys.executable} {os.path.abspath(__file__)} --mha-parity "
              f"{args.mha_parity} --work-dir {args.work_dir} --count {args.count} "
              f"--seed {seed})", flush=True)
        names = [n for n, _ in generate_cases.random_suite(cases_dir, args.count, seed)]
    generated = time.monotonic()
    if not names:
        print("FAILED: no cases to check")
        return 1

    coverage = collections.Counter()
    worst = {}  # dtype -> (scaled error, case, file)
    failures = []  # lines to print
    mismatches = 0
    for name in names:
        case_dir = os.path.join(cases_dir, name)
        out_dir = os.path.join(args.work_dir, "out", name)
        with open(os.path.join(case_dir, "config.json")) as f:
            config = json.load(f)
        coverage.update(coverage_of(case_dir, config, np))
        run = subprocess.run([args.mha_parity, case_dir, out_dir], capture_output=True, text=True)
        if run.returncode != 0:
            failures.append(f"{name}: mha_parity exited {run.returncode}: "
                            f"{run.stderr.strip() or run.stdout.strip()}")
            mismatches += 1
            continue
        problems, errors = compare_case(np, case_dir, out_dir, config["dtype"])
        failures += [f"{name}/{problem}" for problem in problems]
        mismatches += len(problems)
        if problems and config["dtype"] == "float32":
            failures += [f"{name}/  diagnosis: {line}" for line in
                         float64_diagnosis(np, generate_cases, case_dir, out_dir, config)]
        for f, err in errors.items():
            if err >= worst.get(config["dtype"], (-1.0,))[0]:
                worst[config["dtype"]] = (err, name, f)
    finished = time.monotonic()

    print(f"\n{len(names)} cases; coverage (cases with each option):")
    for label, count in sorted(coverage.items()):
        print(f"  {label:28s} {count}")
    print("worst error / max(1, max|expected|), per dtype:")
    for dtype, (err, name, f) in sorted(worst.items()):
        print(f"  {dtype}: {err:.3e} (tolerance {TOLERANCE[dtype]:g}) in {name}/{f}")
    print(f"time: {generated - start:.1f} s generating, {finished - generated:.1f} s running "
          f"and comparing, {finished - start:.1f} s in all")
    if mismatches:
        print(f"\nFAILED: {mismatches} mismatches (case directories kept under "
              f"{cases_dir}):")
        for failure in failures:
            print("  " + failure)
        return 1
    print("all cases agree with PyTorch")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
