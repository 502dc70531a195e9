#!/usr/bin/env python3
"""The patching program on a trained recall model, and on bad input.

train_toy trains a 2-layer, 2-head GPT on associative_recall until it solves it (about 3 s);
the patching program then must find the mechanism the field expects: patching the clean z
of the head with the highest induction score into the corrupted run restores most (>= 50%)
of the logit difference, and patching the head with the lowest induction score (a
non-induction head, score < 0.4) restores almost nothing (< 10%); under --corruption
context a layer-0 head's path into the receiver's keys restores >= 30% (K-composition,
which the query corruption cannot show). Every promised file is
written, the heatmaps are PNGs. Bad input (a missing file, a checkpoint of another task, a
file that is no checkpoint, an output path under a file, a checkpoint whose trainer/config
was edited: model.heads "2abc", seed "-1", 4 heads over 2-head weights with or without
the archive comment) fails with a message naming the problem (the field and the file)
and writes nothing; a per-head checkpoint without the comment, whose weights name their
heads, is analysed.

    check_patching_program.py TRAIN_TOY PATCHING SCRATCH_DIR
"""
import json
import os
import shutil
import struct
import subprocess
import sys
import zipfile


def run(cmd, expect_ok=True):
    print("+", " ".join(cmd), flush=True)
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if expect_ok and p.returncode != 0:
        raise SystemExit(f"FAIL: exit {p.returncode}\n{p.stdout}\n{p.stderr}")
    return p


def npy_int64(values):
    """A 1-d little-endian int64 .npy file of `values`."""
    header = "{'descr': '<i8', 'fortran_order': False, 'shape': (%d,), }" % len(values)
    header += " " * (63 - (10 + len(header)) % 64) + "\n"
    return (b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode() +
            struct.pack("<%dq" % len(values), *values))


def edit_checkpoint(source, target, changes, keep_comment=True):
    """A copy of `source` with fields of its trainer/config set as in `changes` and, unless
    `keep_comment`, without the archive comment (as numpy.savez or a zip tool leaves it)."""
    with zipfile.ZipFile(source) as z:
        members = [(info, z.read(info.filename)) for info in z.infolist()]
        comment = z.comment
    with zipfile.ZipFile(target, "w") as out:
        for info, data in members:
            if info.filename == "trainer/config.npy":
                offset = 10 + struct.unpack("<H", data[8:10])[0]
                text = bytes(struct.unpack("<%dq" % ((len(data) - offset) // 8), data[offset:]))
                config = json.loads(text.decode())
                for f in config["fields"]:
                    if f["name"] in changes:
                        f["value"] = changes[f["name"]]
                data = npy_int64(list(json.dumps(config).encode()))
            out.writestr(info, data)
        if keep_comment:
            out.comment = comment
    return target


def edited_checkpoints(good, train_toy, patching, scratch, failures):
    """Checkpoints whose trainer/config lies: each refusal must name the field and the file.
    Returns the cases; a per-head checkpoint without its comment must be analysed."""
    per_head = os.path.join(scratch, "per_head")
    run([train_toy, "--task", "associative_recall", "--length", "4", "--d-model", "16",
         "--heads", "2", "--per-head", "--steps", "3", "--eval-every", "0",
         "--checkpoint-every", "0", "--out", per_head, "--quiet"])
    per_head = os.path.join(per_head, "checkpoint.npz")
    edited = os.path.join(scratch, "edited")
    os.makedirs(edited, exist_ok=True)
    cases = []
    for name, source, changes, keep, words in [
            ("heads_2abc", good, {"model.heads": "2abc"}, True, "model.heads is '2abc'"),
            ("seed_minus_1", good, {"seed": "-1"}, True, "seed is '-1'"),
            ("heads_4", good, {"model.heads": "4"}, True,
             "model.heads is 4, but its weights are those of 2 heads"),
            ("heads_4_no_comment", good, {"model.heads": "4"}, False,
             "model.heads is 4, which cannot be checked against the weights"),
            ("per_head_4_no_comment", per_head, {"model.heads": "4"}, False,
             "model.heads is 4, but its per-head weights hold 2 heads")]:
        path = edit_checkpoint(source, os.path.join(edited, name + ".npz"), changes, keep)
        cases.append((["--checkpoint", path, "--out", os.path.join(scratch, "never")],
                      f"checkpoint '{path}': trainer/config field {words}"))
    # Per-head weights name their heads: without the comment they still prove the count.
    path = edit_checkpoint(per_head, os.path.join(edited, "per_head_no_comment.npz"), {}, False)
    p = run([patching, "--checkpoint", path, "--out", os.path.join(edited, "per_head_out"),
             "--examples", "8", "--no-positions", "--no-ablations"], expect_ok=False)
    if p.returncode != 0:
        failures.append(f"per-head weights without the archive comment were refused: {p.stderr}")
    return cases


def main():
    if len(sys.argv) != 4:
        print(__doc__)
        return 2
    train_toy, patching, scratch = sys.argv[1:]
    os.makedirs(scratch, exist_ok=True)
    shutil.rmtree(os.path.join(scratch, "never"), ignore_errors=True)  # an earlier run's
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

    # --corruption context: the layer-0 outputs differ, so the path from a layer-0 head
    # into the receiver runs through its keys (K-composition, the induction circuit).
    context = os.path.join(scratch, "context")
    run([patching, "--checkpoint", os.path.join(model, "checkpoint.npz"), "--out", context,
         "--corruption", "context", "--no-positions"])
    summary = json.load(open(os.path.join(context, "summary.json")))
    rows = [line.split(",") for line in open(os.path.join(context, "path_patching_k.csv"))][1:]
    k_layer0 = [float(value) for layer, head, value in rows if layer == "0"]
    print(f"context corruption: path patching via k from layer 0 {k_layer0}")
    if summary["corruption"] != "context":
        failures.append(f"summary.json says corruption {summary['corruption']!r}")
    if max(k_layer0) < 0.3:
        failures.append(f"no layer-0 head feeds the receiver's keys under the context "
                        f"corruption: {k_layer0}")

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
    cases += edited_checkpoints(os.path.join(model, "checkpoint.npz"), train_toy, patching,
                                scratch, failures)
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
