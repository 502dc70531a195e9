#!/usr/bin/env python3
"""Hostile command lines: every program refuses bad input cleanly.

Each case runs a program with arguments that used to crash it, hang it, grow its memory
without bound or be accepted silently, and checks that it exits with a non-zero status
(not a signal), within 20 seconds, with a message on stderr that contains the expected
words. Run by CTest: check_command_lines.py TRAIN_TOY HEADS_COMPARE MHA_PARITY SCRATCH_DIR.
"""
import os
import subprocess
import sys


def main():
    if len(sys.argv) != 5:
        print("usage: check_command_lines.py TRAIN_TOY HEADS_COMPARE MHA_PARITY SCRATCH_DIR")
        return 2
    train_toy, heads_compare, mha_parity, scratch = sys.argv[1:]
    os.makedirs(scratch, exist_ok=True)
    blocker = os.path.join(scratch, "a_file")
    with open(blocker, "w") as f:
        f.write("x")
    out = os.path.join(scratch, "runs")
    jsonl_dir = os.path.join(scratch, "jsonl_is_a_folder")
    os.makedirs(os.path.join(jsonl_dir, "metrics.jsonl"), exist_ok=True)
    # A corpus that is no regular file: a FIFO blocked forever, /dev/zero ran to bad_alloc.
    fifo = os.path.join(scratch, "corpus_fifo")
    if not os.path.exists(fifo):
        os.mkfifo(fifo)
    char_lm = ["--task", "char_lm", "--steps", "1", "--quiet", "--out", out, "--corpus"]
    study_lm = ["--preset", "smoke", "--tasks", "char_lm", "--quiet", "--out",
                os.path.join(scratch, "study_lm"), "--corpus"]
    cases = [
        (train_toy, ["--steps", "99999999999999999999999"], "not an integer from 1 to 1000000000"),
        (train_toy, ["--layers", "1000000000000"], "not an integer from 1 to 1024"),
        (train_toy, ["--batch-size", "100000000"], "not an integer from 1 to 1000000"),
        (train_toy, ["--batch-size", "1000000", "--length", "512"], "GiB are available: lower"),
        (train_toy, ["--length", "100000"], "GiB are available: lower"),
        (train_toy, ["--clip", "nan"], "not a finite number"),
        (train_toy, ["--clip", "-1"], "not a finite number"),
        (train_toy, ["--lr", "inf"], "not a finite number"),
        (train_toy, ["--seed", "-1"], "not an integer from 0 to 18446744073709551615"),
        (train_toy, ["--eval-every", "-1"], "not an integer from 0"),
        (train_toy, ["--d-model", str(2**62)], "not an integer from 1 to 65536"),
        (train_toy, ["--heads", "3"], "does not divide --d-model 64"),
        (train_toy, ["--steps", "5", "--warmup", "10"], "lower --warmup"),
        (train_toy, ["--min-length", "9", "--length", "8"], "exceeds --length"),
        (train_toy, ["--steps", "3", "--quiet", "--out", os.path.join(blocker, "sub")],
         "cannot create the output folder"),
        (train_toy, ["--steps", "3", "--quiet", "--out", jsonl_dir], "is a folder"),
        (train_toy, char_lm + [fifo], "is a FIFO (named pipe), not a regular file"),
        (train_toy, char_lm + ["/dev/zero"], "is a character device, not a regular file"),
        (train_toy, char_lm + [""], "--corpus: the value is empty"),
        (heads_compare, study_lm + [fifo], "is a FIFO (named pipe), not a regular file"),
        (heads_compare, study_lm + [""], "--corpus: the value is empty"),
        (heads_compare, ["--seeds", "0,0"], "not an integer from 1 to 10000"),
        (heads_compare, ["--heads", "2,2"], "lists 2 twice"),
        (heads_compare, ["--lrs", "nan"], "not a finite number"),
        (heads_compare, ["--jobs", "0"], "not an integer from 1 to 1024"),
        (heads_compare, ["--steps", "-3"], "not an integer from 1"),
        (heads_compare, ["--preset", "smoke", "--out", os.path.join(blocker, "sub")],
         "cannot create the output folder"),
        (mha_parity, [os.path.join(scratch, "no_such_case"), out], "not a directory"),
    ]
    failures = 0
    for program, args, words in cases:
        name = os.path.basename(program) + " " + " ".join(args)
        try:
            run = subprocess.run([program] + args, capture_output=True, text=True, timeout=20)
        except subprocess.TimeoutExpired:
            print(f"FAIL {name}: still running after 20 s")
            failures += 1
            continue
        message = run.stderr + run.stdout
        if run.returncode <= 0 or words not in message:
            print(f"FAIL {name}: exit {run.returncode}, expected a non-zero exit and '{words}'; "
                  f"got: {message.strip()[-400:]}")
            failures += 1
        else:
            print(f"ok   {name}: {message.strip().splitlines()[0][:160]}")
    # A short run on the scaled warm-up: --steps 50 alone must train (the default warm-up
    # of 100 is scaled down instead of refused).
    run = subprocess.run([train_toy, "--steps", "50", "--quiet", "--out", out], capture_output=True,
                         text=True, timeout=120)
    if run.returncode != 0:
        print(f"FAIL train_toy --steps 50: exit {run.returncode}: {run.stderr.strip()[-400:]}")
        failures += 1
    print(f"{len(cases) + 1 - failures} of {len(cases) + 1} command lines handled as expected")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
