#!/usr/bin/env python3
"""heads_compare's runs trained as ensembles equal the same runs trained one at a time.

The smoke preset's run folder (the heads_compare_smoke fixture, trained with ensembles, the
default) against the same preset run again with --no-ensemble into another folder: every
run's cache entry (same file names: a run's key does not depend on how it was trained) must
hold the same values in every field but the timings (seconds, inspect_seconds) and the
checksum that covers them. The smoke preset's tasks include a regression task (float inputs,
no positions, bidirectional), so both kinds of model are covered.

    check_heads_compare_ensemble.py HEADS_COMPARE ENSEMBLE_RUN_DIR SCRATCH_DIR
"""
import glob
import json
import os
import shutil
import subprocess
import sys

TIMINGS = {"seconds", "inspect_seconds", "checksum"}
# The fixture's own checks rerun it with other --view-seeds, which adds the view's patterns
# to runs of more seeds there: the view is compared where both caches hold it.


def main():
    if len(sys.argv) != 4:
        raise SystemExit(__doc__)
    binary, ensemble_dir, scratch = sys.argv[1:4]
    shutil.rmtree(scratch, ignore_errors=True)
    cmd = [binary, "--preset", "smoke", "--jobs", "2", "--quiet", "--no-ensemble", "--out", scratch]
    print("+", " ".join(cmd), flush=True)
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        raise SystemExit(f"FAIL: heads_compare --no-ensemble exited {p.returncode}\n{p.stdout}\n{p.stderr}")
    together = sorted(glob.glob(os.path.join(ensemble_dir, "cache", "*.json")))
    alone = sorted(glob.glob(os.path.join(scratch, "cache", "*.json")))
    names = lambda files: [os.path.basename(f) for f in files]
    if not together or names(together) != names(alone):
        raise SystemExit(f"FAIL: the two caches hold different runs:\n{names(together)}\n{names(alone)}")
    differing, views = [], 0
    for a, b in zip(together, alone):
        x, y = json.load(open(a)), json.load(open(b))
        views += "view" in x and "view" in y
        skip = TIMINGS | ({"view"} if ("view" in x) != ("view" in y) else set())
        fields = sorted(k for k in set(x) | set(y) if k not in skip and x.get(k) != y.get(k))
        if fields:
            differing.append(f"{os.path.basename(a)} ({x['spec'] if 'spec' in x else ''}): {fields}")
    if differing:
        raise SystemExit("FAIL: runs trained as ensembles differ from alone in:\n" + "\n".join(differing))
    if views == 0:
        raise SystemExit("FAIL: no run holds the view's patterns in both caches")
    print(f"ok: {len(together)} runs ({views} with the view's patterns), every field but the "
          "timings equal with and without ensembles")


if __name__ == "__main__":
    main()
