"""Cross-framework check of heads_compare: retrains chosen cells of the study with PyTorch
and compares both frameworks' solve rates (Fisher's exact test, Wilson intervals).

usage: bash scripts/cross_framework.sh [options]     (installs python3-scipy if missing)
       /usr/bin/python3 scripts/cross_framework.py [options]

A cell is (task, arm, H) at one learning rate: by default each cell's best rate from a
heads_compare summary.json, whose "cells" also give headgrad's solved/n, mean final
accuracy, median steps to solve and parameter count. The PyTorch side trains n seeds of
the same cell from the same recipe and writes results.json and report.md to --out.

Matched (from the C++ sources; the task settings and training constants are read from the
summary's "config"):
  * task: associative_recall [k_1 v_1 .. k_L v_L SEP q v(q)], L distinct keys (ids
    2..A+1), values uniform with replacement (ids A+2..2A+1), q uniform among the keys,
    A = max(10, L), T = 2L + 3, vocab 2A + 2, the only scored position the query's (2L + 1),
    target v(q), no padding (min_length = length); mqar as include/headgrad/train/tasks.hpp
    (K distinct keys and values, gaps without replacement with P(g) ~ (g + 1)^-0.99);
    nearest_neighbour: N points uniform on S^(d-1), target the farthest point, a set
    regression (every split a fresh stream of draws, as headgrad's regression tasks; the
    model's Linear input projection with bias, no positions, no causal mask; loss the
    squared error summed over outputs; correct below 0.1). For a regression task the final
    losses are compared too (Mann-Whitney U, headgrad's per-run losses from the summary).
  * splits: headgrad's keyed hash of an example's tokens (splitmix64 chain keyed by the
    seed and task name) with validation_fraction 0.3 and test_fraction 0.15, so for a
    given seed the train / validation / test partition of the example space is the same
    as headgrad's; batches draw from the generator until an example lies on their side.
  * evaluation: the report split (test), eval_batches x batch_size = 4 x 32 fixed
    examples, every eval_every = 25 steps and at the end; accuracy = argmax over the
    scored positions; solved = final accuracy >= the task's threshold (0.9); median steps
    to solve = the first evaluation at >= threshold, median as the study's Kaplan-Meier
    median with unsolved runs censored at the budget.
  * model: GPT with token and learned position embeddings (both N(0, 1)), L pre-norm
    nn.TransformerEncoderLayer (E = d_model, H heads of E / H, dim_feedforward 4E, exact
    GELU, dropout 0, LayerNorm eps 1e-5, causal mask), final LayerNorm, untied lm_head
    without bias. Every parameter has the PyTorch module default initialisation, which
    is headgrad's scheme (Embedding N(0, 1); Linear weights and biases
    U(-1/sqrt(in), 1/sqrt(in)); attention in_proj xavier-uniform with zero biases,
    out_proj weight as Linear and zero bias; LayerNorm ones and zeros); each layer is
    built separately (headgrad draws every layer afresh; nn.TransformerEncoder would copy
    one). The parameter count is checked against the summary's before training.
  * training: batch_size 32, cross entropy over scored positions (ignore_index -100),
    torch.optim.AdamW (betas 0.9, 0.999, eps 1e-8, weight_decay 0.01 on every parameter),
    global gradient-norm clipping at 1.0 before each step, the lr of
    optim::LRSchedule::cosine(lr, w, steps, lr * 0.1) with w = max(1, int(0.1 * steps)):
    lr * (s + 1) / w at step s < w, then cosine decay towards lr * 0.1 at s = steps; the
    task's steps (1000 for associative_recall); training batch s is fresh draws.
Not matched: the random streams (weights, training batches and the fixed test examples
are PyTorch's / NumPy's draws, not headgrad's Generator): a PyTorch run shares its seed's
split partition with headgrad's run of that seed, not its weights or batches, so the
comparison is between solve-rate distributions; float32 sums run in other orders;
headgrad's after-training inspection (pruning, patching) is not run.
"""
import argparse
import datetime
import json
import math
import multiprocessing
import os
import shlex
import sys
import time
from concurrent.futures import ProcessPoolExecutor

# One thread per process, BLAS included (its worker threads would spin on a second core).
for _variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")

import numpy as np  # noqa: E402  (after the thread settings)
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_SUMMARY = os.path.join(REPO, "runs", "heads_compare-full", "summary.json")
DEFAULT_OUT = os.path.join(REPO, "runs", "cross_framework")
OWNER_MARK = ".cross_framework"  # marks an output folder as this script's

