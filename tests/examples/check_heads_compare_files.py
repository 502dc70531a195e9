#!/usr/bin/env python3
"""heads_compare's run folder against hostile files and a full disk.

cache mode: cached runs edited the ways a user or a damaged disk edits them (arrays
emptied, widened or shortened, values out of range, a changed digit, a cut file) must not
crash the report: the program retrains the run, names the file and what is wrong on
stderr, exits 0 and writes the report a clean cache gives. Temporary and claim files of
dead processes are removed, others kept. A second process on a folder in use is refused
with the holder named, and the folder is free again once the holder is killed.

disk mode: writes that fail (RLIMIT_FSIZE, as a full disk fails them, with SIGXFSZ
ignored) make heads_compare and train_toy exit non-zero naming the file, and leave the
previous good report, summary and tables byte-identical, with no temporary file behind.

Files are edited with the standard library alone. Run by CTest:
    check_heads_compare_files.py cache HEADS_COMPARE SCRATCH_DIR
    check_heads_compare_files.py disk HEADS_COMPARE TRAIN_TOY SCRATCH_DIR
"""
import json
import os
import re
import resource
import shutil
import signal
import socket
import subprocess
import sys
import time

from folders import dead_pid, snapshot

# Two runs (H = 1, 2; 2 layers, 40 steps) of the smoke preset: seconds each.
STUDY = ["--preset", "smoke", "--tasks", "associative_recall", "--arms", "fixed_width",
         "--seeds", "1", "--lrs", "0.01", "--jobs", "1", "--quiet"]
TIMINGS = ("seconds", "checksum", "command", "runs_trained", "runs_cached")


def without_timings(value):
    if isinstance(value, dict):
        return {k: without_timings(v) for k, v in value.items()
                if not any(t in k for t in TIMINGS)}
    if isinstance(value, list):
        return [without_timings(v) for v in value]
    return value


def temp_files(folder):
    return [os.path.relpath(os.path.join(root, n), folder) for root, _, names in os.walk(folder)
            for n in names if ".tmp." in n]


class Probe:
    def __init__(self, scratch):
        self.scratch = scratch
        self.tried = self.clean = 0

    def run(self, args, timeout=120, limit=None):
        def limited():
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
        run = subprocess.run(args, capture_output=True, text=True, timeout=timeout,
                             preexec_fn=limited if limit is not None else None)
        return run.returncode, run.stderr + run.stdout

    def report(self, name, problems, detail):
        self.tried += 1
        self.clean += not problems
        text = "; ".join(problems) + (" -- " if problems else "") + detail
        print(f"{'ok  ' if not problems else 'FAIL'} {name}: {text[:400]}")

    def folder(self, name, base=None):
        path = os.path.join(self.scratch, name)
        shutil.rmtree(path, ignore_errors=True)
        if base:
            shutil.copytree(base, path)
        return path

    def base_run(self, binary):
        base = self.folder("base")
        code, out = self.run([binary, *STUDY, "--out", base])
        if code != 0:
            raise SystemExit(f"check_heads_compare_files: the base run failed ({code}): {out[-600:]}")
        return base


# ------------------------------------------------------------------------------------
def cache_files(folder):
    """{(layers, heads): path} of the cached runs."""
    found = {}
    cache = os.path.join(folder, "cache")
    for name in sorted(os.listdir(cache)):
        if name.endswith(".json"):
            path = os.path.join(cache, name)
            config = json.loads(json.load(open(path))["config"])
            found[(config["model"]["layers"], config["model"]["heads"])] = path
    return found


def edit(change):
    """A file editor: loads the JSON, applies change(j), writes it back."""
    def apply(path):
        with open(path) as f:
            j = json.load(f)
        change(j)
        with open(path, "w") as f:
            json.dump(j, f)
    return apply


def flip_digit(path):
    """Changes one digit of final_val_loss in the text, keeping the value in range."""
    with open(path) as f:
        text = f.read()
    m = re.search(r'"final_val_loss":\s*[0-9]+\.([0-9])', text)
    digit = m.group(1)
    text = text[:m.start(1)] + ("5" if digit != "5" else "6") + text[m.end(1):]
    with open(path, "w") as f:
        f.write(text)


