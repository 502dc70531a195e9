"""Ctrl-C stops headgrad's long C++ loops from Python: Trainer.fit, the heads_compare study
and a patching sweep, run without Python callbacks, end with KeyboardInterrupt within a
fraction of a second of SIGINT (at most 5 s on a loaded machine), leaving only whole files
behind."""
import json
import os
import signal
import subprocess
import sys
import time

import numpy as np

PREAMBLE = """
import sys
import headgrad as hg
hg.set_num_threads(1)

def report(run):
    print("ready", flush=True)
    try:
        run()
    except KeyboardInterrupt as e:
        print("KeyboardInterrupt:", " | ".join(getattr(e, "__notes__", [])), flush=True)
        raise
    print("finished", flush=True)
"""

FIT = PREAMBLE + """
task = hg.train.make_task("copy", seed=0, length=6)
model = hg.nn.GPT(vocab_size=task.vocab_size, max_len=task.max_len, d_model=32, nhead=2,
                  num_layers=2, generator=hg.Generator(0))
opt = hg.optim.Adam(model.parameters(), lr=1e-3)
trainer = hg.train.Trainer(model, task, opt, steps=10**7, batch_size=8, eval_every=10**6,
                           eval_batches=1, progress=False, out_dir=sys.argv[1])
report(trainer.fit)
"""

STUDY = PREAMBLE + """
# The smoke preset at 5000 steps a run: the signal comes while runs train (the report and
# plots that follow training run external programs and are not interrupted).
report(lambda: hg.study.heads_compare(preset="smoke", steps=5000, out=sys.argv[1], quiet=True,
                                      jobs=2))
"""

PATCHING = PREAMBLE + """
g = hg.Generator(0)
model = hg.nn.GPT(vocab_size=16, max_len=64, d_model=64, nhead=8, num_layers=4,
                  generator=g).eval()
clean = hg.randint(2, 16, (16, 64), generator=g)
corrupted = hg.randint(2, 16, (16, 64), generator=g)
position = hg.full((16,), 63, dtype=hg.int64)
metric = hg.inspect.LogitDifference(position, hg.full((16,), 3, dtype=hg.int64),
                                    hg.full((16,), 4, dtype=hg.int64))
patching = hg.inspect.Patching(model, clean, corrupted, metric)
report(lambda: patching.by_head_position("z"))  # 4 x 8 x 64 patched runs: a long sweep
"""


def interrupt(script, *args, wait=1.0):
    """Runs `script`, sends SIGINT `wait` seconds after it starts its loop; returns the
    process's output and the seconds from the signal to its end."""
    env = dict(os.environ, OMP_NUM_THREADS="1")
    proc = subprocess.Popen([sys.executable, "-c", script, *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stdout.readline().strip() == "ready", proc.stderr.read()
        time.sleep(wait)
        assert proc.poll() is None, "the loop ended before the signal"
        sent = time.monotonic()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
        return out, err, time.monotonic() - sent
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


# Measured on a quiet machine: 0.06 - 0.09 s from SIGINT to the end. The limit leaves room
# for a loaded one (the suite runs two tests at a time; a checkpoint is fsynced): without
# the check the loops run for minutes, so the test still tells the two apart.
def assert_interrupted(out, err, seconds, limit=5.0):
    assert "KeyboardInterrupt:" in out, (out, err)
    assert "finished" not in out
    assert "Traceback" in err and "KeyboardInterrupt" in err, err
    assert seconds < limit, f"{seconds:.2f} s from SIGINT to the end"


def no_temporary_files(folder):
    for root, _, files in os.walk(folder):
        for f in files:
            assert ".tmp" not in f, os.path.join(root, f)


def test_ctrl_c_interrupts_trainer_fit_and_keeps_a_whole_checkpoint(work_dir):
    out, err, seconds = interrupt(FIT, work_dir)
    assert_interrupted(out, err, seconds)
    assert "Trainer.fit: interrupted after step" in out and work_dir in out
    no_temporary_files(work_dir)
    with np.load(os.path.join(work_dir, "checkpoint.npz")) as checkpoint:
        assert len(checkpoint.files) > 0


def test_ctrl_c_interrupts_heads_compare_and_caches_only_finished_runs(work_dir):
    out, err, seconds = interrupt(STUDY, work_dir, wait=2.0)
    assert_interrupted(out, err, seconds)
    assert "interrupted after step" in out
    assert not os.path.exists(os.path.join(work_dir, "summary.json"))
    no_temporary_files(work_dir)
    for root, _, files in os.walk(work_dir):
        for f in files:
            if f.endswith(".json"):
                with open(os.path.join(root, f), encoding="utf-8") as fh:
                    json.load(fh)  # every cached run is whole


def test_ctrl_c_interrupts_a_patching_sweep():
    out, err, seconds = interrupt(PATCHING)
    assert_interrupted(out, err, seconds)
    assert "inspect::Patching: interrupted between runs" in out
