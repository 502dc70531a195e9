#!/usr/bin/env python3
"""patching, attention_view, train_toy and heads_compare write every file whole or not at all.

- patching under a file-size limit (RLIMIT_FSIZE with SIGXFSZ ignored, as a full disk
  fails a write): it exits non-zero, the message names the file and the system's reason
  ("File too large"), and the folder is byte-identical to the good run's (no file cut
  mid-row, no 0-byte file, no temporary file).
- patching, attention_view and train_toy remove the temporary files a killed run left in
  their output folder (a dead writer's, on this host), and keep a live writer's and one
  from another host.
- train_toy under a limit its next metrics row passes: metrics.csv and metrics.jsonl keep
  whole rows only.
- heads_compare --cached-only without the runs of its --view-seeds keeps the view.html an
  earlier invocation wrote, and report.md says where it comes from.

    check_atomic_outputs.py TRAIN_TOY PATCHING ATTENTION_VIEW HEADS_COMPARE SCRATCH_DIR
"""
import os
import resource
import shutil
import signal
import socket
import subprocess
import sys

from folders import dead_pid, snapshot

STUDY = ["--preset", "smoke", "--tasks", "associative_recall", "--arms", "fixed_width",
         "--lrs", "0.01", "--jobs", "1", "--quiet"]


def run(cmd, limit=None):
    def limited():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120,
                       preexec_fn=limited if limit is not None else None)
    return p.returncode, p.stdout + p.stderr


class Checks:
    def __init__(self):
        self.failures, self.done = [], 0

    def report(self, name, problems, detail=""):
        self.done += 1
        self.failures += [f"{name}: {p}" for p in problems]
        print(f"{'ok  ' if not problems else 'FAIL'} {name}: "
              f"{'; '.join(problems) or detail}"[:600])


def temp_files(folder):
    return sorted(n for n in os.listdir(folder) if ".tmp." in n or ".tmp-" in n)


def plant_temp_files(folder, target):
    """Stale and live temporary files beside `target`: which must go and which stay."""
    host = socket.gethostname()
    stale = [f".{target}.tmp.{host}.{dead_pid()}.0", f".{target}.tmp-{dead_pid()}-0-123456"]
    live = [f".{target}.tmp.{host}.{os.getpid()}.7", f".{target}.tmp.elsewhere.{dead_pid()}.0"]
    for name in stale + live:
        with open(os.path.join(folder, name), "w") as f:
            f.write("half a file")
    return stale, live


def stale_removed(checks, name, folder, cmd, stale, live):
    code, out = run(cmd)
    left = os.listdir(folder)
    problems = [] if code == 0 else [f"exit {code}: {out[-300:]}"]
    problems += [f"the stale {n} is still there" for n in stale if n in left]
    problems += [f"the live or other host's {n} was removed" for n in live if n not in left]
    checks.report(name, problems, "stale temporary files removed, others kept")


def patching_checks(checks, train_toy, patching, scratch):
    model = os.path.join(scratch, "model")
    code, out = run([train_toy, "--task", "associative_recall", "--length", "4", "--d-model",
                     "16", "--layers", "2", "--heads", "4", "--steps", "10", "--batch-size", "8",
                     "--eval-every", "0", "--checkpoint-every", "0", "--out", model, "--quiet"])
    if code != 0:
        raise SystemExit(f"FAIL: train_toy exited {code}: {out[-600:]}")
    folder = os.path.join(scratch, "patching")
    cmd = [patching, "--checkpoint", os.path.join(model, "checkpoint.npz"), "--out", folder,
           "--examples", "4", "--no-positions"]
    code, out = run(cmd)
    if code != 0:
        raise SystemExit(f"FAIL: the good patching run exited {code}: {out[-600:]}")
    good = snapshot(folder)
    # A limit every .npy file passes: the first larger CSV or JSON file is refused midway.
    limit = max(len(v) for k, v in good.items() if k.endswith(".npy")) + 1
    text = sorted(k for k, v in good.items()
                  if len(v) >= limit and (k.endswith(".csv") or k.endswith(".json")))
    for name, lim in [(f"patching with a file-size limit of {limit} bytes", limit),
                      ("patching on a disk that takes no byte", 0)]:
        code, out = run(cmd, limit=lim)
        problems = [] if code != 0 else ["exit 0"]
        if "File too large" not in out or "cannot write" not in out:
            problems.append(f"no 'cannot write' with the reason 'File too large': {out[-300:]}")
        if lim and not any(f"/{k}'" in out for k in text):
            problems.append(f"the message names none of {text}")
        after = snapshot(folder)
        changed = sorted(k for k in set(good) | set(after) if good.get(k) != after.get(k))
        if changed:
            problems.append(f"changed on disk: {changed}")
        line = next((l for l in out.splitlines() if "cannot write" in l), out[-300:])
        checks.report(name, problems, line)
    stale, live = plant_temp_files(folder, "ablation.csv")
    stale_removed(checks, "patching removes a killed run's temporary files", folder, cmd, stale,
                  live)


