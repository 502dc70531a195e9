#!/usr/bin/env python3
"""CTest reference.patching_live_pytorch_oracle: headgrad's interventions against PyTorch.

train_toy trains a small GPT on associative_recall for a few steps; the patching program
analyses its checkpoint in float64 and writes the prompts and every grid. This script
loads the same weights into a GPT written out with torch ops (nn.MultiheadAttention exposes
no per-head tensor), applies the same patches with the same prompts, and requires every
grid to agree within 1e-5: z patching per head and per (head, position), resid_pre patching
per position, attribution patching per head, zero / mean ablation per head, path patching
into the receiver through q, k and v, and direct logit attribution. Without torch it prints
SKIPPED and exits 77.

    patching_oracle.py --train-toy BIN --patching BIN --work-dir DIR [--seed S]
"""
import argparse
import json
import os
import subprocess
import sys

TOLERANCE = 1e-5


def run(cmd):
    print("+", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True)


class TorchGPT:
    """The pre-norm GPT of nn/gpt.hpp in float64 torch ops, with per-head hook functions."""

    def __init__(self, torch, state, heads):
        self.t = torch
        self.w = {k: torch.tensor(v, dtype=torch.float64) for k, v in state.items()
                  if not k.startswith(("optimizer/", "trainer/"))}
        self.heads = heads
        self.layers = 1 + max(int(k.split(".")[1]) for k in self.w if k.startswith("layers."))

    def layer_norm(self, x, name):
        F = self.t.nn.functional
        return F.layer_norm(x, x.shape[-1:], self.w[name + ".weight"], self.w[name + ".bias"], 1e-5)

    def attention(self, l, x, hooks):
        """x (N, T, E) -> output, each head's z and result; hooks[(l, name)] edit q/k/v/z/result."""
        t, w, p = self.t, self.w, f"layers.{l}.self_attn."
        n, length, e = x.shape
        h = self.heads
        d = e // h
        qkv = x @ w[p + "in_proj_weight"].T + w[p + "in_proj_bias"]
        q, k, v = (qkv[..., i * e:(i + 1) * e].reshape(n, length, h, d).permute(0, 2, 1, 3)
                   for i in range(3))
        q = hooks.get((l, "q"), lambda a: a)(q)
        k = hooks.get((l, "k"), lambda a: a)(k)
        v = hooks.get((l, "v"), lambda a: a)(v)
        scores = (q / d ** 0.5) @ k.transpose(-2, -1)
        causal = t.triu(t.ones(length, length, dtype=t.bool), 1)
        scores = scores.masked_fill(causal, float("-inf"))
        z = t.softmax(scores, -1) @ v
        z = hooks.get((l, "z"), lambda a: a)(z)
        w_o = w[p + "out_proj.weight"]  # (E, E): head h's columns [h*d, (h+1)*d)
        result = t.stack([z[:, i] @ w_o[:, i * d:(i + 1) * d].T for i in range(h)], 1)
        result = hooks.get((l, "result"), lambda a: a)(result)
        return result.sum(1) + w[p + "out_proj.bias"], z, result

    def forward(self, tokens, hooks=None, cache=None):
        hooks = hooks or {}
        t, w, F = self.t, self.w, self.t.nn.functional
        n, length = tokens.shape
        x = w["token_embedding.weight"][tokens] + w["position_embedding.weight"][:length]
        if cache is not None:
            cache["embed"] = x
        for l in range(self.layers):
            x = hooks.get((l, "resid_pre"), lambda a: a)(x)
            if cache is not None:
                cache[(l, "resid_pre")] = x
            attn, z, result = self.attention(l, self.layer_norm(x, f"layers.{l}.norm1"), hooks)
            if cache is not None:
                cache[(l, "z")], cache[(l, "result")] = z, result
            x = x + attn
            p = f"layers.{l}."
            hidden = F.gelu(self.layer_norm(x, p + "norm2") @ w[p + "linear1.weight"].T
                            + w[p + "linear1.bias"])
            mlp = hidden @ w[p + "linear2.weight"].T + w[p + "linear2.bias"]
            mlp = hooks.get((l, "mlp_out"), lambda a: a)(mlp)
            if cache is not None:
                cache[(l, "mlp_out")] = mlp
            x = x + mlp
        if cache is not None:
            cache["final"] = x
        return self.layer_norm(x, "norm") @ w["lm_head.weight"].T


