#!/usr/bin/env python3
"""The programs under `mpirun -np 2`, against the same programs in one process.

1. heads_compare --preset smoke on 2 ranks writes the summary.json and tables of a
   one-process run (every field but timings), trained half the runs on each rank.
2. train_toy --task sort on 2 ranks (data-parallel) follows the one-process metrics within
   1e-4 and resumes; a checkpoint written by 2 ranks resumes in 1 process and the other way.
3. A rank killed with SIGKILL mid-training makes the job end with an error within 60 s.
4. heads_compare killed mid-study on 2 ranks leaves claim files; the next study on the
   folder removes them (their processes are gone) and finishes.
5. Ranks given different options (mpirun's `-np 1 A : -np 1 B`), a different checkpoint to
   resume from, or cache folders that are not one folder, are refused at startup: every
   rank exits non-zero within seconds, naming the option and each rank's value, and
   nothing is written; options that only look different (3e-3 and 0.003) agree.

Run by CTest: check_mpi_programs.py MPIRUN TRAIN_TOY HEADS_COMPARE SCRATCH_DIR
"""
import csv
import json
import os
import shutil
import signal
import subprocess
import sys
import time

TIMING_KEYS = ("seconds", "command")


def without_timings(value):
    if isinstance(value, dict):
        return {k: without_timings(v) for k, v in value.items()
                if not any(t in k for t in TIMING_KEYS)}
    if isinstance(value, list):
        return [without_timings(v) for v in value]
    return value


