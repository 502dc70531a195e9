#!/usr/bin/python3
"""Writes nn::TransformerEncoderLayer / nn::TransformerDecoderLayer parity cases and
PyTorch 1.13's results for them (run with Debian's /usr/bin/python3, which has torch).

A case is a directory holding
  config.json   layer ("encoder" or "decoder"), d_model, nhead, dim_feedforward,
                activation ("relu" or "gelu"), layer_norm_eps, batch_first, norm_first,
                is_causal (encoder) / tgt_is_causal (decoder), dtype ("float64")
  encoder: src.npy (S, N, E)
  decoder: tgt.npy (T, N, E), memory.npy (S, N, E)          (N first when batch_first)
  grad_output.npy  like src / tgt
  masks, each optional: src_mask.npy (S, S) or (N*H, S, S), src_key_padding_mask.npy (N, S);
                tgt_mask.npy (T, T), memory_mask.npy (T, S), tgt_key_padding_mask.npy (N, T),
                memory_key_padding_mask.npy (N, S); bool (true = blocked) or float (added)
  <parameter>.npy  every entry of the torch layer's state_dict, under its name
                (self_attn.in_proj_weight.npy, linear1.weight.npy, norm1.bias.npy, ...)
  expected/     output.npy, grad_src.npy (encoder) or grad_tgt.npy and grad_memory.npy
                (decoder), grad_<parameter>.npy for every parameter: forward in train
                mode with dropout 0 and grad enabled (so torch takes its ordinary path,
                not the inference fast path), backward of sum(output * grad_output).

PyTorch 1.13's layers have no is_causal argument: the reference passes an explicit bool
mask, true where key j > query i, OR-ed into the case's own mask (which a causal case does
not have). No query row has all its keys masked (PyTorch 1.13 gives NaN there, headgrad
zeros): key padding only covers trailing positions and never the first.

Usage:
  generate_transformer_cases.py [--out DIR]     (DIR: tests/reference/transformer_cases)
"""

import argparse
import json
import os
import shutil
import sys

import numpy as np

# Defaults of a case: E=8, H=2, F=16, S=5 (source), T=4 (target), N=2, float64.
BASE = dict(layer="encoder", d_model=8, nhead=2, dim_feedforward=16, activation="relu",
            layer_norm_eps=1e-5, batch_first=False, norm_first=False, causal=False,
            S=5, T=4, N=2, masks={})

# name -> overrides of BASE. masks: mask name -> "bool2d" | "bool3d" | "float2d" |
# "float3d" (attention masks) or "bool" | "float" (key padding masks).
CASES = {
    "encoder_post_norm_relu_seq_first": dict(
        masks=dict(src_mask="bool2d", src_key_padding_mask="bool")),
    "encoder_pre_norm_gelu_batch_first": dict(
        activation="gelu", norm_first=True, batch_first=True,
        masks=dict(src_mask="float2d", src_key_padding_mask="bool")),
    "encoder_post_norm_gelu_causal_batch_first": dict(
        activation="gelu", batch_first=True, causal=True, layer_norm_eps=1e-6,
        masks=dict(src_key_padding_mask="bool")),
    "encoder_pre_norm_relu_float_mask3d": dict(
        norm_first=True, masks=dict(src_mask="float3d")),
    "encoder_pre_norm_relu_float_key_padding": dict(
        norm_first=True, batch_first=True, masks=dict(src_key_padding_mask="float")),
    "decoder_post_norm_relu_seq_first": dict(
        layer="decoder", causal=True,
        masks=dict(memory_mask="bool2d", tgt_key_padding_mask="bool",
                   memory_key_padding_mask="bool")),
    "decoder_pre_norm_gelu_batch_first": dict(
        layer="decoder", activation="gelu", norm_first=True, batch_first=True,
        masks=dict(tgt_mask="float2d", memory_mask="float2d", memory_key_padding_mask="bool")),
    "decoder_post_norm_gelu_masks_batch_first": dict(
        layer="decoder", activation="gelu", batch_first=True, layer_norm_eps=1e-6,
        masks=dict(tgt_mask="bool2d", tgt_key_padding_mask="bool")),
}


def mask_shape(spec, name, kind):
    """(query length, key length) of an attention mask, or the padding mask's shape."""
    s, t, n, h = spec["S"], spec["T"], spec["N"], spec["nhead"]
    if name.endswith("key_padding_mask"):
        keys = t if name.startswith("tgt") else s
        return (n, keys)
    lq, lk = {"src_mask": (s, s), "tgt_mask": (t, t), "memory_mask": (t, s)}[name]
    return (n * h, lq, lk) if kind.endswith("3d") else (lq, lk)


def draw_mask(spec, name, kind, rng):
    shape = mask_shape(spec, name, kind)
    if name.endswith("key_padding_mask"):
        # Trailing padding on the batch rows after the first, never the first key.
        pad = np.zeros(shape, dtype=bool)
        for b in range(1, shape[0]):
            pad[b, shape[1] - b:] = True
        if kind == "bool":
            return pad
        return np.where(pad, -np.inf, rng.standard_normal(shape) * 0.5)
    if kind.startswith("bool"):
        blocked = rng.random(shape) < 0.3
        blocked[..., 0] = False  # every query keeps key 0
        return blocked
    return rng.standard_normal(shape)


