"""Fills the tables of docs/research/heads.md from the two studies' summary.json files.

heads.md marks each generated table with a pair of comments,

    <!-- table: NAME -->
    ... (replaced) ...
    <!-- end table -->

and this script rewrites what lies between them from the studies' numbers, so that every
table in the write-up is the report's numbers, regenerated with them
(docs/research/make_figures.sh runs it after regenerating the reports). NAME is one of:

    study:full, study:text_long    the study's size: unique runs, missing runs, run time
    verdicts                       the confirmatory count-or-size tests, Holm-adjusted
    count_or_size:TASK             TASK's head_grid (H x d) at each budget, with its tests
    circuits:TASK                  TASK's circuits into layer 0 (fixed_width, head_grid and
                                   their long budgets)
    fixed_width:TASK               TASK's fixed-width models at both budgets, paired with H = 1
    text_long                      char_lm at T = 256, 1x and 10x, with its language scores

Usage: heads_tables.py FULL_SUMMARY TEXT_LONG_SUMMARY DOC
"""
import json
import os
import re
import sys
import tempfile

MARKER = re.compile(r"(<!-- table: ([a-z_:]+) -->\n)(.*?)(<!-- end table -->)", re.S)


def number(v, digits):
    return "-" if v is None else f"{v:.{digits}f}"


def interval(i, digits, scale=1.0, sign=False, unit=""):
    """'estimate [low, high]' of an interval object, scaled; '-' when there is none."""
    if i is None or i.get("estimate") is None:
        return "-"
    form = f"{{:{'+' if sign else ''}.{digits}f}}{unit}"
    text = form.format(scale * i["estimate"])
    if i.get("low") is not None and i.get("high") is not None:
        text += " [" + form.format(scale * i["low"]) + ", " + form.format(scale * i["high"]) + "]"
    return text


def median_steps(i, budget):
    """A Kaplan-Meier median with its interval; 'not reached' where the data allow no bound."""
    if i is None or i.get("estimate") is None:
        return f"not reached (censored at {budget})"
    bound = lambda v: "not reached" if v is None else f"{v:g}"
    return f"{i['estimate']:g} [{bound(i.get('low'))}, {bound(i.get('high'))}]"


def solved(m):
    s = m["success_rate"]
    return f"{m['solved']}/{m['n']} [{100 * s['low']:.0f}%, {100 * s['high']:.0f}%]"


SCORED_BY_LOSS = {}  # task -> its primary metric is the loss (summary.json's scored_by_loss)


def by_loss(task):
    return SCORED_BY_LOSS[task]


def metric(m, task):
    """The task's primary metric of a selected model: final loss or final accuracy."""
    if by_loss(task):
        return interval(m["final_test_loss"], 4 if task != "char_lm" else 3)
    return interval(m["final_test_acc"], 1, 100, unit="%")


def paired(p, task, with_signs=True):
    """A paired comparison: Hodges-Lehmann shift [exact interval], signs, Holm p."""
    if p is None or p.get("n", 0) == 0:
        return "-"
    loss = by_loss(task)
    text = interval(p["hodges_lehmann"], 4 if loss else 1, 1 if loss else 100, sign=True)
    if p.get("hodges_lehmann_coverage", 0.95) < 0.95 - 1e-9:
        text += f" (exact {100 * p['hodges_lehmann_coverage']:.0f}%)"
    if with_signs:
        text += f"; {p['positive']}+ {p['negative']}− {p['ties']}="
    return text + f"; Holm p {p['holm_p']:.3g}"


def label(m):
    return f"H = {m['heads']}, d = {m['head_dim']}"


def selected(summary, task, arm):
    return [m for m in summary["selected"] if m["task"] == task and m["arm"] == arm]


def long_arm(summary, arm):
    """The long-budget arm of `arm` in this study ('fixed_width_3x'), or None."""
    arms = {m["arm"] for m in summary["selected"]}
    return next((a for a in sorted(arms) if a.startswith(arm + "_") and a.endswith("x")), None)


