#!/usr/bin/python3
"""Writes nn::MultiheadAttention parity cases and PyTorch's results for them.

A case is a directory holding
  config.json   embed_dim, num_heads, kdim, vdim, bias, add_bias_kv, add_zero_attn,
                batch_first, need_weights, average_attn_weights, is_causal, dtype
                ("float32" or "float64"), and optionally self_attention
  query.npy, key.npy, value.npy, grad_output.npy
                query (L, N, E), key (S, N, kdim), value (S, N, vdim); N first when
                batch_first; unbatched (L, E), (S, kdim), (S, vdim); grad_output like the
                output (= like query). A self-attention case holds query.npy only: query,
                key and value are that one tensor.
  key_padding_mask.npy (N, S) or (S)   optional, bool (true = padding) or float (added)
  attn_mask.npy (L, S) or (N*H, L, S)  optional, bool (true = blocked) or float (added)
  <parameter>.npy  every entry of torch.nn.MultiheadAttention's state_dict
  expected/     what `mha_parity CASE_DIR OUT_DIR` must write: output.npy,
                attn_weights.npy (when need_weights), grad_query.npy, grad_key.npy,
                grad_value.npy and grad_<parameter>.npy, from forward in train mode
                (dropout 0) and backward of sum(output * grad_output).

PyTorch 1.13 has no is_causal: the expected results pass an explicit (L, S) bool mask,
True where key j > query i, OR-ed with the case's attn_mask (a float mask gets -inf
there). PyTorch 1.13 cannot combine a float key_padding_mask with an attn_mask
(masked_fill needs a bool mask): for those cases the reference passes both folded into one
(N*H, L, S) float attn_mask, which is what its documentation says both masks mean (added
to the scores). PyTorch 1.13 returns NaN for a query row whose keys are all masked
(headgrad returns zeros), so no case has such a row unless add_bias_kv or add_zero_attn
append an always-allowed key.

Usage:
  generate_cases.py --suite committed [--out DIR]          (DIR: tests/reference/cases)
  generate_cases.py --suite random --count N --seed S --out DIR
"""

import argparse
import json
import os
import shutil
import sys

import numpy as np

CONFIG_KEYS = ("embed_dim", "num_heads", "kdim", "vdim", "bias", "add_bias_kv", "add_zero_attn",
               "batch_first", "need_weights", "average_attn_weights", "is_causal", "dtype")

# Defaults of a committed case: E=8, H=2, L=3, S=4, N=2, cross-attention, float64.
BASE = dict(embed_dim=8, num_heads=2, kdim=None, vdim=None, bias=True, add_bias_kv=False,
            add_zero_attn=False, batch_first=False, need_weights=True,
            average_attn_weights=True, is_causal=False, dtype="float64",
            self_attention=False, L=3, S=4, N=2, unbatched=False,
            attn_mask=None, key_padding_mask=None, block_all_of_row=False)