# headgrad's constants: TaskOptions' default validation_fraction and heads_compare's
# kTestFraction (examples/heads_compare/study.cpp); ids from include/headgrad/train/tasks.hpp.
VALIDATION_FRACTION = 0.3
TEST_FRACTION = 0.15
PAD, SEP, FIRST_SYMBOL, IGNORE = 0, 1, 2, -100
TRAIN, VALIDATION, TEST = 0, 1, 2
SUPPORTED_ARMS = ("fixed_width", "fixed_head_dim", "one_layer")  # E = H * d: nn.MultiheadAttention
Z95 = 1.959963984540054

# --- headgrad's hashes (src/train/tasks_detail.hpp) -----------------------------------

M64 = (1 << 64) - 1


def splitmix64(x):
    x = (x + 0x9E3779B97F4A7C15) & M64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & M64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & M64
    return x ^ (x >> 31)


def splitmix64_array(x):
    """splitmix64 on a uint64 array (numpy's uint64 arithmetic wraps modulo 2^64)."""
    x = x + np.uint64(0x9E3779B97F4A7C15)
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def hash_combine(h, value):
    return splitmix64(h ^ splitmix64(value))


def hash_name(name):
    """FNV-1a of a name."""
    h = 0xCBF29CE484222325
    for c in name.encode():
        h = ((h ^ c) * 0x100000001B3) & M64
    return h


class HashSplit:
    """headgrad's HashSplit: u = the keyed hash of an example's tokens in [0, 1);
    validation iff u < validation_fraction, test iff below validation + test fraction."""

    def __init__(self, seed, task_name, validation_fraction, test_fraction):
        self.key = hash_combine(hash_combine(seed, hash_name(task_name)), hash_name("split"))
        self.validation = validation_fraction
        self.test_end = validation_fraction + test_fraction

    def sides(self, tokens):
        """TRAIN, VALIDATION or TEST for each row of an int64 (N, T) array."""
        h = np.full(tokens.shape[0], self.key, dtype=np.uint64)
        for column in tokens.T.astype(np.uint64):
            h = splitmix64_array(h ^ column)
        u = (h >> np.uint64(11)).astype(np.float64) * 2.0 ** -53
        return np.where(u < self.validation, VALIDATION, np.where(u < self.test_end, TEST, TRAIN))

    def share(self, side):
        return {TRAIN: 1 - self.test_end, VALIDATION: self.validation,
                TEST: self.test_end - self.validation}[side]


# --- tasks (src/train/tasks_sequence.cpp, tasks_recall.cpp) ---------------------------


class AssociativeRecall:
    """[k_1 v_1 .. k_L v_L SEP q v(q)]; the query's position (2L + 1) predicts v(q)."""
    name = "associative_recall"

    def __init__(self, setting):
        self.length = setting["length"]
        self.alphabet = max(10, self.length)
        self.vocab_size = FIRST_SYMBOL + 2 * self.alphabet
        self.max_len = 2 * self.length + 3

    def draw(self, rng, n):
        L, A = self.length, self.alphabet
        keys = np.argsort(rng.random((n, A)), axis=1)[:, :L] + FIRST_SYMBOL  # distinct
        values = rng.integers(0, A, (n, L)) + FIRST_SYMBOL + A
        query = rng.integers(0, L, n)
        rows = np.arange(n)
        tokens = np.full((n, self.max_len), PAD, dtype=np.int64)
        tokens[:, 0:2 * L:2] = keys
        tokens[:, 1:2 * L:2] = values
        tokens[:, 2 * L] = SEP
        tokens[:, 2 * L + 1] = keys[rows, query]
        tokens[:, 2 * L + 2] = values[rows, query]
        targets = np.full_like(tokens, IGNORE)
        targets[:, 2 * L + 1] = values[rows, query]
        return tokens, targets


class Mqar:
    """[k_1 v_1 .. k_K v_K | query region]: key k_i again at 2K + 2 g_i, predicting v_i."""
    name = "mqar"
    gap_power = 0.01

    def __init__(self, setting):
        self.pairs = setting["length"]
        self.max_len = setting["context"] or 4 * self.pairs
        self.alphabet = max(4 * self.pairs, 16)
        self.vocab_size = FIRST_SYMBOL + 2 * self.alphabet
        gaps = (self.max_len - 2 * self.pairs) // 2
        self.gap_weights = np.arange(1, gaps + 1, dtype=np.float64) ** (self.gap_power - 1)

    def draw(self, rng, n):
        K, A = self.pairs, self.alphabet
        keys = np.argsort(rng.random((n, A)), axis=1)[:, :K] + FIRST_SYMBOL
        values = np.argsort(rng.random((n, A)), axis=1)[:, :K] + FIRST_SYMBOL + A
        # Successive draws without replacement, P ~ weight: the order of an exponential race.
        race = rng.exponential(size=(n, len(self.gap_weights))) / self.gap_weights
        gaps = np.argsort(race, axis=1)[:, :K]
        rows = np.arange(n)[:, None]
        tokens = np.full((n, self.max_len), PAD, dtype=np.int64)
        tokens[:, 0:2 * K:2] = keys
        tokens[:, 1:2 * K:2] = values
        tokens[rows, 2 * K + 2 * gaps] = keys
        targets = np.full_like(tokens, IGNORE)
        targets[rows, 2 * K + 2 * gaps] = values
        return tokens, targets


