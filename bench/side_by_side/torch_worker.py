"""The PyTorch half of the side-by-side runner (see run.py).

Started by run.py with OMP/OpenBLAS/MKL thread counts pinned in its environment. Reads one
JSON configuration per line on stdin and answers one JSON line with the per-iteration
times in milliseconds; with --once CONFIG_JSON it runs a single configuration and exits
(for peak-memory measurements in a fresh process). The configurations mirror bench_case
(bench/side_by_side/case.cpp) exactly: same shapes, float32, the same masks.
"""
import json
import sys
import time

import torch
import torch.nn as nn


def time_iterations(warmup, iterations, fn):
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(iterations):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1e3)
    return times


def mha_case(c):
    b, l, e, h = c["batch"], c["len"], c["embed"], c["heads"]
    torch.manual_seed(1)
    mha = nn.MultiheadAttention(e, h, batch_first=True)
    x = torch.randn(b, l, e)
    kwargs = {"need_weights": False}
    if c["mask"] == "causal":
        kwargs["attn_mask"] = torch.ones(l, l, dtype=torch.bool).triu(1)
    elif c["mask"] == "padding":
        pad = torch.zeros(b, l, dtype=torch.bool)
        pad[0::2, l - l // 4:] = True
        kwargs["key_padding_mask"] = pad
    if c["mode"] == "train":
        x.requires_grad_(True)

        def step():
            mha.zero_grad(set_to_none=True)
            x.grad = None
            mha(x, x, x, **kwargs)[0].sum().backward()
    else:
        mha.eval()  # PyTorch's inference path

        def step():
            with torch.no_grad():
                mha(x, x, x, **kwargs)
    return time_iterations(c["warmup"], c["iterations"], step)


class ToyGPT(nn.Module):
    def __init__(self, vocab=64, context=64, d=128, heads=4, layers=2):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(context, d)
        layer = nn.TransformerEncoderLayer(d, heads, 4 * d, 0.0, activation="gelu",
                                           batch_first=True, norm_first=True)
        self.layers = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)
        self.register_buffer("causal", torch.ones(context, context, dtype=torch.bool).triu(1))

    def forward(self, tokens):
        t = tokens.shape[1]
        x = self.tok(tokens) + self.pos(torch.arange(t))
        x = self.layers(x, mask=self.causal[:t, :t])
        return self.head(self.norm(x))


def gpt_case(c):
    vocab, context, batch = 64, 64, 32
    torch.manual_seed(1)
    model = ToyGPT(vocab, context)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    tokens = torch.randint(0, vocab, (batch, context))
    targets = torch.randint(0, vocab, (batch * context,))

    def step():
        logits = model(tokens)
        loss = nn.functional.cross_entropy(logits.reshape(-1, vocab), targets)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    return time_iterations(c["warmup"], c["iterations"], step)


def sgemm_case(c):
    n = c["size"]
    a, b = torch.randn(n, n), torch.randn(n, n)
    return time_iterations(c["warmup"], c["iterations"], lambda: torch.mm(a, b))


def peak_rss_kb():
    """VmHWM of this process image (ru_maxrss would include the pre-exec fork of the parent)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return -1


def run(c):
    fn = {"mha": mha_case, "gpt": gpt_case, "sgemm": sgemm_case}[c["case"]]
    times = fn(c)
    rss = peak_rss_kb()
    return {"case": c["case"], "times_ms": times, "peak_rss_kb": rss}


def main():
    torch.set_num_threads(int(sys.argv[1]))
    if len(sys.argv) > 3 and sys.argv[2] == "--once":
        print(json.dumps(run(json.loads(sys.argv[3]))), flush=True)
        return
    for line in sys.stdin:
        print(json.dumps(run(json.loads(line))), flush=True)


if __name__ == "__main__":
    main()