# The committed suite: name -> overrides of BASE. attn_mask is one of None, "bool2d",
# "bool3d", "float2d", "float3d"; key_padding_mask one of None, "bool", "float".
# block_all_of_row blocks every source key of one query row (only with an appended key).
COMMITTED = {
    "self_attention_f32": dict(self_attention=True, S=3, dtype="float32"),
    "self_attention_f64": dict(self_attention=True, S=3),
    "cross_attention_f32": dict(dtype="float32"),
    "cross_attention_f64": dict(),
    "kdim_vdim_differ_f64": dict(kdim=6, vdim=5),
    "kdim_vdim_differ_f32": dict(kdim=5, vdim=7, dtype="float32"),
    "kdim_differs_vdim_default": dict(kdim=6, vdim=8),
    "bias_off": dict(bias=False),
    "add_bias_kv": dict(add_bias_kv=True),
    "add_zero_attn": dict(add_zero_attn=True),
    # One source key: the masks' key dim has size 1 before the appended keys.
    "add_bias_kv_and_zero_attn_one_key": dict(add_bias_kv=True, add_zero_attn=True, S=1,
                                              attn_mask="bool2d", key_padding_mask="float"),
    "bool_attn_mask_2d": dict(attn_mask="bool2d"),
    "bool_attn_mask_3d": dict(attn_mask="bool3d"),
    "float_attn_mask_2d": dict(attn_mask="float2d"),
    "float_attn_mask_3d_f32": dict(attn_mask="float3d", dtype="float32"),
    "bool_key_padding_mask": dict(key_padding_mask="bool"),
    "float_key_padding_mask": dict(key_padding_mask="float"),
    "bool_attn_mask_and_key_padding_mask": dict(attn_mask="bool2d", key_padding_mask="bool"),
    "float_attn_mask_and_bool_key_padding_mask": dict(attn_mask="float3d",
                                                      key_padding_mask="bool"),
    "float_attn_mask_and_float_key_padding_mask": dict(attn_mask="float2d",
                                                       key_padding_mask="float"),
    "is_causal": dict(is_causal=True),
    "is_causal_with_masks": dict(is_causal=True, attn_mask="float2d", key_padding_mask="bool"),
    "weights_per_head": dict(average_attn_weights=False, attn_mask="bool3d"),
    "weights_off": dict(need_weights=False, key_padding_mask="bool"),
    "batch_first_f32": dict(batch_first=True, dtype="float32", attn_mask="bool2d"),
    "unbatched": dict(unbatched=True, N=1),
    "unbatched_masks_per_head": dict(unbatched=True, N=1, batch_first=True,
                                     attn_mask="float3d", key_padding_mask="bool",
                                     average_attn_weights=False),
    "blocked_rows_rescued_by_bias_kv": dict(add_bias_kv=True, attn_mask="bool2d",
                                            block_all_of_row=True),
    "self_attention_batch_first_causal_f32": dict(self_attention=True, S=3, batch_first=True,
                                                  is_causal=True, dtype="float32",
                                                  add_zero_attn=True),
    "everything_f32": dict(kdim=5, vdim=6, add_bias_kv=True, add_zero_attn=True,
                           attn_mask="bool3d", key_padding_mask="float", is_causal=True,
                           batch_first=True, average_attn_weights=False, dtype="float32",
                           block_all_of_row=True),
}


def random_spec(rng):
    """One random case spec: every option drawn, dims small."""
    H = int(rng.integers(1, 5))
    E = int(rng.choice([e for e in range(4, 17) if e % H == 0]))
    spec = dict(BASE)
    spec.update(embed_dim=E, num_heads=H,
                dtype=str(rng.choice(["float32", "float64"])),
                self_attention=bool(rng.random() < 0.3),
                bias=bool(rng.random() < 0.75),
                add_bias_kv=bool(rng.random() < 0.3),
                add_zero_attn=bool(rng.random() < 0.3),
                batch_first=bool(rng.random() < 0.5),
                need_weights=bool(rng.random() < 0.7),
                average_attn_weights=bool(rng.random() < 0.5),
                is_causal=bool(rng.random() < 0.25),
                unbatched=bool(rng.random() < 0.2),
                L=int(rng.integers(1, 7)), S=int(rng.integers(1, 7)), N=int(rng.integers(1, 4)),
                attn_mask=[None, "bool2d", "bool3d", "float2d", "float3d"][
                    int(rng.choice(5, p=[0.4, 0.15, 0.15, 0.15, 0.15]))],
                key_padding_mask=[None, "bool", "float"][int(rng.choice(3, p=[0.5, 0.3, 0.2]))])
    if spec["unbatched"]:
        spec["N"] = 1
    if spec["self_attention"]:
        spec["S"] = spec["L"]
    else:
        # kdim / vdim: null (the default), equal to E (also the default), or different.
        for name in ("kdim", "vdim"):
            r = rng.random()
            spec[name] = None if r < 0.4 else E if r < 0.6 else int(rng.integers(1, 13))
    spec["block_all_of_row"] = bool((spec["add_bias_kv"] or spec["add_zero_attn"])
                                    and spec["attn_mask"] is not None and rng.random() < 0.5)
    return spec


