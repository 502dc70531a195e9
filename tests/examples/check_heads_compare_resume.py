"""A heads_compare run killed mid-training resumes from its checkpoint, bitwise.

The same run (one head, recall, 3000 steps, --checkpoint-every 500) is trained once without
interruption and once killed (SIGKILL) as soon as its first checkpoint is on disk, then
started again: the second invocation says it resumed, and its cached result equals the
uninterrupted one in everything but the times and the checksum that covers them; the
partial folder is gone afterwards.
Arguments: heads_compare binary, work folder.
"""
import glob
import json
import os
import shutil
import subprocess
import sys
import time

binary, work = sys.argv[1], sys.argv[2]
shutil.rmtree(work, ignore_errors=True)


def command(out):
    return [binary, "--preset", "smoke", "--tasks", "associative_recall", "--arms", "fixed_width",
            "--heads", "1", "--seeds", "1", "--lrs", "0.003", "--steps", "3000",
            "--checkpoint-every", "500", "--jobs", "1", "--out", out, "--quiet"]


def cached(out):
    files = glob.glob(out + "/cache/*.json")
    assert len(files) == 1, files
    run = json.load(open(files[0]))
    for key in ("seconds", "inspect_seconds", "checksum"):
        run.pop(key)
    return run


whole, killed = os.path.join(work, "whole"), os.path.join(work, "killed")
subprocess.run(command(whole), check=True, stdout=subprocess.DEVNULL)
p = subprocess.Popen(command(killed), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
deadline = time.time() + 60
while not glob.glob(killed + "/cache/partial/*/checkpoint.npz"):
    assert p.poll() is None, "the run ended before its first checkpoint"
    assert time.time() < deadline, "no checkpoint within 60 s"
    time.sleep(0.005)
p.kill()
p.wait()
assert not glob.glob(killed + "/cache/*.json"), "the killed run was cached"
again = subprocess.run(command(killed), check=True, capture_output=True, text=True)
assert "resumed from its checkpoint at step" in again.stderr, again.stderr
assert cached(killed) == cached(whole), "the resumed run differs from the uninterrupted one"
assert not glob.glob(killed + "/cache/partial/*"), "the partial folder was left behind"
print("resume:", again.stderr.strip().splitlines()[-1])
