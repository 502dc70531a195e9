#!/usr/bin/python3
"""Writes the optimizer trajectory cases that tests/optim/test_torch_oracle.cpp replays.

Every case trains the same small float64 problem for STEPS steps with one torch.optim
optimizer (single-tensor path, foreach=False), optionally clipping the gradients with
torch.nn.utils.clip_grad_norm_ and setting the learning rate from a schedule before each
step, and records the trajectory.

The problem (data from a fixed NumPy seed, shared by every case):
  x (6, 3), y (6, 2), t (3)                             data
  W (3, 4), b (4), V (4, 2), u (2), s (3)               parameters, in this order
  loss_k = mean((tanh(x @ W + b) @ V - y) ** 2)
           + (0.5 * sum((s - t) ** 2)  when k is even)  k = 0-based step index
u never enters the loss (its grad stays None: every optimizer must skip it and create no
state), s has a gradient on even steps only (its own step count lags the others').

A case is a directory holding
  config.json   optimizer ("sgd", "adam", "adamw"), its options (lr, momentum, dampening,
                weight_decay, nesterov / betas, eps, weight_decay, amsgrad), steps,
                dtype, param_names, clip (null or {max_norm, norm_type}, norm_type "inf"
                for the max norm), schedule (null or {kind, lr, warmup_steps,
                total_steps, min_lr}: the lr of step k is the schedule's lr_at(k), computed
                here from the formulas in include/headgrad/optim/schedule.hpp)
  x.npy, y.npy, t.npy, init_<name>.npy
  expected/<name>.npy       (steps, *shape): parameter <name> after each step
  expected/grad_<name>.npy  (steps, *shape): its gradient before clipping (zeros when None)
  expected/has_grad.npy     (steps, 5) int64: 1 where the parameter had a gradient
  expected/loss.npy         (steps): the loss at the parameters before each step
  expected/lr.npy           (steps): the learning rate each step used
  expected/total_norm.npy   (steps): clip_grad_norm_'s return value (clip cases only)

Usage: /usr/bin/python3 tests/reference/generate_optim_cases.py [--out DIR]
(DIR defaults to tests/reference/optim_cases; the output is deterministic.)
"""

import argparse
import json
import math
import os
import shutil

import numpy as np
import torch

STEPS = 20
PARAM_NAMES = ["W", "b", "V", "u", "s"]

# name -> (optimizer, options, clip, schedule, dtype)
CASES = {
    "sgd_plain": ("sgd", dict(lr=0.1), None, None, "float64"),
    "sgd_momentum": ("sgd", dict(lr=0.05, momentum=0.9), None, None, "float64"),
    "sgd_dampening": ("sgd", dict(lr=0.05, momentum=0.9, dampening=0.3), None, None, "float64"),
    "sgd_nesterov": ("sgd", dict(lr=0.05, momentum=0.9, nesterov=True), None, None, "float64"),
    "sgd_weight_decay": ("sgd", dict(lr=0.1, momentum=0.5, weight_decay=0.05), None, None,
                         "float64"),
    "sgd_momentum_clip": ("sgd", dict(lr=0.1, momentum=0.9), dict(max_norm=0.3, norm_type=2.0),
                          None, "float64"),
    "adam": ("adam", dict(lr=0.05), None, None, "float64"),
    "adam_weight_decay": ("adam", dict(lr=0.05, weight_decay=0.1), None, None, "float64"),
    "adam_amsgrad": ("adam", dict(lr=0.05, betas=[0.8, 0.99], amsgrad=True), None, None,
                     "float64"),
    "adam_clip_inf_norm": ("adam", dict(lr=0.05), dict(max_norm=0.2, norm_type="inf"), None,
                           "float64"),
    "adamw": ("adamw", dict(lr=0.05), None, None, "float64"),
    "adamw_amsgrad_eps": ("adamw", dict(lr=0.05, weight_decay=0.1, eps=1e-3, amsgrad=True),
                          None, None, "float64"),
    "adamw_cosine_clip_l1": ("adamw", dict(lr=0.08, weight_decay=0.05),
                             dict(max_norm=0.5, norm_type=1.0),
                             dict(kind="cosine", lr=0.08, warmup_steps=4, total_steps=16,
                                  min_lr=0.01), "float64"),
    "sgd_nesterov_linear_schedule": ("sgd", dict(lr=0.1, momentum=0.8, nesterov=True,
                                                 weight_decay=0.01), None,
                                     dict(kind="linear", lr=0.1, warmup_steps=3,
                                          total_steps=15, min_lr=0.02), "float64"),
    # float32: headgrad's float32 kernels against torch's float32 arithmetic.
    "sgd_momentum_f32": ("sgd", dict(lr=0.05, momentum=0.9, weight_decay=0.01), None, None,
                         "float32"),
    "adamw_f32": ("adamw", dict(lr=0.05, amsgrad=True), dict(max_norm=0.3, norm_type=2.0), None,
                  "float32"),
}


def schedule_lr(s, step):
    """The formulas of include/headgrad/optim/schedule.hpp, written out independently."""
    base, w, n, floor = s["lr"], s["warmup_steps"], s["total_steps"], s["min_lr"]
    if step < w:
        return base * (step + 1) / w
    if s["kind"] == "constant":
        return base
    if step >= n:
        return floor
    if s["kind"] == "linear":
        return floor + (base - floor) * (n - step) / (n - w)
    return floor + (base - floor) * (1 + math.cos(math.pi * (step - w) / (n - w))) / 2


