"""The headgrad-from-Python side of the side-by-side runner (see run.py): headgrad driven by
a Python loop through its pybind11 bindings (the `headgrad` package, taken from PYTHONPATH;
run.py sets PYTHONPATH to <build>/python of the --binary's build folder).

Mirrors torch_worker.py's protocol and timing: argv[1] is the thread count
(headgrad.set_num_threads; run.py also pins OMP/OpenBLAS/MKL_NUM_THREADS), then either
--once CONFIG_JSON (one configuration, then exit: how run.py starts it, a fresh process per
run) or one JSON configuration per line on stdin. Each answer is one JSON line with the
per-iteration times in milliseconds (time.perf_counter around each timed iteration, after
`warmup` untimed ones) and the process's peak RSS. Cases:
  gpt   the training step of bench_case --case gpt (case.cpp's gpt_case) with the same
        model and data: nn.GPT(vocab, context, d_model, heads, layers) (pre-norm, GELU,
        feed-forward 4 d_model, no dropout) initialised from Generator(1), then tokens
        (batch, context) and targets (batch * context,) drawn with randint from that
        generator in that order, AdamW(lr 1e-3, weight decay 0.01); each step is
        model(tokens), nn.functional.cross_entropy(logits.reshape(-1, vocab), targets),
        opt.zero_grad(), loss.backward(), optim.clip_grad_norm_(params, clip) when clip > 0,
        opt.step() -- the C++ loop statement by statement, called from Python.
  op    one small op called `calls` times in a Python loop per timed iteration: "add"
        (a + b) or "matmul" (headgrad.matmul(a, b)) on float32 tensors of `shape`; the
        answer's "calls" lets run.py turn each iteration's time into a per-call time.
  info  the package's version and where it was imported from (run.py's importability check).
"""
import json
import sys
import time

import headgrad as hg


def time_iterations(warmup, iterations, fn):
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(iterations):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1e3)
    return times


def gpt_case(c):
    vocab, context, batch = c.get("vocab", 64), c.get("context", 64), c.get("batch", 32)
    d, heads, layers = c.get("d_model", 128), c.get("heads", 4), c.get("layers", 2)
    gen = hg.Generator(1)
    model = hg.nn.GPT(vocab, context, d_model=d, nhead=heads, num_layers=layers, generator=gen)
    params = model.parameters()
    opt = hg.optim.AdamW(params, lr=1e-3, weight_decay=c.get("weight_decay", 0.01))
    clip = c.get("clip", 0.0)
    tokens = hg.randint(0, vocab, (batch, context), generator=gen, dtype=hg.int64)
    targets = hg.randint(0, vocab, (batch * context,), generator=gen, dtype=hg.int64)
    cross_entropy = hg.nn.functional.cross_entropy
    clip_grad_norm_ = hg.optim.clip_grad_norm_

    def step():
        logits = model(tokens)
        loss = cross_entropy(logits.reshape(-1, vocab), targets)
        opt.zero_grad()
        loss.backward()
        if clip > 0:
            clip_grad_norm_(params, clip)
        opt.step()
    return time_iterations(c["warmup"], c["iterations"], step)


def op_case(c):
    gen = hg.Generator(1)
    a = hg.randn(*c["shape"], generator=gen, dtype=hg.float32)
    b = hg.randn(*c["shape"], generator=gen, dtype=hg.float32)
    if c.get("requires_grad"):  # each call also records a graph node
        a.requires_grad_(True)
        b.requires_grad_(True)
    calls = range(c["calls"])
    index = slice(2, 10)
    ops = {"add": lambda: a + b, "mul": lambda: a * b, "matmul": lambda: hg.matmul(a, b),
           "softmax": lambda: hg.softmax(a, -1), "index": lambda: a[index]}
    if c["op"] not in ops:
        raise ValueError("op must be one of %s, got %s" % (sorted(ops), c["op"]))
    op = ops[c["op"]]

    def loop():
        for _ in calls:
            op()
    return time_iterations(c["warmup"], c["iterations"], loop)


def peak_rss_kb():
    """VmHWM of this process image (as torch_worker.py and bench_case)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return -1


def run(c):
    if c["case"] == "info":
        return {"case": "info", "headgrad_version": hg.__version__, "path": hg.__file__,
                "threads": hg.get_num_threads()}
    fn = {"gpt": gpt_case, "op": op_case}[c["case"]]
    times = fn(c)
    out = {"case": c["case"], "times_ms": times, "peak_rss_kb": peak_rss_kb()}
    if c["case"] == "op":
        out["calls"] = c["calls"]
    return out


def main():
    hg.set_num_threads(int(sys.argv[1]))
    if len(sys.argv) > 3 and sys.argv[2] == "--once":
        print(json.dumps(run(json.loads(sys.argv[3]))), flush=True)
        return
    for line in sys.stdin:
        print(json.dumps(run(json.loads(line))), flush=True)


if __name__ == "__main__":
    main()