class NearestNeighbour:
    """N points uniform on S^(d-1) (normalised Gaussians); the target of point i is its
    farthest point x_j, j = argmin_j <x_i, x_j> (ties to the lowest j). A set regression:
    float inputs (N, d), every position scored; loss = squared error summed over the d
    outputs, averaged over positions; a position is correct when that error is below
    REGRESSION_TOLERANCE. Each split is a fresh stream of draws (no hash split)."""
    name = "nearest_neighbour"
    regression = True

    def __init__(self, setting):
        self.points = setting["length"]
        self.dim = setting["dim"] or 16
        self.vocab_size = self.dim  # lm_head's width: the output dimension
        self.input_dim = self.dim
        self.max_len = self.points

    def draw(self, rng, n):
        x = rng.standard_normal((n, self.points, self.dim))
        x /= np.linalg.norm(x, axis=2, keepdims=True)
        farthest = np.argmin(np.einsum("bid,bjd->bij", x, x), axis=2)  # first minimum
        targets = np.take_along_axis(x, farthest[:, :, None], axis=1)
        return x.astype(np.float32), targets.astype(np.float32)


TASKS = {"associative_recall": AssociativeRecall, "mqar": Mqar,
         "nearest_neighbour": NearestNeighbour}
REGRESSION_TOLERANCE = 0.1  # train::kRegressionTolerance


def sample(task, split, side, rng, n):
    """n examples of the task's distribution that lie on `side` of the hash split (a
    regression task: n fresh draws)."""
    if getattr(task, "regression", False):
        return task.draw(rng, n)
    tokens, targets, have = [], [], 0
    while have < n:
        draw_tokens, draw_targets = task.draw(rng, int((n - have) / split.share(side) * 1.3) + 16)
        keep = split.sides(draw_tokens) == side
        tokens.append(draw_tokens[keep])
        targets.append(draw_targets[keep])
        have += int(keep.sum())
    return np.concatenate(tokens)[:n], np.concatenate(targets)[:n]


# --- the model (include/headgrad/nn/gpt.hpp) --------------------------------------------


class GPT(nn.Module):
    """headgrad's nn::GPT with its study options, from torch.nn modules."""

    def __init__(self, vocab_size, max_len, d_model, heads, layers, input_dim=0):
        super().__init__()
        # Continuous inputs (the regression tasks): a Linear input projection with bias, no
        # positions and no causal mask (a set model), as heads_compare builds them.
        self.regression = input_dim > 0
        if self.regression:
            self.input_projection = nn.Linear(input_dim, d_model)
        else:
            self.token_embedding = nn.Embedding(vocab_size, d_model)
            self.position_embedding = nn.Embedding(max_len, d_model)
        self.layers = nn.ModuleList(
            nn.TransformerEncoderLayer(d_model, heads, dim_feedforward=4 * d_model, dropout=0.0,
                                       activation="gelu", layer_norm_eps=1e-5, batch_first=True,
                                       norm_first=True)
            for _ in range(layers))
        self.norm = nn.LayerNorm(d_model, eps=1e-5)
        self.lm_head = nn.Linear(d_model, vocab_size, bias=False)
        blocked = torch.triu(torch.ones(max_len, max_len, dtype=torch.bool), diagonal=1)
        self.register_buffer("causal_mask", blocked, persistent=False)

    def forward(self, tokens):
        t = tokens.shape[1]
        if self.regression:
            x = self.input_projection(tokens)
            for layer in self.layers:
                x = layer(x)
        else:
            x = self.token_embedding(tokens) + self.position_embedding(torch.arange(t))
            for layer in self.layers:
                x = layer(x, src_mask=self.causal_mask[:t, :t])
        return self.lm_head(self.norm(x))


