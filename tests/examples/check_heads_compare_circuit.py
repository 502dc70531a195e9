"""heads_compare's circuit into layer 0 on a model known to solve associative recall.

A one-head, two-layer model (the smoke preset's width) trained 3000 steps solves
associative recall with an induction circuit: under the context corruption its layer-0
head matters, and the path from that head into the layer-1 head runs through the
receiver's keys (K-composition), not its queries. This checks the cached circuit of each
run and the report's section against those facts, which the patching code does not know.
Then the circuit stage: the runs' cache files with their circuit (and checksum) taken
out, as runs cached before circuits were recorded, are trained again to record it, and
training again gives the same final loss, bit for bit.
Arguments: heads_compare binary, work folder.
"""
import glob
import json
import shutil
import subprocess
import sys

binary, work = sys.argv[1], sys.argv[2]
shutil.rmtree(work, ignore_errors=True)
command = [binary, "--preset", "smoke", "--tasks", "associative_recall", "--arms", "fixed_width",
           "--heads", "1", "--seeds", "2", "--lrs", "0.003", "--steps", "3000", "--out", work]
subprocess.run(command + ["--quiet"], check=True, stdout=subprocess.DEVNULL)
files = sorted(glob.glob(work + "/cache/*.json"))
runs = [json.load(open(f)) for f in files]
assert len(runs) == 2, len(runs)
for run in runs:
    assert run["final_test_acc"] > 0.95, run["final_test_acc"]
    circuit = run["circuit"]
    assert circuit["corruption"] == "context", circuit["corruption"]
    assert circuit["clean"] - circuit["corrupted"] > 1, (circuit["clean"], circuit["corrupted"])
    # One head per layer: heads [[layer 0], [layer 1]], paths [receiver][sender] = 1 x 1.
    assert len(circuit["heads"]) == 2 and len(circuit["heads"][0]) == 1
    assert circuit["heads"][0][0] > 0.5, circuit["heads"]
    k, q = circuit["paths"]["k"][0][0], circuit["paths"]["q"][0][0]
    assert k > 0.5 and abs(q) < 0.2, (k, q)
report = open(work + "/report.md").read()
assert "### Circuits into layer 0" in report
assert "| H=1 d=16 | 2/2 |" in report
# The circuit plot: its data row (model, then mean low high of the layer-0 head, the paths
# via q, k and v, and the receiver) says the same as the cached circuits.
assert "(plots/circuit_associative_recall_fixed_width.png)" in report
row = open(work + "/plots/data/circuit_associative_recall_fixed_width.dat").read().split()
assert len(row) == 16, row
layer0, via_q, via_k = float(row[1]), float(row[4]), float(row[7])
mean_k = sum(r["circuit"]["paths"]["k"][0][0] for r in runs) / len(runs)
assert layer0 > 0.5 and abs(via_q) < 0.2 and abs(via_k - mean_k) < 1e-5, (row, mean_k)

for f, run in zip(files, runs):
    older = {k: v for k, v in run.items() if k not in ("circuit", "checksum")}
    with open(f, "w") as out:
        json.dump(older, out)
again = subprocess.run(command, check=True, capture_output=True, text=True)
assert "2 best-rate runs trained again to record their circuit" in again.stderr, again.stderr
for f, run in zip(files, runs):
    now = json.load(open(f))
    assert now["circuit"] == run["circuit"], f
    assert now["final_test_loss"] == run["final_test_loss"], f
print("circuit: K-composition in both runs; the circuit stage restores it bitwise")
