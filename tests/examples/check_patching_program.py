#!/usr/bin/env python3
"""The patching program on a trained recall model, and on bad input.

train_toy trains a 2-layer, 2-head GPT on associative_recall until it solves it (about 3 s);
the patching program then must find the mechanism the field expects: patching the clean z
of the head with the highest induction score into the corrupted run restores most (>= 50%)
of the logit difference, and patching the head with the lowest induction score (a
non-induction head, score < 0.4) restores almost nothing (< 10%). Every promised file is
written, the heatmaps are PNGs. Bad input (a missing file, a checkpoint of another task, a
file that is no checkpoint, an output path under a file) fails with a message naming
the problem and writes nothing.

    check_patching_program.py TRAIN_TOY PATCHING SCRATCH_DIR
"""
import json
import os
import subprocess
import sys


def run(cmd, expect_ok=True):
    print("+", " ".join(cmd), flush=True)
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if expect_ok and p.returncode != 0:
        raise SystemExit(f"FAIL: exit {p.returncode}\n{p.stdout}\n{p.stderr}")
    return p


def main():
    if len(sys.argv) != 4:
        print(__doc__)
        return 2
    train_toy, patching, scratch = sys.argv[1:]
    os.makedirs(scratch, exist_ok=True)
    model = os.path.join(scratch, "recall")
    run([train_toy, "--task", "associative_recall", "--length", "4", "--d-model", "32",
         "--layers", "2", "--heads", "2", "--steps", "1500", "--batch-size", "32", "--lr",
         "0.003", "--eval-every", "0", "--checkpoint-every", "0", "--seed", "1", "--out", model,
         "--quiet"])
    out = os.path.join(scratch, "analysis")
    p = run([patching, "--checkpoint", os.path.join(model, "checkpoint.npz"), "--out", out])
    print(p.stdout)
    failures = []
    for name in ["patching_heads.npy", "patching_heads.csv", "patching_head_positions.npy",
                 "patching_residual.csv", "attribution_heads.csv", "path_patching_q.npy",
                 "ablation.csv", "logit_attribution.csv", "heads.csv", "summary.json",
                 "patching_heads.png", "patching_head_positions.png", "prompts_clean.npy"]:
        path = os.path.join(out, name)
        if not os.path.isfile(path):
            failures.append(f"{name} was not written")
        elif name.endswith(".png") and open(path, "rb").read(8) != b"\x89PNG\r\n\x1a\n":
            failures.append(f"{name} is not a PNG")
    summary = json.load(open(os.path.join(out, "summary.json")))
    induction, effect = summary["induction_scored"], summary["patching_heads"]
    heads = [(l, h) for l in range(len(effect)) for h in range(len(effect[l]))]
    top = max(heads, key=lambda lh: induction[lh[0]][lh[1]])
    low = min(heads, key=lambda lh: induction[lh[0]][lh[1]])
    print(f"induction {induction}\npatching {effect}\ntop induction head {top}, lowest {low}")
    if summary["clean_logit_difference"] < 2:
        failures.append(f"the model did not learn recall: clean logit difference "
                        f"{summary['clean_logit_difference']:.3f}")
    if induction[top[0]][top[1]] < 0.4:
        failures.append(f"no induction head: the highest score is {induction[top[0]][top[1]]:.3f}")
    if effect[top[0]][top[1]] < 0.5:
        failures.append(f"patching the top induction head {top} restores only "
                        f"{effect[top[0]][top[1]]:.3f}")
    if induction[low[0]][low[1]] >= 0.4 or abs(effect[low[0]][low[1]]) >= 0.1:
        failures.append(f"head {low} (induction {induction[low[0]][low[1]]:.3f}) restores "
                        f"{effect[low[0]][low[1]]:.3f}")

    # Bad input: a message naming the problem, exit 1, nothing written.
    blocker = os.path.join(scratch, "a_file")
    with open(blocker, "w") as f:
        f.write("not a checkpoint")
    sort_model = os.path.join(scratch, "sort")
    run([train_toy, "--task", "sort", "--steps", "3", "--d-model", "16", "--heads", "2",
         "--eval-every", "0", "--checkpoint-every", "0", "--out", sort_model, "--quiet"])
    cases = [
        (["--checkpoint", os.path.join(scratch, "missing.npz")], "is not a file"),
        (["--checkpoint", os.path.join(sort_model, "checkpoint.npz"),
          "--out", os.path.join(scratch, "never")], "defined for associative_recall and mqar"),
        (["--checkpoint", blocker, "--out", os.path.join(scratch, "never")], blocker),
        (["--checkpoint", os.path.join(model, "checkpoint.npz"), "--out",
          os.path.join(blocker, "sub")], "cannot create the output folder"),
        (["--checkpoint", os.path.join(model, "checkpoint.npz"), "--examples", "1"],
         "not an integer from 2"),
    ]
    for args, words in cases:
        p = run([patching] + args, expect_ok=False)
        if p.returncode <= 0 or words not in p.stderr:
            failures.append(f"{args}: exit {p.returncode}, stderr {p.stderr.strip()!r} "
                            f"(expected a failing exit and {words!r})")
    if os.path.exists(os.path.join(scratch, "never")):
        failures.append("a refused run created its output folder")
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