def build_model(task, cell):
    if cell["heads"] * cell["head_dim"] != cell["d_model"]:
        raise SystemExit(f"cross_framework: {cell_name(cell)} has H * d != E; only models with "
                         f"head_dim = d_model / heads are nn.MultiheadAttention")
    return GPT(task.vocab_size, task.max_len, cell["d_model"], cell["heads"], cell["layers"],
               getattr(task, "input_dim", 0))


def count_parameters(model):
    return sum(p.numel() for p in model.parameters())


# --- one training run -----------------------------------------------------------------


def lr_at(step, lr, warmup, total):
    """optim::LRSchedule::cosine(lr, warmup, total, lr * 0.1).lr_at(step), step from 0."""
    min_lr = lr * 0.1
    if step < warmup:
        return lr * (step + 1) / warmup
    if step >= total:
        return min_lr
    progress = (step - warmup) / (total - warmup)
    return min_lr + (lr - min_lr) * (1 + math.cos(math.pi * progress)) / 2


def loss_of(logits, targets):
    """The task's loss: cross entropy over scored positions, or (regression) the squared
    error summed over the outputs and averaged over positions."""
    if targets.is_floating_point():
        return ((logits - targets) ** 2).sum(-1).mean()
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1),
                           ignore_index=IGNORE)


def evaluate(model, tokens, targets):
    """(loss, accuracy) over the scored positions."""
    model.eval()
    if targets.is_floating_point():
        with torch.no_grad():
            error = ((model(tokens) - targets) ** 2).sum(-1)
            result = (error.mean().item(), (error < REGRESSION_TOLERANCE).float().mean().item())
        model.train()
        return result
    with torch.no_grad():
        logits = model(tokens).reshape(-1, model.lm_head.out_features)
        flat = targets.reshape(-1)
        loss = F.cross_entropy(logits, flat, ignore_index=IGNORE).item()
        scored = flat != IGNORE
        accuracy = (logits.argmax(-1)[scored] == flat[scored]).float().mean().item()
    model.train()
    return loss, accuracy


def run_data(task, seed, steps, batch, eval_examples):
    """Training batches (steps, batch, T) and the fixed report-split examples, as tensors."""
    split = HashSplit(seed, task.name, VALIDATION_FRACTION, TEST_FRACTION)
    rng = np.random.default_rng([seed, 0xC0FFEE])
    train = [torch.from_numpy(a).reshape(steps, batch, *a.shape[1:])
             for a in sample(task, split, TRAIN, rng, steps * batch)]
    test = [torch.from_numpy(a) for a in sample(task, split, TEST, rng, eval_examples)]
    return train, test


def train_step(model, optimizer, tokens, targets, lr, clip):
    for group in optimizer.param_groups:
        group["lr"] = lr
    loss = loss_of(model(tokens), targets)
    optimizer.zero_grad()
    loss.backward()
    if clip > 0:
        nn.utils.clip_grad_norm_(model.parameters(), clip)
    optimizer.step()


def train_run(job):
    """Trains one seed of one cell; returns its final metrics and test-accuracy curve."""
    torch.set_num_threads(1)
    start = time.monotonic()
    cell, setting, recipe, seed = job["cell"], job["setting"], job["recipe"], job["seed"]
    steps, threshold = job["steps"], setting["threshold"]
    task = TASKS[cell["task"]](setting)
    (train_tokens, train_targets), test = run_data(
        task, seed, steps, recipe["batch_size"], recipe["eval_batches"] * recipe["batch_size"])
    torch.manual_seed(seed)
    model = build_model(task, cell)
    optimizer = torch.optim.AdamW(model.parameters(), lr=cell["lr"], betas=(0.9, 0.999),
                                  eps=1e-8, weight_decay=recipe["weight_decay"])
    warmup = min(max(1, int(recipe["warmup_fraction"] * steps)), steps)
    initial_loss, initial_accuracy = evaluate(model, *test)
    curve, solved_step = [], None
    for step in range(steps):
        train_step(model, optimizer, train_tokens[step], train_targets[step],
                   lr_at(step, cell["lr"], warmup, steps), recipe["clip"])
        done = step + 1
        if done % recipe["eval_every"] == 0 or done == steps:
            curve.append([done, *evaluate(model, *test)])
            if solved_step is None and curve[-1][2] >= threshold:
                solved_step = done
    return {"seed": seed, "final_test_loss": curve[-1][1], "final_test_acc": curve[-1][2],
            "solved": curve[-1][2] >= threshold, "solved_step": solved_step,
            "initial_test_loss": initial_loss, "initial_test_acc": initial_accuracy,
            "seconds": time.monotonic() - start, "curve": curve}


# --- statistics -----------------------------------------------------------------------