def attention_view_checks(checks, attention_view, scratch):
    folder = os.path.join(scratch, "view")
    os.makedirs(folder)
    stale, live = plant_temp_files(folder, "view.html")
    cmd = [attention_view, "--heads", "1", "--d-model", "8", "--layers", "1", "--steps", "2",
           "--examples", "2", "--out", os.path.join(folder, "view.html"), "--expected",
           os.path.join(folder, "expected.json")]
    stale_removed(checks, "attention_view removes a killed run's temporary files", folder, cmd,
                  stale, live)
    code, out = run([*cmd[:-4], "--seed", "-1", *cmd[-4:]])
    problems = [] if code != 0 else ["--seed -1 was accepted (it would wrap to 2^64 - 1)"]
    if "--seed" not in out:
        problems.append(f"the refusal does not name --seed: {out[-200:]}")
    checks.report("attention_view --seed -1 is refused", problems, out.strip().splitlines()[-1])
    # --expected naming a folder used to fail after training and writing the view.
    fresh = os.path.join(scratch, "view_expected")
    os.makedirs(fresh)
    code, out = run([*cmd[:-4], "--out", os.path.join(fresh, "view.html"), "--expected", fresh])
    problems = [] if code != 0 else ["--expected naming a folder was accepted"]
    if "is a folder" not in out:
        problems.append(f"the refusal does not say the path is a folder: {out[-200:]}")
    if os.listdir(fresh):
        problems.append(f"it wrote {os.listdir(fresh)} before refusing")
    checks.report("attention_view --expected FOLDER is refused before anything is written",
                  problems, out.strip().splitlines()[-1])


def whole_lines(path):
    with open(path, "rb") as f:
        data = f.read()
    return data == b"" or data.endswith(b"\n")


def train_toy_checks(checks, train_toy, scratch):
    folder = os.path.join(scratch, "train")
    base = [train_toy, "--task", "copy", "--length", "4", "--d-model", "8", "--layers", "1",
            "--heads", "1", "--eval-every", "2", "--checkpoint-every", "0", "--quiet", "--out",
            folder]
    code, out = run([*base, "--steps", "4"])
    if code != 0:
        raise SystemExit(f"FAIL: train_toy exited {code}: {out[-600:]}")
    csv, jsonl = os.path.join(folder, "metrics.csv"), os.path.join(folder, "metrics.jsonl")
    before = {p: open(p, "rb").read() for p in (csv, jsonl)}
    # The checkpoint (several KB) is written after the rows; the limit stops a row midway.
    limit = max(len(v) for v in before.values()) + 20
    code, out = run([*base, "--steps", "8", "--resume"], limit=limit)
    problems = [] if code != 0 else ["exit 0"]
    if "File too large" not in out or "metrics." not in out:
        problems.append(f"the message names no metrics file and reason: {out[-300:]}")
    for p in (csv, jsonl):
        if not whole_lines(p):
            problems.append(f"{os.path.basename(p)} ends in a partial row")
        elif not open(p, "rb").read().startswith(before[p]):
            problems.append(f"{os.path.basename(p)} lost rows")
    if temp_files(folder):
        problems.append(f"temporary files left: {temp_files(folder)}")
    checks.report("train_toy whose metrics row the disk refuses", problems,
                  next((l for l in out.splitlines() if "cannot write" in l), out[-200:]))
    stale, live = plant_temp_files(folder, "metrics.csv")
    stale_removed(checks, "train_toy removes a killed run's temporary files", folder,
                  [*base, "--steps", "8", "--resume"], stale, live)


def cached_view_checks(checks, heads_compare, scratch):
    folder = os.path.join(scratch, "study")
    code, out = run([heads_compare, *STUDY, "--seeds", "1", "--out", folder])
    view = os.path.join(folder, "view.html")
    if code != 0 or not os.path.isfile(view):
        raise SystemExit(f"FAIL: the good heads_compare run exited {code}: {out[-600:]}")
    before = open(view, "rb").read()
    # Seed 1 was never trained: --cached-only has no run of the view's seed to show.
    code, out = run([heads_compare, *STUDY, "--seeds", "2", "--view-seeds", "1", "--cached-only",
                     "--out", folder])
    problems = [] if code == 0 else [f"exit {code}: {out[-300:]}"]
    if not os.path.isfile(view):
        problems.append("view.html was deleted")
    elif open(view, "rb").read() != before:
        problems.append("view.html was changed")
    report = open(os.path.join(folder, "report.md")).read()
    if "earlier invocation" not in report:
        problems.append("report.md does not say view.html is from an earlier invocation")
    checks.report("heads_compare --cached-only without the view's runs keeps view.html", problems,
                  next((l for l in out.splitlines() if "view.html" in l), ""))


def main():
    if len(sys.argv) != 6:
        print(__doc__)
        return 2
    train_toy, patching, attention_view, heads_compare, scratch = sys.argv[1:]
    shutil.rmtree(scratch, ignore_errors=True)
    os.makedirs(scratch)
    checks = Checks()
    patching_checks(checks, train_toy, patching, scratch)
    attention_view_checks(checks, attention_view, scratch)
    train_toy_checks(checks, train_toy, scratch)
    cached_view_checks(checks, heads_compare, scratch)
    print(f"{checks.done - len(set(f.split(':')[0] for f in checks.failures))} of {checks.done} "
          f"checks passed")
    return 1 if checks.failures else 0


if __name__ == "__main__":
    sys.exit(main())
