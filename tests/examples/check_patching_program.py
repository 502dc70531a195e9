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

The recall model is trained and analysed by the commands docs/inspect.md gives, read from
the document as written, and every number of its worked paragraph (the logit differences,
induction scores, patching effects, what the fewest heads restore, and the context
corruption's paths via k) must be what those commands print, to the digits shown.

    check_patching_program.py TRAIN_TOY PATCHING SCRATCH_DIR INSPECT_MD
"""
import json
import os
import re
import shlex
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


def documented_commands(doc, train_toy, patching, scratch):
    """The train_toy and patching commands of the doc's worked example, as argument vectors
    with the build's programs and `runs/` moved into `scratch`."""
    text = open(doc, encoding="utf-8").read()
    start = text.index("`patching` applies it to a checkpoint")
    block = re.search(r"```\n(.*?)```", text[start:], re.S).group(1)
    commands = []
    for line in block.replace("\\\n", " ").splitlines():
        words = shlex.split(line, comments=True)
        programs = {"./build/release/examples/train_toy": train_toy,
                    "./build/release/examples/patching": patching}
        if not words or words[0] not in programs:
            raise SystemExit(f"FAIL: {doc}: the worked example's line {line!r} is not a "
                             f"train_toy or patching command")
        commands.append([programs[words[0]]] + [
            os.path.join(scratch, w) if w.startswith("runs/") else w for w in words[1:]])
    return commands


def numbers_in(doc, pattern, what):
    """The numbers `pattern`'s groups find in the doc (whitespace and the minus sign
    normalised), as written."""
    text = " ".join(open(doc, encoding="utf-8").read().replace("\u2212", "-").split())
    match = re.search(pattern, text)
    if not match:
        raise SystemExit(f"FAIL: {doc}: the sentence with {what} is not where this test "
                         f"reads it (pattern {pattern!r}); update the test with the doc")
    return match.groups()


def agrees(written, value):
    """`value` rounds to `written` at written's digits ("97%" is a percentage)."""
    if written.endswith("%"):
        return f"{100 * value:.0f}%" == written
    digits = len(written.split(".")[1]) if "." in written else 0
    shown = f"{value:.{digits}f}"
    return shown == written or (shown == "-" + written.lstrip("-") and float(written) == 0)


def check_documented_numbers(doc, summary, context_k, failures):
    """Every number of the doc's worked paragraph against the programs' output."""
    documented = numbers_in(
        doc, r"clean logit difference (\S+), corrupted (\S+); layer 1's heads have induction "
        r"scores (\S+) and (\S+) and patching their z restores (\S+) and (\S+) of the logit "
        r"difference; layer 0's heads \(induction (\S+) and (\S+)\) restore (\S+) and (\S+); "
        r"the two layer-1 heads together restore (\S+)%", "the worked numbers")
    induction, effect = summary["induction_scored"], summary["patching_heads"]
    measured = [summary["clean_logit_difference"], summary["corrupted_logit_difference"],
                induction[1][0], induction[1][1], effect[1][0], effect[1][1], induction[0][0],
                induction[0][1], effect[0][0], effect[0][1],
                summary["fewest_heads_restoring"]["restored"]]
    documented = list(documented[:-1]) + [documented[-1] + "%"]
    documented += numbers_in(doc, r"via k from layer 0's heads 0 and 1, (\S+) and (\S+) \(CTest",
                             "the context corruption's paths")
    measured += context_k
    if len(summary["fewest_heads_restoring"]["heads"]) != 2:
        failures.append(f"{doc}: the fewest heads restoring 90% are "
                        f"{summary['fewest_heads_restoring']['heads']}, not the two layer-1 heads")
    for written, value in zip(documented, measured):
        if not agrees(written, value):
            failures.append(f"{doc} says {written} where the documented commands give {value!r}")
    print(f"{doc}: {len(documented)} documented numbers checked")


def main():
    if len(sys.argv) != 5:
        print(__doc__)
        return 2
    train_toy, patching, scratch, doc = sys.argv[1:]
    os.makedirs(scratch, exist_ok=True)
    for stale in ("never", "runs"):  # an earlier run's
        shutil.rmtree(os.path.join(scratch, stale), ignore_errors=True)
    train_command, patching_command = documented_commands(doc, train_toy, patching, scratch)
    run(train_command + ["--quiet"])
    model = os.path.dirname(train_command[train_command.index("--out") + 1] + "/")
    out = os.path.join(model, "patching")
    p = run(patching_command)
    print(p.stdout)
    failures = []
    for name in ["patching_heads.npy", "patching_heads.csv", "patching_head_positions.npy",
                 "patching_residual.csv", "attribution_heads.csv", "path_patching_q.npy",
                 "ablation.csv", "logit_attribution.csv", "heads.csv", "summary.json",
                 "patching_heads.png", "patching_head_positions.png", "prompts_clean.npy",
                 "patching_heads.dat", "patching_heads.gp", "patching_head_positions.gp"]:
        path = os.path.join(out, name)
        if not os.path.isfile(path):
            failures.append(f"{name} was not written")
        elif name.endswith(".png") and open(path, "rb").read(8) != b"\x89PNG\r\n\x1a\n":
            failures.append(f"{name} is not a PNG")
    summary = json.load(open(os.path.join(out, "summary.json")))
    # logit_attribution.csv: every component, then their sum, equal to the logit difference.
    rows = [line.split(",") for line in open(os.path.join(out, "logit_attribution.csv"))][1:]
    components = {row[0]: float(row[3]) for row in rows}
    parts = sum(v for k, v in components.items() if k not in ("sum", "logit_difference"))
    if not ({"embed", "layers.0.mlp", "layers.1.self_attn.bias", "norm.bias",
             "layers.1.self_attn.head1"} <= set(components) and
            abs(parts - components["sum"]) < 1e-4 and
            abs(components["sum"] - summary["clean_logit_difference"]) < 1e-3):
        failures.append(f"logit_attribution.csv does not hold every component adding up to "
                        f"the clean logit difference {summary['clean_logit_difference']}: "
                        f"{components}")
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
    check_documented_numbers(doc, json.load(open(os.path.join(out, "summary.json"))), k_layer0,
                             failures)
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