def exited(pid):
    """True when no process has `pid`, or the one that has it is a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except (FileNotFoundError, ProcessLookupError):
        return True


def csv_without(path, column):
    with open(path) as f:
        rows = list(csv.DictReader(f))
    for row in rows:
        row.pop(column, None)
    return rows


def metrics(path):
    with open(path) as f:
        return [(r["step"], r["split"], float(r["loss"]), float(r["accuracy"]))
                for r in csv.DictReader(f)]


class Check:
    def __init__(self, mpirun, scratch):
        self.mpirun = mpirun.split(";") + ["--allow-run-as-root", "--oversubscribe",
                                           "--bind-to", "none"]
        self.scratch = scratch
        self.failures = 0

    def run(self, args, ranks=None, timeout=240):
        command = (self.mpirun + ["-np", str(ranks)] if ranks else []) + args
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
        if done.returncode != 0:
            raise AssertionError(f"{' '.join(command)} exited {done.returncode}:\n"
                                 f"{(done.stderr + done.stdout)[-1500:]}")
        return done.stderr + done.stdout

    def case(self, name, body):
        start = time.monotonic()
        try:
            detail = body()
            print(f"ok   {name} ({time.monotonic() - start:.1f} s): {detail}")
        except Exception as e:  # noqa: BLE001 - report every failure, then go on
            self.failures += 1
            print(f"FAIL {name}: {e}")

    def folder(self, name):
        path = os.path.join(self.scratch, name)
        shutil.rmtree(path, ignore_errors=True)
        return path

    def study(self, heads_compare):
        one, two = self.folder("study_1"), self.folder("study_2")
        self.run([heads_compare, "--preset", "smoke", "--jobs", "1", "--quiet", "--out", one])
        self.run([heads_compare, "--preset", "smoke", "--out", two], ranks=2)
        a = json.load(open(os.path.join(one, "summary.json")))
        b = json.load(open(os.path.join(two, "summary.json")))
        if without_timings(a) != without_timings(b):
            keys = [k for k in a if without_timings(a.get(k)) != without_timings(b.get(k))]
            raise AssertionError(f"summary.json differs in {keys}")
        for table in ["runs.csv", "heads.csv", "curves.csv", "pruning.csv"]:
            if csv_without(os.path.join(one, table), "seconds") != \
                    csv_without(os.path.join(two, table), "seconds"):
                raise AssertionError(f"{table} differs")
        claims = [n for n in os.listdir(os.path.join(two, "cache")) if ".claim-" in n]
        if claims:
            raise AssertionError(f"claim files left in the cache: {claims[:3]}")
        return (f"summary.json and the tables equal a one-process run's; "
                f"{b['runs_trained']} runs trained")

    def training(self, train_toy):
        args = [train_toy, "--task", "sort", "--steps", "60", "--eval-every", "20", "--quiet"]
        one, two = self.folder("sort_1"), self.folder("sort_2")
        self.run(args + ["--out", one])
        self.run(args + ["--out", two], ranks=2)
        a, b = metrics(os.path.join(one, "metrics.csv")), metrics(os.path.join(two, "metrics.csv"))
        worst = max(max(abs(x[2] - y[2]), abs(x[3] - y[3])) for x, y in zip(a, b))
        if len(a) != len(b) or worst > 1e-4:
            raise AssertionError(f"metrics differ by {worst} ({len(a)} and {len(b)} rows)")
        # Resume across world sizes: 2 ranks continue the 1-process run, 1 the 2-rank run.
        longer = [train_toy, "--task", "sort", "--steps", "80", "--eval-every", "20", "--quiet",
                  "--resume"]
        self.run(longer + ["--out", one], ranks=2)
        self.run(longer + ["--out", two])
        c, d = metrics(os.path.join(one, "metrics.csv")), metrics(os.path.join(two, "metrics.csv"))
        if [r[:2] for r in c] != [r[:2] for r in d] or c[-1][0] != "80":
            raise AssertionError(f"resumed runs report {[r[:2] for r in c]} and {[r[:2] for r in d]}")
        worst_resumed = max(abs(x[2] - y[2]) for x, y in zip(c, d))
        if worst_resumed > 1e-4:
            raise AssertionError(f"resumed metrics differ by {worst_resumed}")
        return (f"2-rank metrics within {worst:.1e} of one process; resumed both ways to step 80 "
                f"(within {worst_resumed:.1e})")

    def rank_death(self, train_toy):
        out = self.folder("killed")
        command = self.mpirun + ["-np", "2", train_toy, "--task", "sort", "--steps", "1000000",
                                 "--quiet", "--out", out]
        job = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        time.sleep(3)
        ranks = subprocess.run(["pgrep", "-f", "train_toy --task sort --steps 1000000"],
                               capture_output=True, text=True).stdout.split()
        ranks = [int(p) for p in ranks if int(p) != job.pid]
        if len(ranks) < 2:
            job.kill()
            raise AssertionError(f"expected 2 ranks running, found {ranks}")
        os.kill(max(ranks), signal.SIGKILL)
        killed_at = time.monotonic()
        try:
            output, _ = job.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            job.kill()
            raise AssertionError("the job was still running 60 s after a rank was killed")
        waited = time.monotonic() - killed_at
        if job.returncode == 0:
            raise AssertionError("the job exited 0 after a rank was killed")
        return f"the job ended with exit {job.returncode} {waited:.1f} s after the kill"

    def killed_study(self, heads_compare):
        out = self.folder("killed_study")
        cache = os.path.join(out, "cache")
        args = [heads_compare, "--preset", "smoke", "--quiet", "--out", out]
        job = subprocess.Popen(self.mpirun + ["-np", "2"] + args, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
        claims = []
        for _ in range(600):
            claims = [n for n in os.listdir(cache) if ".claim-" in n] if os.path.isdir(cache) else []
            if claims:
                break
            time.sleep(0.1)
        pattern = "heads_compare " + " ".join(args[1:])
        ranks = subprocess.run(["pgrep", "-f", pattern], capture_output=True,
                               text=True).stdout.split()
        ranks = [int(p) for p in ranks if int(p) != job.pid]
        for pid in ranks:
            os.kill(pid, signal.SIGKILL)
        job.wait(timeout=60)
        for _ in range(300):  # every killed rank gone (or exited, waiting to be reaped)
            if all(exited(pid) for pid in ranks):
                break
            time.sleep(0.1)
        left = [n for n in os.listdir(cache) if ".claim-" in n]
        if not claims or not left:
            raise AssertionError(f"no claims to clean: {len(claims)} seen, {len(left)} left "
                                 f"after killing ranks {ranks}")
        output = self.run(args, ranks=2)
        after = [n for n in os.listdir(cache) if ".claim-" in n]
        if after or "claim(s) of runs whose process ended" not in output:
            raise AssertionError(f"claims left after the next study: {after[:3]}; "
                                 f"output: {output[-400:]}")
        return f"{len(left)} claim(s) of the killed study removed by the next, which finished"

    def two_ranks(self, first, second, cwd_second=None, cwd=None):
        """mpirun -np 1 FIRST : -np 1 SECOND (in folder cwd_second); (exit code, output,
        seconds)."""
        command = (self.mpirun + ["-np", "1"] + first + [":", "-np", "1"] +
                   (["-wdir", cwd_second] if cwd_second else []) + second)
        start = time.monotonic()
        done = subprocess.run(command, capture_output=True, text=True, timeout=120,
                              cwd=cwd or self.scratch)
        return done.returncode, done.stderr + done.stdout, time.monotonic() - start

    def refused(self, first, second, expected, cwd_second=None, cwd=None):
        code, output, seconds = self.two_ranks(first, second, cwd_second, cwd)
        if code == 0:
            raise AssertionError(f"exited 0:\n{output[-1500:]}")
        if seconds > 60:
            raise AssertionError(f"took {seconds:.0f} s to stop")
        for bad in ("Segmentation fault", "signal 11", "core dumped", "timed out"):
            if bad in output:
                raise AssertionError(f"'{bad}' in the output:\n{output[-1500:]}")
        # (Every rank refuses alike, but mpirun may stop a rank before it prints: the first
        # rank's message is the one checked.)
        for text in expected:
            if text not in output:
                raise AssertionError(f"no '{text}' in the output:\n{output[-1500:]}")
        return f"exit {code} after {seconds:.1f} s"

    def disagreements(self, train_toy, heads_compare):
        out = self.folder("disagree")
        os.makedirs(out)
        toy = [train_toy, "--quiet"]  # --task reverse, the default
        study = [heads_compare, "--preset", "smoke", "--quiet", "--out", os.path.join(out, "s")]
        cases = [
            (toy + ["--seed", "3", "--out", out], toy + ["--seed", "4", "--out", out],
             ["ranks disagree on --seed: rank 0 has 3, rank 1 has 4",
              "give every rank the same options"]),
            (toy + ["--steps", "40", "--out", out], toy + ["--steps", "20", "--out", out],
             ["on --steps: rank 0 has 40, rank 1 has 20"]),
            (toy + ["--lr", "0.01", "--dropout", "0.1", "--clip", "0", "--out", out],
             toy + ["--lr", "0.003", "--dropout", "0", "--out", out],
             ["on --lr: rank 0 has 0.01, rank 1 has 0.003", "on --dropout: rank 0 has 0.1",
              "on --clip: rank 0 has 0, rank 1 has 1"]),
            (toy + ["--batch-size", "32", "--task", "sort", "--out", out],
             toy + ["--batch-size", "64", "--out", out],
             ["on --task: rank 0 has sort, rank 1 has reverse",
              "on --batch-size: rank 0 has 32, rank 1 has 64"]),
            (study + ["--seeds", "2"], study + ["--seeds", "1"],
             ["heads_compare: ranks disagree on --seeds: rank 0 has 2, rank 1 has 1"]),
            (study + ["--lrs", "0.01,0.003"], study + ["--lrs", "0.01"],
             ["on --lrs: rank 0 has 0.01,0.003, rank 1 has 0.01"]),
            (study + ["--steps", "20"], study + ["--steps", "30"],
             ["on --steps: rank 0 has 20, rank 1 has 30"]),
        ]
        details = [self.refused(a, b, expected) for a, b, expected in cases]
        if os.listdir(out):
            raise AssertionError(f"refused runs wrote {os.listdir(out)}")
        # Resume: rank 0 has a checkpoint at step 20 in its --out, rank 1 none in its own.
        a, b = os.path.join(out, "a"), os.path.join(out, "b")
        self.run(toy + ["--steps", "20", "--out", a])
        checkpoint = os.path.join(a, "checkpoint.npz")
        before = open(checkpoint, "rb").read()
        longer = toy + ["--steps", "40", "--resume"]
        details.append(self.refused(
            longer + ["--out", a], longer + ["--out", b],
            ["ranks disagree on the checkpoint to resume from: rank 0 has step 20 of",
             f"rank 1 has no checkpoint at {b}/checkpoint.npz", "one --out folder"]))
        if open(checkpoint, "rb").read() != before or os.path.exists(b):
            raise AssertionError("a refused resume changed the checkpoint or made rank 1's --out")
        # The same relative --out seen from two working folders holding equal copies of the
        # checkpoint: one checkpoint, so the ranks agree and resume.
        other = os.path.join(out, "elsewhere")
        os.makedirs(os.path.join(other, "a"))
        shutil.copy(checkpoint, os.path.join(other, "a"))
        code, output, _ = self.two_ranks(longer + ["--out", "a", "--lr", "3e-3"],
                                         longer + ["--out", "a", "--lr", "0.003"],
                                         cwd_second=other, cwd=out)
        if code != 0 or "step 40" not in output:
            raise AssertionError(f"equal checkpoints and options were refused:\n{output[-1500:]}")
        # heads_compare: the same relative --out from two working folders is two caches.
        details.append(self.refused(
            study[:-2] + ["--steps", "20", "--out", "s"], study[:-2] + ["--steps", "20", "--out", "s"],
            ["heads_compare: ranks disagree on the cache folder",
             "not rank 0's", "a folder all ranks see"], cwd_second=other, cwd=out))
        return "every case refused: " + "; ".join(details)


def main():
    if len(sys.argv) != 5:
        print(__doc__)
        return 2
    mpirun, train_toy, heads_compare, scratch = sys.argv[1:]
    os.makedirs(scratch, exist_ok=True)
    check = Check(mpirun, scratch)
    check.case("heads_compare --preset smoke on 2 ranks", lambda: check.study(heads_compare))
    check.case("train_toy --task sort data-parallel on 2 ranks", lambda: check.training(train_toy))
    check.case("a rank killed mid-training ends the job", lambda: check.rank_death(train_toy))
    check.case("claims of a killed study are removed by the next",
               lambda: check.killed_study(heads_compare))
    check.case("ranks that disagree are refused at startup",
               lambda: check.disagreements(train_toy, heads_compare))
    print(f"{5 - check.failures} passed, {check.failures} failed")
    return 1 if check.failures else 0


if __name__ == "__main__":
    sys.exit(main())
