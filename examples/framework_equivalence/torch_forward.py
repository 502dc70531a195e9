"""Runs torch.nn.MultiheadAttention (batch_first) on weights and an input that
framework_equivalence wrote, and saves its output, so the C++ example can compare headgrad
with PyTorch on the same numbers.

usage: /usr/bin/python3 torch_forward.py DIR
DIR holds config.json (embed_dim, num_heads, dtype), query.npy and the PyTorch
state_dict entries as .npy files; torch_output.npy is written there.
"""
import json
import os
import sys

import numpy as np
import torch


def main(folder):
    with open(os.path.join(folder, "config.json")) as f:
        config = json.load(f)
    dtype = torch.float64 if config["dtype"] == "float64" else torch.float32
    mha = torch.nn.MultiheadAttention(config["embed_dim"], config["num_heads"],
                                      batch_first=True, dtype=dtype)
    state = {}
    for name in mha.state_dict():
        state[name] = torch.from_numpy(np.load(os.path.join(folder, name + ".npy")))
    mha.load_state_dict(state)
    x = torch.from_numpy(np.load(os.path.join(folder, "query.npy")))
    with torch.no_grad():
        out, _ = mha(x, x, x, need_weights=False)
    np.save(os.path.join(folder, "torch_output.npy"), out.numpy())


if __name__ == "__main__":
    main(sys.argv[1])