def make_case(spec, rng):
    """Draws the arrays of a case. Returns (config, arrays) with numpy arrays by file stem."""
    E, H, L, S, N = (spec[k] for k in ("embed_dim", "num_heads", "L", "S", "N"))
    kdim = spec["kdim"] if spec["kdim"] is not None else E
    vdim = spec["vdim"] if spec["vdim"] is not None else E
    dt = np.float32 if spec["dtype"] == "float32" else np.float64
    if spec["self_attention"]:
        assert kdim == E and vdim == E and S == L
    config = {k: spec[k] for k in CONFIG_KEYS}
    if spec["self_attention"]:
        config["self_attention"] = True

    def layout(length, dim):
        if spec["unbatched"]:
            return (length, dim)
        return (N, length, dim) if spec["batch_first"] else (length, N, dim)

    arrays = {"query": rng.standard_normal(layout(L, E))}
    if not spec["self_attention"]:
        arrays["key"] = rng.standard_normal(layout(S, kdim))
        arrays["value"] = rng.standard_normal(layout(S, vdim))
    arrays["grad_output"] = rng.standard_normal(layout(L, E))

    # Parameters: every state_dict entry, randn * 0.5 (biases nonzero).
    shapes = {}
    if kdim == E and vdim == E:
        shapes["in_proj_weight"] = (3 * E, E)
    else:
        shapes.update(q_proj_weight=(E, E), k_proj_weight=(E, kdim), v_proj_weight=(E, vdim))
    if spec["bias"]:
        shapes["in_proj_bias"] = (3 * E,)
    if spec["add_bias_kv"]:
        shapes.update(bias_k=(1, 1, E), bias_v=(1, 1, E))
    shapes["out_proj.weight"] = (E, E)
    if spec["bias"]:
        shapes["out_proj.bias"] = (E,)
    for name, shape in shapes.items():
        arrays[name] = 0.5 * rng.standard_normal(shape)
    arrays = {k: np.ascontiguousarray(v.astype(dt)) for k, v in arrays.items()}

    masks = draw_masks(spec, rng, dt)
    arrays.update(masks)
    return config, arrays


def draw_masks(spec, rng, dt):
    """attn_mask and key_padding_mask, with no fully blocked query row unless an appended
    key (add_bias_kv, add_zero_attn) keeps one allowed."""
    H, L, S, N = (spec[k] for k in ("num_heads", "L", "S", "N"))
    masks = {}
    kind = spec["attn_mask"]
    if kind is not None:
        shape = (L, S) if kind.endswith("2d") else (N * H, L, S)
        if kind.startswith("bool"):
            masks["attn_mask"] = rng.random(shape) < 0.3
        else:
            m = rng.standard_normal(shape)
            m[rng.random(shape) < 0.3] = -np.inf
            masks["attn_mask"] = m.astype(dt)
    kind = spec["key_padding_mask"]
    if kind is not None:
        shape = (S,) if spec["unbatched"] else (N, S)
        if kind == "bool":
            masks["key_padding_mask"] = rng.random(shape) < 0.25
        else:
            m = 0.5 * rng.standard_normal(shape)
            m[rng.random(shape) < 0.25] = -np.inf
            masks["key_padding_mask"] = m.astype(dt)

    appended = spec["add_bias_kv"] or spec["add_zero_attn"]
    if spec["block_all_of_row"] and "attn_mask" in masks:
        assert appended
        m = masks["attn_mask"]
        row = int(rng.integers(0, L))
        m[..., row, :] = True if m.dtype == np.bool_ else -np.inf
    if not appended:
        repair_blocked_rows(spec, masks)
    return masks