def cut(path):
    with open(path) as f:
        text = f.read()
    with open(path, "w") as f:
        f.write(text[: len(text) // 2])


HOSTILE = [
    ("previous_token emptied", edit(lambda j: j["curve"][1].__setitem__("previous_token", [])),
     "previous_token"),
    ("induction widened", edit(lambda j: [r.append(0.5) for r in j["curve"][0]["induction"]]),
     "induction"),
    ("by_importance.loss shortened", edit(lambda j: j["by_importance"]["loss"].pop()),
     "by_importance.loss"),
    ("final_test_acc 7.5", edit(lambda j: j.__setitem__("final_test_acc", 7.5)), "final_test_acc"),
    ("a negative loss", edit(lambda j: j["curve"][0].__setitem__("loss", -0.5)), "curve[0].loss"),
    ("head_params emptied", edit(lambda j: j.__setitem__("head_params", [])), "head_params"),
    ("solved_step -7", edit(lambda j: j.__setitem__("solved_step", -7)), "'solved_step' is -7"),
    ("a changed digit", flip_digit, "checksum"),
    ("a file cut in half", cut, "cannot be read"),
]


def hostile_cache(probe, binary):
    base = probe.base_run(binary)
    good = json.load(open(os.path.join(base, "summary.json")))
    for name, damage, words in HOSTILE:
        folder = probe.folder("hostile", base)
        target = cache_files(folder)[(2, 2)]
        expected = without_timings(json.load(open(target)))
        damage(target)
        code, out = probe.run([binary, *STUDY, "--out", folder])
        problems = [] if code == 0 else [f"exit {code}"]
        notice = next((l for l in out.splitlines() if "cache file" in l), "")
        if target not in notice:
            problems.append("no notice naming the file")
        if words not in notice or "retraining" not in notice:
            problems.append(f"the notice lacks '{words}' or 'retraining'")
        if code == 0:
            summary = json.load(open(os.path.join(folder, "summary.json")))
            if without_timings(summary) != without_timings(good):
                problems.append("summary.json differs from a clean cache's")
            rewritten = json.load(open(target))
            if "checksum" not in rewritten or without_timings(rewritten) != expected:
                problems.append("the run's cache file was not rewritten as trained")
        probe.report(f"cached run with {name}", problems, notice or out[-300:])


def stale_files(probe, binary):
    folder = probe.folder("stale", probe.base_run(binary))
    cache = os.path.join(folder, "cache")
    key = os.path.basename(cache_files(folder)[(2, 2)])[:-5]
    host, now = socket.gethostname(), time.time()

    def put(name, text="", age=0):
        path = os.path.join(cache, name)
        with open(path, "w") as f:
            f.write(text)
        os.utime(path, (now - age, now - age))
        return name

    gone = [put(f"{key}.json.tmp.{host}.{dead_pid()}.0", "{half a run"),
            put(f"{key}.json.tmp.140183726112448", "{", age=2 * 3600),  # older versions' name
            put(f"{key}.claim-11", f"{dead_pid()} {host} 1700000000\n"),
            put(f"{key}.claim-12", "4242 elsewhere 1700000000\n", age=8 * 24 * 3600)]
    kept = [put(f"{key}.json.tmp.elsewhere.4242.0", "{"),
            put(f"{key}.claim-13", f"{os.getpid()} {host} 1700000000\n"),
            put(f"{key}.claim-14", "4242 elsewhere 1700000000\n", age=3600)]
    code, out = probe.run([binary, *STUDY, "--out", folder])
    left = os.listdir(cache)
    problems = [] if code == 0 else [f"exit {code}"]
    problems += [f"{n} is still there" for n in gone if n in left]
    problems += [f"{n} was removed" for n in kept if n not in left]
    line = next((l for l in out.splitlines() if "removed" in l), "")
    if "2 temporary file(s)" not in line or "2 claim(s)" not in line:
        problems.append("no line saying what was removed")
    probe.report("stale temporary and claim files", problems, line or out[-300:])


def locked_folder(probe, binary):
    folder = probe.folder("locked")
    holder = subprocess.Popen([binary, *STUDY, "--steps", "1000000", "--out", folder],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    lock = os.path.join(folder, ".lock")
    problems = []
    try:
        for _ in range(300):
            if os.path.exists(lock) and open(lock).read().startswith(f"{holder.pid} "):
                break
            time.sleep(0.1)
        code, out = probe.run([binary, *STUDY, "--out", folder], timeout=30)
        if code == 0:
            problems.append("a second process on the folder exited 0")
        for words in [f"pid {holder.pid}", socket.gethostname(), "another --out"]:
            if words not in out:
                problems.append(f"no '{words}' in the refusal")
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    # The kernel released the killed holder's lock: the folder is usable again.
    code, again = probe.run([binary, *STUDY, "--out", folder])
    if code != 0:
        problems.append(f"after the holder was killed the folder is still refused ({code})")
    probe.report("a second process on a folder in use", problems, out.strip().splitlines()[-1])


# ------------------------------------------------------------------------------------
def failing_writes(probe, name, args, limit, folder, words, expect_unchanged):
    before = snapshot(folder)
    code, out = probe.run(args, limit=limit)
    after = snapshot(folder)
    problems = [] if code > 0 else [f"exit {code}"]
    if words not in out or "cannot write" not in out:
        problems.append(f"no 'cannot write' naming '{words}' in the message")
    changed = sorted(k for k in expect_unchanged if before.get(k) != after.get(k))
    if changed:
        problems.append(f"changed on disk: {changed}")
    if temp_files(folder):
        problems.append(f"temporary files left: {temp_files(folder)}")
    line = next((l for l in out.splitlines() if "cannot write" in l), out[-300:])
    probe.report(name, problems, line)


def full_disk(probe, binary, train_toy):
    def good_run(name):
        folder = probe.folder(name)
        code, out = probe.run([binary, *STUDY, "--out", folder])
        if code != 0:
            raise SystemExit(f"check_heads_compare_files: the good run failed ({code}): {out[-600:]}")
        files = snapshot(folder)
        return folder, {k: len(v) for k, v in files.items() if not k.startswith("cache") and
                        k != ".lock"}

    folder, sizes = good_run("full")
    failing_writes(probe, "heads_compare on a disk that takes no byte",
                   [binary, *STUDY, "--out", folder], 0, folder, "runs.csv", sizes)
    # A disk that takes the tables and plot files but not summary.json: the largest of
    # those limits each file, and summary.json is larger.
    folder, sizes = good_run("full_summary")
    small = max(v for k, v in sizes.items()
                if k.endswith(".csv") or k.endswith(".gp") or "/data/" in k)
    if small < sizes["summary.json"]:
        failing_writes(probe, "heads_compare on a disk that fills before summary.json",
                       [binary, *STUDY, "--out", folder], small + 1, folder, "summary.json",
                       sizes)
    folder = probe.folder("full_metrics")
    failing_writes(probe, "train_toy on a disk that takes no byte",
                   [train_toy, "--task", "copy", "--length", "4", "--d-model", "16", "--layers",
                    "1", "--heads", "2", "--steps", "4", "--quiet", "--out", folder], 0, folder,
                   "metrics.csv", [])


def main():
    if len(sys.argv) < 4 or sys.argv[1] not in ("cache", "disk"):
        print(__doc__)
        return 2
    mode, binary, scratch = sys.argv[1], sys.argv[2], sys.argv[-1]
    os.makedirs(scratch, exist_ok=True)
    probe = Probe(scratch)
    if mode == "cache":
        hostile_cache(probe, binary)
        stale_files(probe, binary)
        locked_folder(probe, binary)
    else:
        full_disk(probe, binary, sys.argv[3])
    print(f"{probe.clean} of {probe.tried} cases handled cleanly")
    return 0 if probe.clean == probe.tried else 1


if __name__ == "__main__":
    sys.exit(main())