def wilson(successes, n, z=Z95):
    """The Wilson score interval (low, high), as heads_compare::statistics::wilson_interval."""
    if n == 0:
        return (0.0, 1.0)
    p = successes / n
    centre = p + z * z / (2 * n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    scale = 1 + z * z / n
    low = 0.0 if successes == 0 else (centre - half) / scale
    high = 1.0 if successes == n else (centre + half) / scale
    return (low, high)


def median_steps(solved_steps):
    """The Kaplan-Meier median of the steps to solve with unsolved runs censored at the
    budget, by the study's rule (R's survival package: the first time survival <= 0.5, the
    midpoint to the next event time where it rests at exactly 0.5); None when not reached.
    Censoring happens only at the budget, after every event, so S(t) = 1 - events <= t / n."""
    n = len(solved_steps)
    times = sorted(set(s for s in solved_steps if s is not None))
    for i, t in enumerate(times):
        survival = 1 - sum(1 for s in solved_steps if s is not None and s <= t) / n
        if abs(survival - 0.5) < 1e-9:
            return (t + times[i + 1]) / 2 if i + 1 < len(times) else t
        if survival < 0.5:
            return t
    return None


def mann_whitney_p(a, b):
    """Two-sided exact (small samples) Mann-Whitney U test of two samples' locations."""
    from scipy.stats import mannwhitneyu
    return float(mannwhitneyu(a, b, alternative="two-sided").pvalue)


def fisher_p(a_solved, a_n, b_solved, b_n):
    from scipy.stats import fisher_exact
    _, p = fisher_exact([[a_solved, a_n - a_solved], [b_solved, b_n - b_solved]],
                        alternative="two-sided")
    return float(p)


# --- headgrad's side: the study's summary.json ------------------------------------------


def cell_name(cell):
    return (f"{cell['task']} {cell['arm']} H={cell['heads']} "
            f"(d={cell['head_dim']}, E={cell['d_model']}, L={cell['layers']})")


def same_lr(a, b):
    return math.isclose(a, b, rel_tol=1e-9)


def read_summary(path):
    if not os.path.isfile(path):
        raise SystemExit(f"cross_framework: no summary at {path}: run the study first "
                         f"(heads_compare --preset full --out runs/heads_compare-full) or pass "
                         f"--summary PATH to a heads_compare summary.json")
    with open(path) as f:
        summary = json.load(f)
    for key in ("config", "selected", "cells"):
        if key not in summary:
            raise SystemExit(f"cross_framework: {path} has no '{key}': not a heads_compare "
                             f"summary.json")
    return summary


def task_setting(summary, task, path):
    for setting in summary["config"]["tasks"]:
        if setting["name"] == task:
            return setting
    known = ", ".join(s["name"] for s in summary["config"]["tasks"])
    raise SystemExit(f"cross_framework: {path} has no task '{task}' (its tasks: {known}); "
                     f"pass --tasks among them")


def selected_cell(summary, task, arm, heads, path):
    matches = [s for s in summary["selected"]
               if s["task"] == task and s["arm"] == arm and s["heads"] == heads]
    if not matches:
        have = sorted(s["heads"] for s in summary["selected"]
                      if s["task"] == task and s["arm"] == arm)
        hint = (f"pass --heads among {','.join(map(str, have))}" if have else
                "pass another --arm or --tasks, or a --summary from a study that ran it")
        raise SystemExit(f"cross_framework: {path} has no selected cell for task={task}, "
                         f"arm={arm}, heads={heads}; {hint}")
    return matches[0]


def lr_cell(summary, selected, lr, path):
    keys = ("task", "arm", "heads", "head_dim", "d_model", "layers")
    same = [c for c in summary["cells"] if all(c[k] == selected[k] for k in keys)]
    for c in same:
        if same_lr(c["lr"], lr):
            return c
    rates = ", ".join(f"{c['lr']:g}" for c in same)
    raise SystemExit(f"cross_framework: {path} has no cell for {cell_name(selected)} at "
                     f"lr {lr:g} (its rates: {rates}); pass --lr {selected['heads']}=RATE with "
                     f"one of them")


def headgrad_cells(summary, args):
    """The cells to run with headgrad's results, in --tasks and --heads order."""
    cells = []
    for task in args.tasks:
        setting = task_setting(summary, task, args.summary)
        heads = args.heads or sorted(s["heads"] for s in summary["selected"]
                                     if s["task"] == task and s["arm"] == args.arm)
        if not heads:
            raise SystemExit(f"cross_framework: {args.summary} has no selected {args.arm} cells "
                             f"for {task}; pass another --arm or --tasks")
        for h in heads:
            selected = selected_cell(summary, task, args.arm, h, args.summary)
            lr = args.lr.get(h, selected["best_lr"])
            c = lr_cell(summary, selected, lr, args.summary)
            losses = [r["final_test_loss"] for r in summary.get("runs", [])
                      if r["task"] == task and r["arm"] == args.arm and r["heads"] == h
                      and r["head_dim"] == c["head_dim"] and r["d_model"] == c["d_model"]
                      and r["layers"] == c["layers"] and same_lr(r["lr"], c["lr"])
                      and r.get("steps", setting["steps"]) == setting["steps"]]
            cells.append({
                "task": task, "arm": args.arm, "heads": h, "head_dim": c["head_dim"],
                "d_model": c["d_model"], "layers": c["layers"], "lr": c["lr"],
                "best_lr": selected["best_lr"],
                "setting": dict(setting, steps=c.get("steps", setting["steps"])),
                "headgrad": {"solved": c["solved"], "n": c["n"], "params": c["params"],
                             "final_losses": losses,
                             "mean_final_acc": c["final_test_acc"]["estimate"],
                             "median_steps_to_solve": c["median_steps_to_solve"]["estimate"]}})
    return cells


# --- command line, output folder, report ------------------------------------------------


def parse_ints(text, what):
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{what} must be comma-separated integers, got '{text}'")
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"{what} must be positive integers, got '{text}'")
    return values