def blocked_scores(spec, masks):
    """(N, H, L, S) bool: which source keys each query row may not attend."""
    H, L, S, N = (spec[k] for k in ("num_heads", "L", "S", "N"))
    blocked = np.zeros((N, H, L, S), dtype=bool)
    m = masks.get("attn_mask")
    if m is not None:
        b = m if m.dtype == np.bool_ else np.isneginf(m)
        blocked |= b.reshape(N, H, L, S) if b.ndim == 3 else b
    k = masks.get("key_padding_mask")
    if k is not None:
        b = k if k.dtype == np.bool_ else np.isneginf(k)
        blocked |= b.reshape(N, 1, 1, S)
    if spec["is_causal"]:
        blocked |= np.arange(S)[None, :] > np.arange(L)[:, None]
    return blocked


def repair_blocked_rows(spec, masks):
    """Unblocks key 0 (never blocked by the causal mask) of every fully blocked row."""
    H = spec["num_heads"]
    blocked = blocked_scores(spec, masks)
    for n, h, i in zip(*np.nonzero(blocked.all(axis=-1))):
        m = masks.get("attn_mask")
        if m is not None:
            idx = (n * H + h, i, 0) if m.ndim == 3 else (i, 0)
            m[idx] = False if m.dtype == np.bool_ else 0.0
        k = masks.get("key_padding_mask")
        if k is not None:
            idx = (0,) if k.ndim == 1 else (n, 0)
            k[idx] = False if k.dtype == np.bool_ else 0.0
    assert not blocked_scores(spec, masks).all(axis=-1).any()


def torch_masks(config, arrays, unbatched):
    """The attn_mask and key_padding_mask to hand to PyTorch 1.13 (see the module doc)."""
    import torch
    H = config["num_heads"]
    attn = arrays.get("attn_mask")
    kpm = arrays.get("key_padding_mask")
    q = arrays["query"]
    L = q.shape[0] if unbatched or not config["batch_first"] else q.shape[1]
    k = arrays.get("key", q)
    S = k.shape[0] if unbatched or not config["batch_first"] else k.shape[1]
    if config["is_causal"]:
        causal = np.arange(S)[None, :] > np.arange(L)[:, None]
        if attn is None:
            attn = causal
        elif attn.dtype == np.bool_:
            attn = attn | causal
        else:
            attn = np.where(causal, -np.inf, attn).astype(attn.dtype)
    if kpm is not None and kpm.dtype != np.bool_ and attn is not None:
        # Fold a float key_padding_mask into a float (N*H, L, S) attn_mask.
        N = 1 if unbatched else kpm.shape[0]
        kp = kpm.reshape(N, 1, 1, S)
        if attn.dtype == np.bool_:
            a = np.where(attn, -np.inf, 0.0).astype(kpm.dtype)
        else:
            a = attn
        a = np.broadcast_to(a.reshape(N, H, L, S) if a.ndim == 3 else a, (N, H, L, S)) + kp
        attn = np.ascontiguousarray(a.reshape(N * H, L, S).astype(kpm.dtype))
        kpm = None
    to_t = lambda a: None if a is None else torch.from_numpy(np.ascontiguousarray(a))
    return to_t(attn), to_t(kpm)