def set_part(value, source, head=None, position=None, position_dim=2):
    out = value.clone()
    index = [slice(None)] * value.dim()
    if head is not None:
        index[1] = head
    if position is not None:
        index[position_dim] = position
    out[tuple(index)] = source[tuple(index)]
    return out


def compare(name, ours, theirs, failures):
    import numpy as np
    ours, theirs = np.asarray(ours, dtype=float), np.asarray(theirs, dtype=float)
    if ours.shape != theirs.shape:
        failures.append(f"{name}: shape {ours.shape} vs PyTorch {theirs.shape}")
        return
    both_nan = np.isnan(ours) & np.isnan(theirs)
    diff = np.where(both_nan, 0.0, np.abs(ours - theirs))
    worst = float(np.nanmax(diff)) if diff.size else 0.0
    if np.isnan(diff).any():
        worst = float("inf")
    print(f"{name:28s} {str(ours.shape):14s} max |headgrad - PyTorch| = {worst:.3g}")
    if not worst <= TOLERANCE:
        failures.append(f"{name}: max difference {worst:.3g} > {TOLERANCE}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--train-toy", required=True)
    parser.add_argument("--patching", required=True)
    parser.add_argument("--work-dir", required=True)
    parser.add_argument("--seed", type=int, default=3)
    args = parser.parse_args()
    try:
        import numpy as np
        import torch
    except ImportError:
        print("SKIPPED: no torch/numpy for", sys.executable)
        return 77
    heads = 4
    out = os.path.join(args.work_dir, "model")
    analysis = os.path.join(args.work_dir, "patching")
    run([args.train_toy, "--task", "associative_recall", "--length", "4", "--d-model", "16",
         "--layers", "2", "--heads", str(heads), "--steps", "150", "--batch-size", "32",
         "--lr", "0.01", "--warmup", "10", "--eval-every", "0", "--checkpoint-every", "0",
         "--seed", str(args.seed), "--out", out, "--quiet"])
    run([args.patching, "--checkpoint", os.path.join(out, "checkpoint.npz"), "--out", analysis,
         "--examples", "24", "--float64"])

    def load(name):
        return np.load(os.path.join(analysis, name))

    model = TorchGPT(torch, dict(np.load(os.path.join(out, "checkpoint.npz"))), heads)
    clean = torch.tensor(load("prompts_clean.npy"))
    corrupted = torch.tensor(load("prompts_corrupted.npy"))
    position = torch.tensor(load("prompts_position.npy"))
    answer = torch.tensor(load("prompts_answer.npy"))
    wrong = torch.tensor(load("prompts_wrong.npy"))
    rows = torch.arange(clean.shape[0])

    def metric(logits):
        return (logits[rows, position, answer] - logits[rows, position, wrong]).mean()

    clean_cache, corrupted_cache = {}, {}
    with torch.no_grad():
        m_clean = metric(model.forward(clean, cache=clean_cache)).item()
        m_corrupted = metric(model.forward(corrupted, cache=corrupted_cache)).item()

    def normalised(hooks):
        with torch.no_grad():
            return (metric(model.forward(corrupted, hooks)).item() - m_corrupted) / (
                m_clean - m_corrupted)

    layers, length = model.layers, clean.shape[1]
    summary = json.load(open(os.path.join(analysis, "summary.json")))
    failures = []
    compare("clean logit difference", summary["clean_logit_difference"], m_clean, failures)
    compare("corrupted logit difference", summary["corrupted_logit_difference"], m_corrupted,
            failures)

    def patch_z(l, h, pos=None):
        return {(l, "z"): lambda z: set_part(z, clean_cache[(l, "z")], h, pos)}

    by_head = [[normalised(patch_z(l, h)) for h in range(heads)] for l in range(layers)]
    compare("z patching per head", load("patching_heads.npy"), by_head, failures)
    by_cell = [[[normalised(patch_z(l, h, t)) for t in range(length)] for h in range(heads)]
               for l in range(layers)]
    compare("z patching per head, pos", load("patching_head_positions.npy"), by_cell, failures)
    by_position = [[normalised({(l, "resid_pre"): lambda x, l=l, t=t: set_part(
        x, clean_cache[(l, "resid_pre")], None, t, 1)}) for t in range(length)]
        for l in range(layers)]
    compare("resid_pre patching per pos", load("patching_residual.npy"), by_position, failures)

    # Attribution patching: (clean - corrupted) . d metric / d z at the corrupted run.
    kept = {}

    def keep(l):
        def f(z):
            z.retain_grad()
            kept[l] = z
            return z
        return f
    for weight in model.w.values():  # a graph through the weights, as headgrad's parameters
        weight.requires_grad_(True)
    metric(model.forward(corrupted, {(l, "z"): keep(l) for l in range(layers)})).backward()
    attribution = [[float(((clean_cache[(l, "z")] - corrupted_cache[(l, "z")])[:, h]
                           * kept[l].grad[:, h]).sum()) / (m_clean - m_corrupted)
                    for h in range(heads)] for l in range(layers)]
    compare("attribution patching", load("attribution_heads.npy"), attribution, failures)

    # Zero and mean ablation on the clean prompts (raw metric).
    ablation = {}
    for line in open(os.path.join(analysis, "ablation.csv")).read().split("\n")[1:]:
        if line:
            kind, l, h, value = line.split(",")[:4]
            ablation.setdefault(kind, np.full((layers, heads), np.nan))[int(l), int(h)] = float(value)
    for kind in ("zero", "mean"):
        ours = []
        for l in range(layers):
            row = []
            for h in range(heads):
                def ablate(z, l=l, h=h):
                    out = z.clone()
                    out[:, h] = 0 if kind == "zero" else clean_cache[(l, "z")][:, h].mean(0)
                    return out
                with torch.no_grad():
                    row.append(metric(model.forward(clean, {(l, "z"): ablate})).item())
            ours.append(row)
        compare(f"{kind} ablation", ablation[kind], ours, failures)

    # Path patching: sender's clean result in, other heads' z and MLPs frozen at their
    # corrupted values, receiver's q/k/v recorded, then patched alone.
    receiver = summary["path_patching_receiver"]
    for via in "qkv":
        grid = np.full((layers, heads), np.nan)
        for sl in range(receiver[0]):
            for sh in range(heads):
                got = {}
                hooks = {}
                for l in range(layers):
                    def freeze(z, l=l):
                        out = corrupted_cache[(l, "z")].clone()
                        if l == sl:
                            out[:, sh] = z[:, sh]
                        return out
                    hooks[(l, "z")] = freeze
                    hooks[(l, "mlp_out")] = lambda a, l=l: corrupted_cache[(l, "mlp_out")]
                hooks[(sl, "result")] = lambda r: set_part(r, clean_cache[(sl, "result")], sh)

                def record(a):
                    got["value"] = a
                    return a
                hooks[(receiver[0], via)] = record
                with torch.no_grad():
                    model.forward(corrupted, hooks)
                grid[sl, sh] = normalised({(receiver[0], via): lambda a: set_part(
                    a, got["value"], receiver[1])})
        compare(f"path patching via {via}", load(f"path_patching_{via}.npy"), grid, failures)

    # Direct logit attribution per head, norm's scale frozen.
    x = clean_cache["final"][rows, position]
    sigma = ((x - x.mean(-1, keepdim=True)) ** 2).mean(-1, keepdim=True).add(1e-5).sqrt()
    u = model.w["lm_head.weight"][answer] - model.w["lm_head.weight"][wrong]
    direction = u / sigma * model.w["norm.weight"]
    dla = []
    for l in range(layers):
        r = clean_cache[(l, "result")][rows, :, position]  # (N, H, E)
        r = r - r.mean(-1, keepdim=True)
        dla.append([float((r[:, h] * direction).sum(-1).mean()) for h in range(heads)])
    ours = np.full((layers, heads), np.nan)
    rows_of = {}
    for line in open(os.path.join(analysis, "logit_attribution.csv")).read().split("\n")[1:]:
        if line:
            component, l, h, value = line.split(",")
            rows_of[component] = float(value)
            if h:
                ours[int(l), int(h)] = float(value)
    compare("direct logit attribution", ours, dla, failures)
    # Every component's row: they sum to the model's own logit difference.
    parts = sum(v for k, v in rows_of.items() if k not in ("sum", "logit_difference"))
    compare("DLA, all components' sum", np.array([parts]), [m_clean], failures)

    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
