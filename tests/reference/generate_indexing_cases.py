#!/usr/bin/env python3
"""Writes indexing_cases/cases.json: random index lists applied by PyTorch 1.13, the
oracle that tests/ops/test_indexing_oracle.cpp replays through Tensor::index,
Tensor::index_put_ and index_put.

    /usr/bin/python3 tests/reference/generate_indexing_cases.py [--count 300] [--seed 0]

Each case holds the input's shape (x = arange(n) / 8 - 1, float64, exact in binary), an
index list, and PyTorch's results:
  - "get": out = x[index] (shape and values), and the gradient of sum(out * w) for x,
    w = the case's weights (multiples of 1/16, so sums are exact);
  - "put": y = x.clone(); y[index] = value (or torch.index_put(x, tensors, value,
    accumulate=True) when "accumulate"), its values and the gradients of sum(y * w) for x
    and value. Without accumulate the region has no repeated element (torch leaves the
    winner of a repeated write unspecified).
An index entry is {"int": i}, {"slice": [start, stop, step]} (null bounds), {"none": 1},
{"ellipsis": 1}, {"ids": {"shape", "data"}} (int64, negatives allowed) or
{"mask": {"shape", "data"}} (bool as 0/1). Index lists that PyTorch refuses are skipped.
"""
import argparse
import json
import os
import random

import torch


def rand_shape(rng, dims, low=1, high=4):
    return [rng.randint(low, high) for _ in range(dims)]


def broadcastable_to(rng, shape):
    """A shape that broadcasts to `shape`: leading dims dropped, some set to 1."""
    keep = shape[rng.randint(0, len(shape)):] if shape and rng.random() < 0.3 else list(shape)
    return [1 if rng.random() < 0.25 else s for s in keep]


def ids_entry(rng, size, shape):
    n = 1
    for s in shape:
        n *= s
    data = [rng.randint(-size, size - 1) for _ in range(n)]
    return {"ids": {"shape": shape, "data": data}}


def random_index(rng, x_shape, tensors_only=False):
    """An index list for x_shape mixing basic and advanced entries."""
    entries, dim = [], 0
    b_shape = rand_shape(rng, rng.randint(0, 2), 1, 3)
    used_ellipsis = False
    while dim < len(x_shape):
        size = x_shape[dim]
        kind = rng.choice(["ids", "ids", "ids", "slice", "int", "none", "mask", "ellipsis", "stop"])
        if tensors_only and kind not in ("ids", "mask", "stop"):
            kind = "ids"
        if kind == "stop" and entries:
            break
        if kind == "ids" or kind == "stop":
            shape = broadcastable_to(rng, b_shape)
            if tensors_only and not shape:
                # torch.index_put takes a 0-d tensor as positions, x[t] and index_put_ with
                # TensorIndex select with it: the accumulate cases use 1-d ones.
                shape = [1]
            entries.append(ids_entry(rng, size, shape))
            dim += 1
        elif kind == "slice":
            start = rng.choice([None, rng.randint(-size - 1, size + 1)])
            stop = rng.choice([None, rng.randint(-size - 1, size + 1)])
            entries.append({"slice": [start, stop, rng.choice([1, 1, 2, 3])]})
            dim += 1
        elif kind == "int":
            entries.append({"int": rng.randint(-size, size - 1)})
            dim += 1
        elif kind == "none":
            entries.append({"none": 1})
        elif kind == "mask":
            k = rng.randint(1, min(2, len(x_shape) - dim))
            shape = x_shape[dim:dim + k]
            n = 1
            for s in shape:
                n *= s
            entries.append({"mask": {"shape": shape, "data": [rng.randint(0, 1) for _ in range(n)]}})
            dim += k
        elif kind == "ellipsis" and not used_ellipsis:
            used_ellipsis = True
            entries.append({"ellipsis": 1})
            dim = len(x_shape) - rng.randint(0, 1)
    return entries


def to_torch(entries):
    out = []
    for e in entries:
        if "int" in e:
            out.append(e["int"])
        elif "slice" in e:
            out.append(slice(*e["slice"]))
        elif "none" in e:
            out.append(None)
        elif "ellipsis" in e:
            out.append(Ellipsis)
        elif "ids" in e:
            out.append(torch.tensor(e["ids"]["data"], dtype=torch.int64).reshape(e["ids"]["shape"]))
        else:
            out.append(torch.tensor(e["mask"]["data"], dtype=torch.bool).reshape(e["mask"]["shape"]))
    return tuple(out)


def weights(rng, shape):
    return torch.tensor([rng.randint(-16, 16) / 16 for _ in range(max(1, torch.Size(shape).numel()))],
                        dtype=torch.float64)[:torch.Size(shape).numel()].reshape(shape)


def flat(t):
    return [float(v) for v in t.detach().reshape(-1).tolist()]


def get_case(rng, x_shape, entries):
    index = to_torch(entries)
    n = torch.Size(x_shape).numel()
    x = (torch.arange(n, dtype=torch.float64) / 8 - 1).reshape(x_shape).requires_grad_(True)
    out = x[index]
    w = weights(rng, list(out.shape))
    (out * w).sum().backward()
    return {"op": "get", "shape": x_shape, "index": entries, "out_shape": list(out.shape),
            "out": flat(out), "weights": flat(w), "grad_x": flat(x.grad)}


def put_case(rng, x_shape, entries, accumulate):
    index = to_torch(entries)
    n = torch.Size(x_shape).numel()
    region = torch.arange(n).reshape(x_shape)[index]
    if not accumulate and region.unique().numel() != region.numel():
        return None
    value_shape = broadcastable_to(rng, list(region.shape)) if rng.random() < 0.8 else []
    x = (torch.arange(n, dtype=torch.float64) / 8 - 1).reshape(x_shape).requires_grad_(True)
    value = weights(rng, value_shape).requires_grad_(True)
    if accumulate:
        y = torch.index_put(x, index, value, accumulate=True)
    else:
        y = x.clone()
        y[index] = value
    w = weights(rng, x_shape)
    (y * w).sum().backward()
    return {"op": "put", "accumulate": accumulate, "shape": x_shape, "index": entries,
            "value_shape": value_shape, "value": flat(value), "out": flat(y), "weights": flat(w),
            "grad_x": flat(x.grad), "grad_value": flat(value.grad)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--count", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "indexing_cases",
                                                      "cases.json"))
    args = parser.parse_args()
    rng = random.Random(args.seed)
    cases, tries = [], 0
    while len(cases) < args.count and tries < 50 * args.count:
        tries += 1
        x_shape = rand_shape(rng, rng.randint(1, 4))
        op = rng.choice(["get", "get", "put", "accumulate"])
        entries = random_index(rng, x_shape, tensors_only=(op == "accumulate"))
        if not any("ids" in e or "mask" in e for e in entries):
            continue
        try:
            case = (get_case(rng, x_shape, entries) if op == "get" else
                    put_case(rng, x_shape, entries, op == "accumulate"))
        except (IndexError, RuntimeError, ValueError):
            continue
        if case is not None:
            cases.append(case)
    with open(args.out, "w") as f:
        json.dump({"torch": torch.__version__, "seed": args.seed, "cases": cases}, f,
                  separators=(",", ":"))
        f.write("\n")
    kinds = {k: sum(1 for c in cases if (c["op"] == "get") == (k == "get") and
                    c.get("accumulate", False) == (k == "accumulate")) for k in ("get", "put", "accumulate")}
    print(f"wrote {len(cases)} cases ({kinds}) to {args.out}")


if __name__ == "__main__":
    main()