def compute_expected(config, arrays):
    """Runs torch.nn.MultiheadAttention on a case. Returns {file stem: numpy array}."""
    import torch
    dtype = torch.float32 if config["dtype"] == "float32" else torch.float64
    E, H = config["embed_dim"], config["num_heads"]
    mha = torch.nn.MultiheadAttention(E, H, dropout=0.0, bias=config["bias"],
                                      add_bias_kv=config["add_bias_kv"],
                                      add_zero_attn=config["add_zero_attn"],
                                      kdim=config["kdim"], vdim=config["vdim"],
                                      batch_first=config["batch_first"], dtype=dtype)
    names = list(mha.state_dict().keys())
    mha.load_state_dict({n: torch.from_numpy(arrays[n]) for n in names}, strict=True)
    mha.train()
    self_attention = config.get("self_attention", False)
    query = torch.from_numpy(arrays["query"].copy()).requires_grad_(True)
    if self_attention:
        key = value = query
    else:
        key = torch.from_numpy(arrays["key"].copy()).requires_grad_(True)
        value = torch.from_numpy(arrays["value"].copy()).requires_grad_(True)
    unbatched = query.dim() == 2
    attn_mask, kpm = torch_masks(config, arrays, unbatched)
    out, weights = mha(query, key, value, key_padding_mask=kpm,
                       need_weights=config["need_weights"], attn_mask=attn_mask,
                       average_attn_weights=config["average_attn_weights"])
    (out * torch.from_numpy(arrays["grad_output"])).sum().backward()

    result = {"output": out.detach().numpy()}
    if config["need_weights"]:
        result["attn_weights"] = weights.detach().numpy()
    result["grad_query"] = query.grad.numpy()
    result["grad_key"] = (query if self_attention else key).grad.numpy()
    result["grad_value"] = (query if self_attention else value).grad.numpy()
    for name, p in mha.named_parameters():
        result["grad_" + name] = p.grad.numpy()
    for name, a in result.items():
        if a.dtype != arrays["query"].dtype or not np.isfinite(a).all():
            raise RuntimeError(f"{name}: PyTorch gave dtype {a.dtype} or non-finite values")
    return {k: np.ascontiguousarray(v) for k, v in result.items()}


def write_case(case_dir, config, arrays, expected):
    if os.path.exists(case_dir):
        shutil.rmtree(case_dir)
    os.makedirs(os.path.join(case_dir, "expected"))
    with open(os.path.join(case_dir, "config.json"), "w") as f:
        json.dump(config, f, indent=1)
        f.write("\n")
    for name, a in arrays.items():
        np.save(os.path.join(case_dir, name + ".npy"), a)
    for name, a in expected.items():
        np.save(os.path.join(case_dir, "expected", name + ".npy"), a)


def generate(spec, rng, case_dir):
    config, arrays = make_case(spec, rng)
    expected = compute_expected(config, arrays)
    write_case(case_dir, config, arrays, expected)
    return config


def committed_suite(out_dir):
    os.makedirs(out_dir, exist_ok=True)
    for entry in os.listdir(out_dir):  # stale cases of an older list
        path = os.path.join(out_dir, entry)
        if os.path.isdir(path) and entry not in COMMITTED:
            shutil.rmtree(path)
    for index, (name, overrides) in enumerate(COMMITTED.items()):
        spec = dict(BASE)
        spec.update(overrides)
        generate(spec, np.random.default_rng(1000 + index), os.path.join(out_dir, name))
    return list(COMMITTED)


def random_suite(out_dir, count, seed):
    """Writes `count` random cases case_0000, ... Returns [(name, config)]."""
    rng = np.random.default_rng(seed)
    os.makedirs(out_dir, exist_ok=True)
    written = []
    for i in range(count):
        name = f"case_{i:04d}"
        written.append((name, generate(random_spec(rng), rng, os.path.join(out_dir, name))))
    return written


def main(argv):
    here = os.path.dirname(os.path.abspath(__file__))
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--suite", choices=["committed", "random"], required=True)
    p.add_argument("--out", help="output directory (committed: tests/reference/cases)")
    p.add_argument("--count", type=int, default=120)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    import torch
    torch.manual_seed(0)  # module construction draws an init that load_state_dict replaces
    if args.suite == "committed":
        out = args.out or os.path.join(here, "cases")
        names = committed_suite(out)
        print(f"wrote {len(names)} committed cases to {out}")
    else:
        if not args.out:
            p.error("--suite random needs --out")
        random_suite(args.out, args.count, args.seed)
        print(f"wrote {args.count} random cases (seed {args.seed}) to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