def parse_lrs(text):
    rates = {}
    for item in filter(None, (t.strip() for t in text.split(","))):
        heads, _, rate = item.partition("=")
        try:
            rates[int(heads)] = float(rate)
        except ValueError:
            raise argparse.ArgumentTypeError(f"--lr takes H=RATE pairs such as 1=0.001,8=0.003; "
                                             f"got '{item}'")
        if not rates[int(heads)] > 0:
            raise argparse.ArgumentTypeError(f"--lr: rate for H={heads} must be positive")
    return rates


def positive_int(text):
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got '{text}'")
    return value


def parse_args(argv):
    p = argparse.ArgumentParser(
        description="Retrain cells of the heads_compare study with PyTorch and compare the "
                    "solve rates with headgrad's (Fisher's exact test per cell).")
    p.add_argument("--summary", default=DEFAULT_SUMMARY,
                   help="heads_compare summary.json giving headgrad's results, task settings "
                        "and training constants (default: runs/heads_compare-full/summary.json)")
    p.add_argument("--tasks", default=["associative_recall"],
                   type=lambda t: [s.strip() for s in t.split(",") if s.strip()],
                   help="comma-separated tasks: associative_recall, mqar, nearest_neighbour "
                        "(default: associative_recall)")
    p.add_argument("--arm", default="fixed_width", choices=SUPPORTED_ARMS,
                   help="the study's arm (default: fixed_width; head_size is not supported: "
                        "nn.MultiheadAttention needs d_model = heads * head_dim)")
    p.add_argument("--heads", type=lambda t: parse_ints(t, "--heads"),
                   help="comma-separated head counts (default: every selected cell of the arm)")
    p.add_argument("--lr", type=parse_lrs, default={},
                   help="learning rates by head count, e.g. 1=0.001,8=0.003 (default: each "
                        "cell's best rate in the summary; the rate must be one the study ran)")
    p.add_argument("--seeds", type=positive_int, default=10,
                   help="PyTorch runs per cell, seeds 0..N-1 (default: 10)")
    p.add_argument("--steps", type=positive_int,
                   help="training steps (default: the task's steps in the summary; fewer steps "
                        "make the comparison with headgrad's numbers not like for like)")
    p.add_argument("--jobs", type=positive_int, default=1,
                   help="worker processes, one thread each (default: 1)")
    p.add_argument("--out", default=DEFAULT_OUT,
                   help="output folder for results.json and report.md "
                        "(default: runs/cross_framework)")
    args = p.parse_args(argv)
    unknown = [t for t in args.tasks if t not in TASKS]
    if unknown or not args.tasks:
        p.error(f"--tasks: unsupported {', '.join(unknown) or '(none)'}; known: "
                f"{', '.join(TASKS)}")
    return args


def claim_out_dir(path):
    """Creates `path` or reuses it when this script made it; refuses any other folder."""
    if os.path.exists(path) and not os.path.isdir(path):
        raise SystemExit(f"cross_framework: --out {path} is a file, not a folder")
    if os.path.isdir(path) and os.listdir(path) and not os.path.exists(
            os.path.join(path, OWNER_MARK)):
        raise SystemExit(f"cross_framework: --out {path} holds files this script did not write; "
                         f"choose a new or empty folder")
    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, OWNER_MARK), "w") as f:
        f.write("written by scripts/cross_framework.py\n")


