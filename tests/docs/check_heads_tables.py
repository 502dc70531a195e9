"""docs/research/heads_tables.py on the smoke study's summary.json.

Fills a document with every kind of table and checks: the text around the markers is kept,
each table carries the summary's own numbers (the verdicts, each grid's best rates), a
second fill changes nothing, and an unknown table name is refused with the names it knows,
leaving the document as it was.
Arguments: heads_tables.py, the smoke run folder, a work folder.
"""
import json
import os
import subprocess
import sys

script, run, work = sys.argv[1:4]
summary_path = os.path.join(run, "summary.json")
summary = json.load(open(summary_path))
os.makedirs(work, exist_ok=True)
doc = os.path.join(work, "heads.md")
names = ["study:full", "study:text_long", "verdicts", "text_long",
         "count_or_size:associative_recall", "circuits:associative_recall",
         "fixed_width:associative_recall", "fixed_width:char_lm"]
text = "# kept\n\n" + "".join(f"before {n}\n<!-- table: {n} -->\nstale\n<!-- end table -->\nafter\n"
                              for n in names)
open(doc, "w").write(text)


def fill():
    return subprocess.run([sys.executable, script, summary_path, summary_path, doc],
                          capture_output=True, text=True)


done = fill()
assert done.returncode == 0, done.stderr
filled = open(doc).read()
assert filled.startswith("# kept\n") and "stale" not in filled
for n in names:
    assert f"before {n}\n<!-- table: {n} -->\n" in filled, n
    body = filled.split(f"<!-- table: {n} -->\n")[1].split("<!-- end table -->")[0]
    assert body.strip(), f"table {n} is empty"
# The verdicts are the summary's, one row per confirmatory test.
grids = [g for g in summary["count_or_size"] if g["family"] == "confirmatory"]
assert grids, "the smoke summary has no confirmatory grid"
verdicts = filled.split("<!-- table: verdicts -->\n")[1].split("<!-- end table -->")[0]
rows = [r for r in verdicts.splitlines() if r.startswith("| ") and "---" not in r][1:]
assert len(rows) == 3 * len(grids), rows
for g in grids:
    for effect in ("count", "size", "interaction"):
        assert f"| {g['task']} | {effect} |" in verdicts and g["verdicts"][effect] in verdicts
# The recall grid names each model's best rate.
recall = next(g for g in summary["count_or_size"] if g["task"] == "associative_recall")
grid = filled.split("<!-- table: count_or_size:associative_recall -->\n")[1]
for cell in recall["cells"]:
    assert f"(lr {cell['best_lr']:g}" in grid, cell
assert fill().returncode == 0 and open(doc).read() == filled, "a second fill changed the document"

open(doc, "w").write(text.replace("verdicts", "no_such_table"))
refused = fill()
assert refused.returncode != 0 and "unknown table 'no_such_table'" in refused.stderr, refused
assert open(doc).read() == text.replace("verdicts", "no_such_table"), "a refused fill wrote"
print(f"heads_tables: {len(names)} tables filled from the smoke summary; bad names refused")
