#!/usr/bin/env python3
"""scripts/study_archive.py carries a study's runs to another machine.

From the smoke preset's run folder (the heads_compare_smoke fixture): packs its cache into an
archive, checks that a second pack adds nothing and what a part keeps (values rounded to 7
digits, patterns for seed 0 only, no checksum or view), unpacks into an empty cache (and
into one that already holds a run, which must stay as it was), then lets heads_compare
report from the unpacked cache with --cached-only: it must use every run, train none, and
give every run the same numbers as the original report to the archive's precision.

    check_study_archive.py HEADS_COMPARE SMOKE_RUN_DIR SCRATCH_DIR
"""
import glob
import json
import math
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "scripts"))
import study_archive  # noqa: E402

REL = 2e-6  # 7 significant digits, and sums of a few such numbers in the report


def fail(message):
    raise SystemExit("FAIL: " + message)


def close(a, b, where):
    """Whether the JSON values a and b agree to the archive's precision; fails naming `where`."""
    if isinstance(a, float) or isinstance(b, float):
        if a is None or b is None or not math.isclose(a, b, rel_tol=REL, abs_tol=1e-12):
            fail(f"{where}: {a!r} from the archive, {b!r} originally")
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            close(x, y, f"{where}[{i}]")
    elif isinstance(a, dict) and isinstance(b, dict) and a.keys() == b.keys():
        for k in a:
            close(a[k], b[k], f"{where}.{k}")
    elif a != b:
        fail(f"{where}: {a!r} from the archive, {b!r} originally")


def check_parts(cache, archive):
    made = study_archive.pack(cache, archive)
    originals = sorted(glob.glob(os.path.join(cache, "*.json")))
    if made is None or made[1] != len(originals):
        fail(f"pack wrote {made}, expected all {len(originals)} runs of {cache}")
    if study_archive.pack(cache, archive) is not None:
        fail("a second pack of the same cache wrote another part")
    stored = dict(study_archive.read_part(made[0]))
    for path in originals:
        key = os.path.basename(path)[:-5]
        run, original = stored[key], json.load(open(path))
        seed = json.loads(original["config"])["seed"]
        if "checksum" in run or "view" in run:
            fail(f"{key}: the part keeps a checksum or the view")
        if bool(run["patterns"]) != (seed == 0 and bool(original["patterns"])):
            fail(f"{key} (seed {seed}): patterns kept {bool(run['patterns'])} (the cache "
                 f"held {len(original['patterns'])} layers of them)")
        if run["final_val_loss"] != float(f"{original['final_val_loss']:.7g}"):
            fail(f"{key}: final_val_loss {run['final_val_loss']} is not "
                 f"{original['final_val_loss']} to 7 digits")
    return len(originals)


def check_unpack(archive, scratch, runs):
    cache = os.path.join(scratch, "cache")
    os.makedirs(cache)
    key = sorted(dict(study_archive.read_part(study_archive.parts_of(archive)[0])))[0]
    exact = os.path.join(cache, key + ".json")
    with open(exact, "w") as f:
        f.write("exact run\n")
    written, kept = study_archive.unpack(archive, cache)
    if (written, kept) != (runs - 1, 1) or open(exact).read() != "exact run\n":
        fail(f"unpack wrote {written} and kept {kept} (expected {runs - 1} and 1) or "
             "overwrote a run the cache held")
    os.remove(exact)
    if study_archive.unpack(archive, cache) != (1, runs - 1):
        fail("a second unpack did not write exactly the one missing run")


def check_report(binary, smoke_dir, scratch, runs):
    cmd = [binary, "--preset", "smoke", "--quiet", "--cached-only", "--out", scratch]
    print("+", " ".join(cmd), flush=True)
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        fail(f"heads_compare --cached-only exited {p.returncode}\n{p.stdout}\n{p.stderr}")
    if "cache file " in p.stderr or f"{runs} cache file(s)" not in p.stderr:
        fail(f"heads_compare did not read every unpacked run as a run without checksum:\n{p.stderr}")
    new, old = (json.load(open(os.path.join(d, "summary.json"))) for d in (scratch, smoke_dir))
    if new["runs_trained"] != 0 or len(new["runs"]) != len(old["runs"]):
        fail(f"trained {new['runs_trained']} runs, listed {len(new['runs'])} of {len(old['runs'])}")
    timings = ("seconds", "inspect_seconds")
    for i, (a, b) in enumerate(zip(new["runs"], old["runs"])):
        close({k: v for k, v in a.items() if k not in timings + ("cached",)},
              {k: v for k, v in b.items() if k not in timings + ("cached",)}, f"runs[{i}]")


def check_circuit_upgrade(smoke_cache, scratch):
    """A run archived before it recorded a circuit, then trained again with one, goes into a
    later part; unpack takes the later one, and replaces a cached copy without a circuit."""
    cache, archive, target = (os.path.join(scratch, n) for n in ("up_cache", "up_archive",
                                                                  "up_target"))
    shutil.copytree(smoke_cache, cache, ignore=shutil.ignore_patterns("partial", "*.claim*"))
    path = next(p for p in sorted(glob.glob(os.path.join(cache, "*.json")))
                if "circuit" in json.load(open(p)))
    key = os.path.basename(path)[:-len(".json")]
    original = open(path).read()
    older = {k: v for k, v in json.loads(original).items() if k not in ("circuit", "checksum")}
    with open(path, "w") as f:
        json.dump(older, f)
    study_archive.pack(cache, archive)
    with open(path, "w") as f:
        f.write(original)
    made = study_archive.pack(cache, archive)
    if not made or made[1] != 1:
        fail(f"the run trained again with a circuit was not packed alone: {made}")
    if "circuit" not in study_archive.latest_runs(study_archive.parts_of(archive))[key]:
        fail("the later part's run does not win")
    os.makedirs(target)
    with open(os.path.join(target, key + ".json"), "w") as f:
        json.dump(older, f)
    study_archive.unpack(archive, target)
    if "circuit" not in json.load(open(os.path.join(target, key + ".json"))):
        fail("unpack kept a cached run without a circuit where the archive has one")


def main():
    if len(sys.argv) != 4:
        raise SystemExit(__doc__)
    binary, smoke_dir, scratch = sys.argv[1:4]
    shutil.rmtree(scratch, ignore_errors=True)
    archive = os.path.join(scratch, "archive")
    runs = check_parts(os.path.join(smoke_dir, "cache"), archive)
    report_dir = os.path.join(scratch, "report")
    check_unpack(archive, report_dir, runs)
    check_report(binary, smoke_dir, report_dir, runs)
    check_circuit_upgrade(os.path.join(smoke_dir, "cache"), scratch)
    print(f"ok: {runs} runs packed, unpacked and reported from the archive as from the cache")


if __name__ == "__main__":
    main()