def study_table(summary, name):
    run_hours = summary["run_seconds_summed"] / 3600
    return (
        "| study | unique runs in the cache | planned first-stage runs missing | the runs' own "
        "training and inspection time, summed |\n|---|---|---|---|\n"
        f"| {name} | {summary['runs_cached'] + summary['runs_trained']:,} | "
        f"{summary['runs_missing']} | {run_hours:.1f} h |\n")


def verdicts_table(full):
    rows = []
    for g in full["count_or_size"]:
        if g["family"] != "confirmatory":
            continue
        for effect in ("count", "size", "interaction"):
            p = g[effect]
            unit = "loss" if by_loss(g["task"]) else "points"
            rows.append(f"| {g['task']} | {effect} | {paired(p, g['task'], False)} ({unit}) | "
                        f"{p['positive']}+ {p['negative']}− {p['ties']}= of {p['n']} | "
                        f"{g['verdicts'][effect]} |")
    if not rows:
        return "(no head_grid runs yet)\n"
    return ("| task | effect | shift [exact 95%]; Holm p | per-seed signs (+ − =) | "
            "verdict (Holm p < 0.05) |\n|---|---|---|---|---|\n" + "\n".join(rows) + "\n")


def grid_cell(m, task):
    if m is None:
        return "-"
    lead = "" if task == "char_lm" else f"{m['solved']}/{m['n']}; "
    edge = " (edge)" if m.get("best_lr_at_edge") else ""
    return f"{lead}{metric(m, task)} (lr {m['best_lr']:g}{edge})"


def count_or_size_table(full, task):
    out = []
    for g in full["count_or_size"]:
        if g["task"] != task:
            continue
        models = {(m["heads"], m["head_dim"]): m for m in selected(full, task, g["arm"])}
        out.append(f"**{g['steps']} steps** ({g['arm']}; {g['family']}; n = {g['seeds']} "
                   "seeds at every corner):\n")
        out.append("| H \\ d | " + " | ".join(f"d = {d}" for d in g["head_dims"]) + " |")
        out.append("|---|" + "---|" * len(g["head_dims"]))
        for h in g["heads"]:
            cells = [grid_cell(models.get((h, d)), task) for d in g["head_dims"]]
            out.append(f"| H = {h} | " + " | ".join(cells) + " |")
        out.append("")
        out.append("| effect | shift [exact 95%]; signs; Holm p | verdict |\n|---|---|---|")
        for effect in ("count", "size", "interaction"):
            out.append(f"| {effect} | {paired(g[effect], task)} | {g['verdicts'][effect]} |")
        out.append("")
    return "\n".join(out) if out else "(no head_grid runs yet)\n"


def circuits_table(full, task):
    rows = []
    for arm in ("fixed_width", "fixed_width_3x", "head_grid", "head_grid_3x"):
        for m in selected(full, task, arm):
            c = m.get("circuit")
            if not c:
                continue
            rows.append(
                f"| {arm} | {label(m)} | {c['runs_counted']}/{m['n']} | "
                f"{interval(c['layer0'], 2)} | {interval(c['path_q'], 2)} | "
                f"{interval(c['path_k'], 2)} | {interval(c['path_v'], 2)} | "
                f"{interval(c['receiver'], 2)} | {interval(c['senders_for_90'], 1)} | "
                f"{interval(c['receivers_for_90'], 1)} |")
    if not rows:
        return "(no run of this task recorded a circuit with a gap of at least 1)\n"
    return ("| arm | model | runs counted | strongest layer-0 head | path via q | via k | via v | "
            "receiver | layer-0 heads for 90% of k | last-layer heads for 90% |\n"
            "|---|---|---|---|---|---|---|---|---|---|\n" + "\n".join(rows) + "\n")