def problem_data():
    rng = np.random.default_rng(20240611)
    data = dict(x=rng.normal(size=(6, 3)), y=rng.normal(size=(6, 2)), t=rng.normal(size=(3,)))
    init = dict(W=rng.normal(size=(3, 4)) * 0.7, b=rng.normal(size=(4,)) * 0.3,
                V=rng.normal(size=(4, 2)) * 0.7, u=rng.normal(size=(2,)),
                s=rng.normal(size=(3,)))
    return data, init


def make_optimizer(kind, options, params):
    o = dict(options)
    if "betas" in o:
        o["betas"] = tuple(o["betas"])
    if kind == "sgd":
        return torch.optim.SGD(params, foreach=False, **o)
    if kind == "adam":
        return torch.optim.Adam(params, foreach=False, **o)
    return torch.optim.AdamW(params, foreach=False, **o)


def run_case(name, spec, data, init, out_dir):
    kind, options, clip, schedule, dtype = spec
    tdtype = torch.float64 if dtype == "float64" else torch.float32
    npdtype = np.float64 if dtype == "float64" else np.float32
    d = {k: torch.tensor(v.astype(npdtype)) for k, v in data.items()}
    params = [torch.tensor(init[n].astype(npdtype), requires_grad=True) for n in PARAM_NAMES]
    W, b, V, u, s = params
    opt = make_optimizer(kind, options, params)

    traj = {n: [] for n in PARAM_NAMES}
    grads = {n: [] for n in PARAM_NAMES}
    has_grad, losses, lrs, norms = [], [], [], []
    for k in range(STEPS):
        opt.zero_grad(set_to_none=True)
        loss = ((torch.tanh(d["x"] @ W + b) @ V - d["y"]) ** 2).mean()
        if k % 2 == 0:
            loss = loss + 0.5 * ((s - d["t"]) ** 2).sum()
        loss.backward()
        losses.append(loss.item())
        has_grad.append([int(p.grad is not None) for p in params])
        for n, p in zip(PARAM_NAMES, params):
            g = p.grad if p.grad is not None else torch.zeros_like(p)
            grads[n].append(g.detach().numpy().copy())
        if clip is not None:
            norm_type = math.inf if clip["norm_type"] == "inf" else clip["norm_type"]
            total = torch.nn.utils.clip_grad_norm_(params, clip["max_norm"], norm_type)
            norms.append(float(total))
        if schedule is not None:
            for group in opt.param_groups:
                group["lr"] = schedule_lr(schedule, k)
        lrs.append(opt.param_groups[0]["lr"])
        opt.step()
        for n, p in zip(PARAM_NAMES, params):
            traj[n].append(p.detach().numpy().copy())

    assert all(h[3] == 0 for h in has_grad), "u must never have a gradient"
    if clip is not None:
        clipped = sum(1 for v in norms if clip["max_norm"] / (v + 1e-6) < 1)
        assert 0 < clipped, f"{name}: clipping never happened"

    case = os.path.join(out_dir, name)
    os.makedirs(os.path.join(case, "expected"))
    config = dict(optimizer=kind, options=options, steps=STEPS, dtype=dtype,
                  param_names=PARAM_NAMES, clip=clip, schedule=schedule)
    with open(os.path.join(case, "config.json"), "w") as f:
        json.dump(config, f, indent=2, sort_keys=True)
        f.write("\n")
    for k, v in data.items():
        np.save(os.path.join(case, f"{k}.npy"), v.astype(npdtype))
    for n in PARAM_NAMES:
        np.save(os.path.join(case, f"init_{n}.npy"), init[n].astype(npdtype))
        np.save(os.path.join(case, "expected", f"{n}.npy"), np.stack(traj[n]))
        np.save(os.path.join(case, "expected", f"grad_{n}.npy"), np.stack(grads[n]))
    np.save(os.path.join(case, "expected", "has_grad.npy"), np.array(has_grad, dtype=np.int64))
    np.save(os.path.join(case, "expected", "loss.npy"), np.array(losses, dtype=np.float64))
    np.save(os.path.join(case, "expected", "lr.npy"), np.array(lrs, dtype=np.float64))
    if clip is not None:
        np.save(os.path.join(case, "expected", "total_norm.npy"), np.array(norms, dtype=np.float64))
    summary = f"clipped {clipped}/{STEPS}" if clip is not None else ""
    print(f"{name}: final loss {losses[-1]:.6f} (first {losses[0]:.6f}) {summary}")


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default=os.path.join(here, "optim_cases"))
    args = parser.parse_args()
    torch.set_num_threads(1)
    data, init = problem_data()
    os.makedirs(args.out, exist_ok=True)
    for name in sorted(os.listdir(args.out)):  # rewrite the cases, keep README.md
        path = os.path.join(args.out, name)
        if os.path.isdir(path):
            shutil.rmtree(path)
    for name, spec in CASES.items():
        run_case(name, spec, data, init, args.out)


if __name__ == "__main__":
    main()
