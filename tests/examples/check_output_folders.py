#!/usr/bin/env python3
"""The programs write into output folders whose names a shell would read as code, and run
no shell.

patching, heads_compare (its smallest study: one task, one arm, one seed) and
attention_view (two tiny models) each write into folders named a';touch X;'b, o'brien,
$(touch Y), `touch Z`b and "sp ace". No file X, Y, Z or PWNED may appear anywhere (the
programs run with their working folder inside the scratch folder, so a shell's touch
would land there), every program must exit 0, and where gnuplot is installed the PNG
plots must be there and be PNGs.

    check_output_folders.py TRAIN_TOY PATCHING HEADS_COMPARE ATTENTION_VIEW SCRATCH_DIR
"""
import os
import shutil
import subprocess
import sys
import time

NAMES = ["a';touch X;'b", "o'brien", "$(touch Y)", "`touch Z`b", "sp ace"]
MARKERS = {"X", "Y", "Z", "PWNED"}
PNG = b"\x89PNG\r\n\x1a\n"
# The smoke preset narrowed to two runs (H = 1, 2) of 40 steps: about a second.
STUDY = ["--preset", "smoke", "--tasks", "associative_recall", "--arms", "fixed_width",
         "--seeds", "1", "--lrs", "0.01", "--jobs", "1", "--quiet"]


def run(cmd, cwd):
    started = time.time()
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=cwd)
    return p.returncode, p.stdout + p.stderr, time.time() - started


def markers(folder):
    return sorted(os.path.join(root, n) for root, dirs, files in os.walk(folder)
                  for n in files + dirs if n in MARKERS)


def is_png(path):
    with open(path, "rb") as f:
        return f.read(8) == PNG


def main():
    if len(sys.argv) != 6:
        print(__doc__)
        return 2
    train_toy, patching, heads_compare, attention_view, scratch = map(os.path.abspath,
                                                                      sys.argv[1:])
    shutil.rmtree(scratch, ignore_errors=True)
    work = os.path.join(scratch, "cwd")  # every program's working folder
    os.makedirs(work)
    gnuplot = shutil.which("gnuplot") is not None
    failures = []

    model = os.path.join(scratch, "model")
    code, out, _ = run([train_toy, "--task", "associative_recall", "--length", "4", "--d-model",
                        "16", "--layers", "2", "--heads", "2", "--steps", "20", "--batch-size",
                        "16", "--eval-every", "0", "--checkpoint-every", "0", "--out", model,
                        "--quiet"], work)
    if code != 0:
        raise SystemExit(f"FAIL: train_toy exited {code}: {out[-800:]}")
    checkpoint = os.path.join(model, "checkpoint.npz")
    cache = os.path.join(scratch, "cache")  # one cache: the study trains once

    for name in NAMES:
        folder = os.path.join(scratch, name)
        os.makedirs(folder)
        programs = [
            ("patching", [patching, "--checkpoint", checkpoint, "--out",
                          os.path.join(folder, "patching"), "--examples", "16"]),
            ("heads_compare", [heads_compare, *STUDY, "--out", os.path.join(folder, "study"),
                               "--cache", cache]),
            ("attention_view", [attention_view, "--heads", "1,2", "--d-model", "16", "--layers",
                                "1", "--steps", "5", "--examples", "2", "--out",
                                os.path.join(folder, "view.html")]),
        ]
        for program, cmd in programs:
            code, out, seconds = run(cmd, work)
            print(f"{program} into {name!r}: exit {code}, {seconds:.1f} s")
            if code != 0:
                failures.append(f"{program} into {name!r} exited {code}: {out[-500:]}")
        pngs = [os.path.join(folder, "patching", "patching_heads.png"),
                os.path.join(folder, "patching", "patching_head_positions.png")]
        plots = os.path.join(folder, "study", "plots")
        if os.path.isdir(plots):
            pngs += [os.path.join(plots, n) for n in sorted(os.listdir(plots))
                     if n.endswith(".png")][:3]
        if gnuplot:
            if not any(p.startswith(plots) for p in pngs):
                failures.append(f"heads_compare drew no PNG in {plots!r}")
            for p in pngs:
                if not os.path.isfile(p) or not is_png(p):
                    failures.append(f"{p!r} is missing or not a PNG")
        if not os.path.isfile(os.path.join(folder, "view.html")):
            failures.append(f"attention_view wrote no view.html in {name!r}")

    found = markers(scratch)
    if found:
        failures.append(f"a shell ran the folder names: {found} were created")
    if not gnuplot:
        print("gnuplot is not installed: the PNG checks were skipped")
    for f in failures:
        print("FAIL", f)
    print(f"{len(NAMES)} hostile folder names, {len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
