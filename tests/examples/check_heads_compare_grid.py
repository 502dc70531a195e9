"""heads_compare's count-or-size tests recomputed from its own runs, by another route.

Reads summary.json of a finished study (the smoke preset's run folder): for every head_grid
grid, the per-seed differences are formed again from the runs at each cell's best rate
(count: mean over d of m(H_max, d) - m(H_min, d); size: mean over H of m(H, d_max) -
m(H, d_min); interaction: the count at d_max minus the count at d_min), and checked
against the report's numbers: the signs, the exact two-sided sign test (binomial sums
here), the Hodges-Lehmann estimate (the median of every Walsh average, by brute force) and
Holm's adjustment within each family.
Argument: the run folder.
"""
import json
import math
import statistics
import sys

summary = json.load(open(sys.argv[1] + "/summary.json"))
grids = summary["count_or_size"]
assert grids, "summary.json has no count_or_size grids"


def metric(task, arm, heads, head_dim, lr, metric_name):
    return {r["seed"]: r[metric_name] for r in summary["runs"]
            if r["task"] == task and r["arm"] == arm and r["heads"] == heads
            and r["head_dim"] == head_dim and r["lr"] == lr}


def sign_p(pos, neg):
    m, k = pos + neg, min(pos, neg)
    if m == 0:
        return 1.0
    return min(1.0, 2 * sum(math.comb(m, i) for i in range(k + 1)) / 2 ** m)


def hodges_lehmann(d):
    walsh = [(d[i] + d[j]) / 2 for i in range(len(d)) for j in range(i, len(d))]
    return statistics.median(walsh)


def holm(ps):
    order = sorted(range(len(ps)), key=lambda i: ps[i])
    out, running = [0.0] * len(ps), 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (len(ps) - rank) * ps[i]))
        out[i] = running
    return out


families = {"confirmatory": [], "exploratory_grids": []}
for g in grids:
    cells = {(c["heads"], c["head_dim"]): c["best_lr"] for c in g["cells"]}
    hs, ds = g["heads"], g["head_dims"]
    m = {(h, d): metric(g["task"], g["arm"], h, d, cells[(h, d)], g["metric"])
         for h in hs for d in ds}
    seeds = sorted(set.intersection(*[set(v) for v in m.values()]))
    assert len(seeds) == g["seeds"], (g["task"], seeds, g["seeds"])
    hi, lo, dhi, dlo = hs[-1], hs[0], ds[-1], ds[0]
    diffs = {
        "count": [statistics.fmean(m[(hi, d)][s] for d in ds) -
                  statistics.fmean(m[(lo, d)][s] for d in ds) for s in seeds],
        "size": [statistics.fmean(m[(h, dhi)][s] for h in hs) -
                 statistics.fmean(m[(h, dlo)][s] for h in hs) for s in seeds],
        "interaction": [(m[(hi, dhi)][s] - m[(lo, dhi)][s]) - (m[(hi, dlo)][s] - m[(lo, dlo)][s])
                        for s in seeds],
    }
    for name, d in diffs.items():
        got = g[name]
        pos, neg = sum(x > 1e-12 for x in d), sum(x < -1e-12 for x in d)
        assert (got["positive"], got["negative"]) == (pos, neg), (g["task"], name, got, d)
        assert math.isclose(got["sign_test_p"], sign_p(pos, neg), rel_tol=1e-12), name
        assert math.isclose(got["hodges_lehmann"]["estimate"], hodges_lehmann(d),
                            rel_tol=1e-9, abs_tol=1e-12), (name, got, d)
        family = "confirmatory" if g["family"] == "confirmatory" else "exploratory_grids"
        families[family].append((got["sign_test_p"], got["holm_p"]))
ps = [p for p, _ in families["confirmatory"]]
for (p, got), want in zip(families["confirmatory"], holm(ps)):
    assert math.isclose(got, want, rel_tol=1e-12), (p, got, want)
print("count or size: %d grids, %d confirmatory tests recomputed" % (len(grids), len(ps)))