def causal(lq, lk):
    return np.triu(np.ones((lq, lk), dtype=bool), k=1)


def with_causal(mask, lq):
    """The case's mask (or none) OR-ed with the causal mask, as PyTorch 1.13 needs it."""
    c = causal(lq, lq)
    if mask is None:
        return c
    if mask.dtype == bool:
        return mask | c
    return np.where(c, -np.inf, mask)


def make_case(spec, seed):
    import torch
    torch.set_default_dtype(torch.float64)
    rng = np.random.default_rng(seed)
    torch.manual_seed(seed)
    kwargs = dict(d_model=spec["d_model"], nhead=spec["nhead"],
                  dim_feedforward=spec["dim_feedforward"], dropout=0.0,
                  activation=spec["activation"], layer_norm_eps=spec["layer_norm_eps"],
                  batch_first=spec["batch_first"], norm_first=spec["norm_first"])
    encoder = spec["layer"] == "encoder"
    layer = (torch.nn.TransformerEncoderLayer if encoder else torch.nn.TransformerDecoderLayer)(
        **kwargs)
    layer.train()  # no fast path: the ordinary composition runs
    with torch.no_grad():
        for name, p in layer.named_parameters():
            if name.startswith("norm") and name.endswith("weight"):
                p.copy_(torch.from_numpy(1.0 + 0.3 * rng.standard_normal(p.shape)))
            else:
                p.copy_(torch.from_numpy(0.5 * rng.standard_normal(p.shape)))

    def seq(length):
        shape = (spec["N"], length, spec["d_model"]) if spec["batch_first"] else \
            (length, spec["N"], spec["d_model"])
        return rng.standard_normal(shape)

    arrays = {}
    if encoder:
        arrays["src"] = seq(spec["S"])
    else:
        arrays["tgt"] = seq(spec["T"])
        arrays["memory"] = seq(spec["S"])
    for name, kind in spec["masks"].items():
        arrays[name] = draw_mask(spec, name, kind, rng)

    inputs = {k: torch.tensor(arrays[k], requires_grad=True)
              for k in (("src",) if encoder else ("tgt", "memory"))}
    masks = {k: torch.from_numpy(v) for k, v in arrays.items() if k.endswith("mask")}
    if encoder:
        src_mask = arrays.get("src_mask")
        if spec["causal"]:
            src_mask = with_causal(src_mask, spec["S"])
        out = layer(inputs["src"],
                    src_mask=None if src_mask is None else torch.from_numpy(src_mask),
                    src_key_padding_mask=masks.get("src_key_padding_mask"))
    else:
        tgt_mask = arrays.get("tgt_mask")
        if spec["causal"]:
            tgt_mask = with_causal(tgt_mask, spec["T"])
        out = layer(inputs["tgt"], inputs["memory"],
                    tgt_mask=None if tgt_mask is None else torch.from_numpy(tgt_mask),
                    memory_mask=masks.get("memory_mask"),
                    tgt_key_padding_mask=masks.get("tgt_key_padding_mask"),
                    memory_key_padding_mask=masks.get("memory_key_padding_mask"))
    if not torch.isfinite(out).all():
        raise RuntimeError("non-finite output: a query row has all its keys masked")
    grad_output = rng.standard_normal(tuple(out.shape))
    arrays["grad_output"] = grad_output
    (out * torch.from_numpy(grad_output)).sum().backward()

    for name, p in layer.state_dict().items():
        arrays[name] = p.detach().numpy().copy()
    expected = {"output": out.detach().numpy()}
    for k, t in inputs.items():
        expected["grad_" + k] = t.grad.numpy()
    for name, p in layer.named_parameters():
        expected["grad_" + name] = p.grad.numpy()

    config = dict(layer=spec["layer"], d_model=spec["d_model"], nhead=spec["nhead"],
                  dim_feedforward=spec["dim_feedforward"], activation=spec["activation"],
                  layer_norm_eps=spec["layer_norm_eps"], batch_first=spec["batch_first"],
                  norm_first=spec["norm_first"], dtype="float64")
    config["is_causal" if encoder else "tgt_is_causal"] = spec["causal"]
    return config, arrays, expected


def write_case(case_dir, config, arrays, expected):
    if os.path.isdir(case_dir):
        shutil.rmtree(case_dir)
    os.makedirs(os.path.join(case_dir, "expected"))
    with open(os.path.join(case_dir, "config.json"), "w") as f:
        json.dump(config, f, indent=1)
        f.write("\n")
    for name, a in arrays.items():
        np.save(os.path.join(case_dir, name + ".npy"), np.ascontiguousarray(a))
    for name, a in expected.items():
        np.save(os.path.join(case_dir, "expected", name + ".npy"), np.ascontiguousarray(a))


def main(argv):
    here = os.path.dirname(os.path.abspath(__file__))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.path.join(here, "transformer_cases"))
    args = parser.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    for seed, (name, overrides) in enumerate(sorted(CASES.items())):
        spec = dict(BASE, **overrides)
        config, arrays, expected = make_case(spec, 1000 + seed)
        write_case(os.path.join(args.out, name), config, arrays, expected)
        print("wrote", name)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