def write_file(path, text):
    temporary = path + ".tmp"
    with open(temporary, "w") as f:
        f.write(text)
    os.replace(temporary, path)


def recipe_of(summary):
    config = summary["config"]
    keys = ("batch_size", "warmup_fraction", "weight_decay", "clip", "eval_every", "eval_batches")
    missing = [k for k in keys if k not in config]
    if missing:
        raise SystemExit(f"cross_framework: the summary's config lacks {', '.join(missing)}")
    return {k: config[k] for k in keys}


def check_parameters(cells):
    """The PyTorch model of each cell must have headgrad's parameter count."""
    for cell in cells:
        model = build_model(TASKS[cell["task"]](cell["setting"]), cell)
        cell["pytorch_params"] = count_parameters(model)
        if cell["pytorch_params"] != cell["headgrad"]["params"]:
            raise SystemExit(f"cross_framework: {cell_name(cell)}: the PyTorch model has "
                             f"{cell['pytorch_params']} parameters, headgrad's "
                             f"{cell['headgrad']['params']}: the architectures differ")


def run_all(cells, args, recipe):
    jobs = [{"cell": {k: c[k] for k in ("task", "arm", "heads", "head_dim", "d_model", "layers",
                                         "lr")},
             "setting": c["setting"], "recipe": recipe, "seed": seed,
             "steps": args.steps or c["setting"]["steps"], "index": i}
            for i, c in enumerate(cells) for seed in range(args.seeds)]
    for c in cells:
        c["pytorch_runs"] = []

    def record(job, run, done):
        cells[job["index"]]["pytorch_runs"].append(run)
        solved = f"solved at step {run['solved_step']}" if run["solved_step"] else "not solved"
        print(f"[{done}/{len(jobs)}] {cell_name(cells[job['index']])} lr {job['cell']['lr']:g} "
              f"seed {job['seed']}: final acc {run['final_test_acc']:.3f}, {solved}, "
              f"{run['seconds']:.1f} s", flush=True)

    if args.jobs == 1:
        for done, job in enumerate(jobs, 1):
            record(job, train_run(job), done)
        return
    with ProcessPoolExecutor(args.jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
        for done, (job, run) in enumerate(zip(jobs, pool.map(train_run, jobs)), 1):
            record(job, run, done)


def summarize(cell):
    runs = sorted(cell["pytorch_runs"], key=lambda r: r["seed"])
    n, solved = len(runs), sum(r["solved"] for r in runs)
    hg = cell["headgrad"]
    cell["pytorch"] = {
        "solved": solved, "n": n, "params": cell["pytorch_params"],
        "mean_final_acc": sum(r["final_test_acc"] for r in runs) / n,
        "median_steps_to_solve": median_steps([r["solved_step"] for r in runs]),
        "mean_initial_test_loss": sum(r["initial_test_loss"] for r in runs) / n,
        "mean_seconds": sum(r["seconds"] for r in runs) / n, "runs": runs}
    hg["wilson"] = wilson(hg["solved"], hg["n"])
    cell["pytorch"]["wilson"] = wilson(solved, n)
    cell["fisher_p"] = fisher_p(hg["solved"], hg["n"], solved, n)
    cell["verdict"] = ("differs at p<0.05" if cell["fisher_p"] < 0.05
                       else "agrees (no difference at p<0.05)")
    cell["pytorch"]["final_losses"] = [r["final_test_loss"] for r in runs]
    if TASKS[cell["task"]].__dict__.get("regression") and hg["final_losses"]:
        # A regression task's primary metric is its loss: compare the final losses too.
        cell["loss_p"] = mann_whitney_p(hg["final_losses"], cell["pytorch"]["final_losses"])
        cell["verdict"] += ("; final loss differs at p<0.05" if cell["loss_p"] < 0.05
                            else "; final loss agrees (Mann-Whitney)")


def rate_text(side):
    low, high = side["wilson"]
    return f"{side['solved']}/{side['n']} [{low:.2f}, {high:.2f}]"


def steps_text(value):
    return "not reached" if value is None else f"{value:g}"


def report(cells, args, summary, recipe, started, wall, steps_note):
    lines = [
        "# Cross-framework check of heads_compare: headgrad and PyTorch", "",
        f"Command: `{' '.join(shlex.quote(a) for a in [sys.executable] + sys.argv)}`", "",
        f"Started {started}; wall time {wall:.0f} s ({args.jobs} job(s), one thread each); "
        f"PyTorch {torch.__version__}.", "",
        f"headgrad's side: `{args.summary}` (study command: `{summary.get('command', '?')}`). "
        f"PyTorch's side: {args.seeds} run(s) per cell (seeds 0..{args.seeds - 1}), trained "
        f"from the same task distribution and split rule, architecture, initialisation scheme "
        f"and schedule (scripts/cross_framework.py's docstring lists what is matched); its "
        f"random streams are its own.", ""]
    if steps_note:
        lines += [steps_note, ""]
    lines += ["| cell | lr | headgrad solved/n [Wilson 95%] | PyTorch solved/n [Wilson 95%] "
              "| Fisher p |", "|---|---|---|---|---|"]
    for c in cells:
        lines.append(f"| {cell_name(c)} | {c['lr']:g} | {rate_text(c['headgrad'])} | "
                     f"{rate_text(c['pytorch'])} | {c['fisher_p']:.3g} |")
    lines += ["", "| cell | parameters (both) | mean final accuracy: headgrad / PyTorch | "
              "median steps to threshold: headgrad / PyTorch | PyTorch initial loss | "
              "PyTorch s/run |", "|---|---|---|---|---|---|"]
    for c in cells:
        hg, pt = c["headgrad"], c["pytorch"]
        lines.append(f"| {cell_name(c)} | {pt['params']} | {hg['mean_final_acc']:.3f} / "
                     f"{pt['mean_final_acc']:.3f} | {steps_text(hg['median_steps_to_solve'])} / "
                     f"{steps_text(pt['median_steps_to_solve'])} | "
                     f"{pt['mean_initial_test_loss']:.3f} | {pt['mean_seconds']:.1f} |")
    regression = [c for c in cells if "loss_p" in c]
    if regression:
        lines += ["", "| cell (regression: the loss is the primary metric) | mean final loss: "
                  "headgrad / PyTorch | runs | Mann-Whitney p |", "|---|---|---|---|"]
        for c in regression:
            hg, pt = c["headgrad"]["final_losses"], c["pytorch"]["final_losses"]
            lines.append(f"| {cell_name(c)} | {sum(hg) / len(hg):.4f} / {sum(pt) / len(pt):.4f} | "
                         f"{len(hg)} / {len(pt)} | {c['loss_p']:.3g} |")
    lines.append("")
    for c in cells:
        lines.append(f"- {cell_name(c)} at lr {c['lr']:g}: {c['verdict']} "
                     f"(headgrad {c['headgrad']['solved']}/{c['headgrad']['n']}, PyTorch "
                     f"{c['pytorch']['solved']}/{c['pytorch']['n']}, Fisher p = "
                     f"{c['fisher_p']:.3g}).")
    lines += ["", f"Solved = final report-split (test) accuracy >= the task's threshold over "
              f"{recipe['eval_batches']} x {recipe['batch_size']} held-out examples. With about "
              f"10 runs per side Fisher's test detects only large differences in solve rate "
              f"(e.g. 9/10 against 3/10).", ""]
    return "\n".join(lines)


def main(argv=None):
    args = parse_args(argv)
    torch.set_num_threads(1)
    summary = read_summary(args.summary)
    recipe = recipe_of(summary)
    cells = headgrad_cells(summary, args)
    check_parameters(cells)
    claim_out_dir(args.out)
    started = datetime.datetime.now().isoformat(timespec="seconds")
    start = time.monotonic()
    for c in cells:
        print(f"{cell_name(c)}: lr {c['lr']:g}, {c['pytorch_params']} parameters "
              f"(headgrad: {c['headgrad']['params']})", flush=True)
    run_all(cells, args, recipe)
    for c in cells:
        summarize(c)
    wall = time.monotonic() - start
    steps_note = ""
    if args.steps:
        budgets = sorted({c["setting"]["steps"] for c in cells})
        if budgets != [args.steps]:
            steps_note = (f"Note: PyTorch trained {args.steps} steps, headgrad's cells "
                          f"{', '.join(map(str, budgets))}: not a like-for-like comparison.")
    results = {"command": sys.argv, "started": started, "wall_seconds": wall,
               "torch_version": torch.__version__, "summary": os.path.abspath(args.summary),
               "seeds": args.seeds, "steps": args.steps, "recipe": recipe,
               "validation_fraction": VALIDATION_FRACTION, "test_fraction": TEST_FRACTION,
               "cells": cells}
    write_file(os.path.join(args.out, "results.json"), json.dumps(results, indent=1) + "\n")
    text = report(cells, args, summary, recipe, started, wall, steps_note)
    write_file(os.path.join(args.out, "report.md"), text)
    print(text)
    print(f"wrote {os.path.join(args.out, 'report.md')} and results.json")


if __name__ == "__main__":
    main()