def fixed_width_table(full, task):
    short = selected(full, task, "fixed_width")
    longer = {m["heads"]: m for m in selected(full, task, long_arm(full, "fixed_width") or "")}
    if not short:
        return "(no fixed_width runs)\n"
    factor = ""
    if longer:
        factor = f"{next(iter(longer.values()))['steps'] // short[0]['steps']}x"
    name = "final loss" if by_loss(task) else "final accuracy"
    rows = []
    versus = "test_loss_minus_reference" if by_loss(task) else "test_acc_minus_reference"
    for m in short:
        l = longer.get(m["heads"])
        edge = " (edge)" if m.get("best_lr_at_edge") else ""
        against = paired(m[versus], task) if m.get("reference") else "reference"
        at_long = (f"{solved(l)} | {metric(l, task)} | "
                   f"{median_steps(l['median_steps_to_solve'], l['steps'])} |"
                   if l else "- | - | - |")
        rows.append(
            f"| {m['heads']} ({m['head_dim']}) | {m['best_lr']:g}{edge} | {solved(m)} | "
            f"{metric(m, task)} | {median_steps(m['median_steps_to_solve'], m['steps'])} | "
            f"{against} | {at_long}")
    head = (f"| H (d) | best lr | solved at {short[0]['steps']} [Wilson 95%] | {name} [bootstrap 95%] | "
            "median steps to solve [95%] | − H = 1, paired by seed (HL [exact 95%]; signs; Holm p, "
            f"exploratory) | solved at {factor} | {name} at {factor} | median steps at {factor} |\n"
            "|---|---|---|---|---|---|---|---|---|\n")
    return head + "\n".join(rows) + "\n"


def text_long_table(text):
    rows = []
    for arm in ("fixed_width", long_arm(text, "fixed_width")):
        for m in selected(text, "char_lm", arm or ""):
            lang = m.get("language", {})
            ref = paired(m.get("test_loss_minus_reference"), "char_lm") if m.get("reference") else "reference"
            rows.append(
                f"| {m['heads']} ({m['head_dim']}) | {m['steps']:,} | {m['best_lr']:g} | {m['n']} | "
                f"{metric(m, 'char_lm')} | {interval(lang.get('bits_per_character'), 3)} | "
                f"{interval(lang.get('icl'), 3)} | {interval(lang.get('probe_induction'), 3)} | "
                f"{m['runs_with_induction_head']}/{m['n']} | {ref} |")
    if not rows:
        return "(no text_long runs yet)\n"
    return ("| H (d) | steps | lr | seeds | final loss, nats [bootstrap 95%] | bits per character "
            "[t 95%] | ICL score [t 95%] | probe induction, strongest head [bootstrap 95%] | runs "
            "with an induction head | loss − H = 1, paired (HL [exact]; signs; Holm p) |\n"
            "|---|---|---|---|---|---|---|---|---|---|\n" + "\n".join(rows) + "\n")


def table(name, full, text):
    kind, _, task = name.partition(":")
    if name == "study:full":
        return study_table(full, "full (`--preset full`)")
    if name == "study:text_long":
        return study_table(text, "text_long (`--preset text_long`)")
    if name == "verdicts":
        return verdicts_table(full)
    if name == "text_long":
        return text_long_table(text)
    makers = {"count_or_size": count_or_size_table, "circuits": circuits_table,
              "fixed_width": fixed_width_table}
    if kind not in makers or not task:
        raise SystemExit(f"heads_tables.py: unknown table '{name}' in the document; known: "
                         "study:full, study:text_long, verdicts, text_long, count_or_size:TASK, "
                         "circuits:TASK, fixed_width:TASK")
    return makers[kind](full, task)


def main():
    if len(sys.argv) != 4:
        raise SystemExit("usage: heads_tables.py FULL_SUMMARY TEXT_LONG_SUMMARY DOC")
    full, text = (json.load(open(path)) for path in sys.argv[1:3])
    for summary in (full, text):
        SCORED_BY_LOSS.update(summary["scored_by_loss"])
    doc = sys.argv[3]
    source = open(doc).read()
    filled = MARKER.sub(lambda m: m.group(1) + table(m.group(2), full, text) + m.group(4), source)
    # Written whole or not at all.
    folder = os.path.dirname(os.path.abspath(doc))
    with tempfile.NamedTemporaryFile("w", dir=folder, delete=False, suffix=".tmp") as out:
        out.write(filled)
    os.replace(out.name, doc)
    print(f"heads_tables.py: {len(MARKER.findall(source))} tables filled in {doc}")


if __name__ == "__main__":
    main()
