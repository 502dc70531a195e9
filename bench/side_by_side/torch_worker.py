"""The PyTorch half of the side-by-side runner (see run.py).

Started by run.py with OMP/OpenBLAS/MKL thread counts pinned in its environment. Reads one
JSON configuration per line on stdin and answers one JSON line with the per-iteration
times in milliseconds; with --once CONFIG_JSON it runs a single configuration and exits
(for peak-memory measurements in a fresh process). The configurations mirror bench_case
(bench/side_by_side/case.cpp) exactly: same shapes, float32, the same masks.

GPU mode (run.py --device cuda): a configuration with "device": "cuda:N" runs there, eager
(no torch.compile), with torch.cuda.synchronize() before every timer read; "tf32" sets
torch.backends.cuda.matmul.allow_tf32 and torch.backends.cudnn.allow_tf32 (both False
otherwise). The answer then also holds the GPU's name and torch.cuda.max_memory_allocated
of the configuration. {"case": "info", "device": ...} answers the versions and the GPU's
name and multiprocessor count. Only APIs that PyTorch 1.13 and 2.x both have are used.

{"case": "op", "op": "add" | "matmul", "shape": [...], "calls": N} times one small op
(a + b, or torch.matmul(a, b)) on float32 tensors, N calls in a Python loop per timed
iteration (run.py's per-call overhead rows; headgrad_py_worker.py does the same with
headgrad); the answer's "calls" turns each iteration's time into a per-call time.
"""
import json
import sys
import time

import torch
import torch.nn as nn


def device_of(c):
    return torch.device(c.get("device", "cpu"))


def synchronizer(device):
    """A function that waits for the device's queued work (nothing to wait for on the CPU)."""
    if device.type == "cuda":
        return lambda: torch.cuda.synchronize(device)
    return lambda: None


def time_iterations(warmup, iterations, fn, sync=lambda: None):
    for _ in range(warmup):
        fn()
    sync()
    times = []
    for _ in range(iterations):
        start = time.perf_counter()
        fn()
        sync()
        times.append((time.perf_counter() - start) * 1e3)
    return times


def mha_case(c):
    b, l, e, h = c["batch"], c["len"], c["embed"], c["heads"]
    device = device_of(c)
    torch.manual_seed(1)
    mha = nn.MultiheadAttention(e, h, batch_first=True).to(device)
    x = torch.randn(b, l, e).to(device)
    kwargs = {"need_weights": False}
    if c["mask"] == "causal":
        kwargs["attn_mask"] = torch.ones(l, l, dtype=torch.bool).triu(1).to(device)
    elif c["mask"] == "padding":
        pad = torch.zeros(b, l, dtype=torch.bool)
        pad[0::2, l - l // 4:] = True
        kwargs["key_padding_mask"] = pad.to(device)
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
    return time_iterations(c["warmup"], c["iterations"], step, synchronizer(device))


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
        x = self.tok(tokens) + self.pos(torch.arange(t, device=tokens.device))
        x = self.layers(x, mask=self.causal[:t, :t])
        return self.head(self.norm(x))


def gpt_case(c):
    # The toy GPT unless the configuration names another size (run.py's GPU mode and its
    # study rows); "clip" > 0 clips the gradient norm before the step, as the study does.
    vocab, context, batch = c.get("vocab", 64), c.get("context", 64), c.get("batch", 32)
    d, heads, layers = c.get("d_model", 128), c.get("heads", 4), c.get("layers", 2)
    device = device_of(c)
    torch.manual_seed(1)
    model = ToyGPT(vocab, context, d, heads, layers).to(device)
    # PyTorch's default AdamW (2.x picks its multi-tensor "foreach" version on a GPU).
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=c.get("weight_decay", 0.01))
    clip = c.get("clip", 0.0)
    tokens = torch.randint(0, vocab, (batch, context)).to(device)
    targets = torch.randint(0, vocab, (batch * context,)).to(device)

    def step():
        logits = model(tokens)
        loss = nn.functional.cross_entropy(logits.reshape(-1, vocab), targets)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        if clip > 0:
            nn.utils.clip_grad_norm_(model.parameters(), clip)
        opt.step()
    return time_iterations(c["warmup"], c["iterations"], step, synchronizer(device))


class EnsembleMemberGPT(ToyGPT):
    """ToyGPT whose causal mask is made in forward, not read from its buffer: under vmap the
    stacked buffer is a batched tensor, and PyTorch 2.x's nn.TransformerEncoder inspects the
    mask's values (_detect_is_causal_mask), which vmap refuses. The same mask, the same
    arithmetic; PyTorch 1.13 takes the same path either way."""

    def forward(self, tokens):
        t = tokens.shape[1]
        x = self.tok(tokens) + self.pos(torch.arange(t, device=tokens.device))
        causal = torch.ones(t, t, dtype=torch.bool, device=tokens.device).triu(1)
        x = self.layers(x, mask=causal)
        return self.head(self.norm(x))


def ensemble_step(c):
    """The state and step function of ensemble_case (also used alone to check that the loss
    falls): returns step, which runs one training step and returns the members' losses (K,)."""
    # PyTorch 1.13's functorch (torch.func in 2.x); imported here so the other cases never
    # need it.
    import functorch

    vocab, context, batch = c["vocab"], c["context"], c["batch"]
    d, heads, layers = c["d_model"], c["heads"], c["layers"]
    members, clip, weight_decay = c["members"], c.get("clip", 0.0), c.get("weight_decay", 0.01)
    device = device_of(c)
    models = []
    for k in range(members):
        torch.manual_seed(1 + k)
        models.append(EnsembleMemberGPT(vocab, context, d, heads, layers).to(device))
    # Stacks every parameter and buffer (the unused `causal` buffer too) on a leading K axis;
    # fmodel(params, buffers, tokens) is one member's functional forward. The models stay
    # in training mode, so neither nn.TransformerEncoder's nor nn.MultiheadAttention's
    # inference fast path is taken (both check .training); vmap goes through the same
    # Python forward as gpt_case (norm_first, gelu, dropout 0) with no changes to the model.
    fmodel, params, buffers = functorch.combine_state_for_ensemble(models)
    params = tuple(p.detach() for p in params)  # functorch's grad makes its own leaves
    del models
    torch.manual_seed(1)
    tokens = torch.randint(0, vocab, (members, batch, context)).to(device)
    targets = torch.randint(0, vocab, (members, batch * context)).to(device)

    def loss_fn(p, b, x, y):
        return nn.functional.cross_entropy(fmodel(p, b, x).reshape(-1, vocab), y)

    # randomness="different": the layers call dropout (p = 0 in training mode, an identity),
    # and vmap's default randomness="error" refuses any call to a random op.
    grad_and_loss = functorch.vmap(functorch.grad_and_value(loss_fn), randomness="different")

    # AdamW written out in torch ops on the stacked (K, ...) parameters, the arithmetic of
    # torch.optim.AdamW's single-tensor path (amsgrad off, PyTorch's defaults betas
    # (0.9, 0.999), eps 1e-8), with each member's lr as a (K, 1, ...) tensor: members
    # alternate 1e-3 and 3e-3 as bench_case's. torch.optim.AdamW cannot give the slices of
    # one stacked tensor different learning rates; giving it K x (parameters) views as
    # param groups would time a Python loop over ~K * 30 small tensors instead of PyTorch's
    # best way to run this update, so the stacked version is the fair one.
    beta1, beta2, eps = 0.9, 0.999, 1e-8
    lr = torch.tensor([1e-3 if k % 2 == 0 else 3e-3 for k in range(members)], device=device)
    lrs = [lr.reshape((members,) + (1,) * (p.dim() - 1)) for p in params]
    decay = [1 - l * weight_decay for l in lrs]  # p *= 1 - lr * weight_decay
    exp_avg = [torch.zeros_like(p) for p in params]
    exp_avg_sq = [torch.zeros_like(p) for p in params]
    state = {"step": 0}

    def step():
        grads, loss = grad_and_loss(params, buffers, tokens, targets)
        if clip > 0:
            # Each member's total 2-norm over all its gradients (clip_grad_norm_'s norm of
            # the per-tensor norms), clip_grad_norm_'s scale min(1, clip / (norm + 1e-6)).
            norms = torch.stack([g.reshape(members, -1).norm(2, dim=1) for g in grads], 1)
            scale = (clip / (norms.norm(2, dim=1) + 1e-6)).clamp(max=1.0)
            for g in grads:
                g.mul_(scale.reshape((members,) + (1,) * (g.dim() - 1)))
        state["step"] += 1
        bias_correction1 = 1 - beta1 ** state["step"]
        bias_correction2_sqrt = (1 - beta2 ** state["step"]) ** 0.5
        for p, g, m, v, l, dec in zip(params, grads, exp_avg, exp_avg_sq, lrs, decay):
            p.mul_(dec)
            m.mul_(beta1).add_(g, alpha=1 - beta1)
            v.mul_(beta2).addcmul_(g, g, value=1 - beta2)
            denom = (v.sqrt() / bias_correction2_sqrt).add_(eps)
            p.addcmul_(m / denom, l, value=-1 / bias_correction1)  # p -= lr / bc1 * m / denom
        return loss

    return step


def ensemble_case(c):
    """bench_case --case ensemble on the PyTorch side: K ToyGPTs as one functorch ensemble
    (vmap of grad_and_value over combine_state_for_ensemble), per-member clipping, AdamW
    with per-member learning rates on the stacked parameters."""
    step = ensemble_step(c)
    return time_iterations(c["warmup"], c["iterations"], step, synchronizer(device_of(c)))


class HookedGPT(nn.Module):
    """The GPT of gpt_case with its attention written out and an identity module on each
    layer's per-head z (N, H, T, d), as TransformerLens's HookPoint: forward hooks on it read
    and replace z (nn.MultiheadAttention exposes no per-head tensor)."""

    def __init__(self, vocab, context, d, heads, layers):
        super().__init__()
        self.heads = heads
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(context, d)
        self.blocks = nn.ModuleList()
        for _ in range(layers):
            block = nn.Module()
            block.ln1, block.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
            block.qkv, block.out = nn.Linear(d, 3 * d), nn.Linear(d, d)
            block.hook_z = nn.Identity()
            block.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
            self.blocks.append(block)
        self.norm = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)
        self.register_buffer("causal", torch.ones(context, context, dtype=torch.bool).triu(1))

    def forward(self, tokens):
        n, t = tokens.shape
        x = self.tok(tokens) + self.pos(torch.arange(t, device=tokens.device))
        for b in self.blocks:
            q, k, v = b.qkv(b.ln1(x)).view(n, t, 3, self.heads, -1).permute(2, 0, 3, 1, 4)
            scores = (q / q.shape[-1] ** 0.5) @ k.transpose(-2, -1)
            z = b.hook_z(torch.softmax(scores.masked_fill(self.causal[:t, :t], float("-inf")),
                                       -1) @ v)
            x = x + b.out(z.transpose(1, 2).reshape(n, t, -1))
            x = x + b.mlp(b.ln2(x))
        return self.head(self.norm(x))


def patching_case(c):
    """bench_case --case patching on the PyTorch side: the same sweep with forward hooks."""
    vocab, context, batch = c["vocab"], c["context"], c["batch"]
    d, heads, layers = c["d_model"], c["heads"], c["layers"]
    device = device_of(c)
    torch.manual_seed(1)
    model = HookedGPT(vocab, context, d, heads, layers).to(device).eval()
    clean = torch.randint(0, vocab, (batch, context)).to(device)
    corrupted = clean.clone()
    corrupted[:, context - 2] = (corrupted[:, context - 2] + 1) % vocab
    rows = torch.arange(batch, device=device)

    def metric(logits):
        return (logits[rows, context - 1, 3] - logits[rows, context - 1, 7]).mean().item()

    def sweep():
        with torch.no_grad():
            cache = {}
            handles = [b.hook_z.register_forward_hook(
                lambda m, i, o, l=l: cache.__setitem__(l, o)) for l, b in enumerate(model.blocks)]
            m_clean = metric(model(clean))
            for h in handles:
                h.remove()
            m_corrupted = metric(model(corrupted))
            grid = torch.empty(layers, heads, context)
            for l, b in enumerate(model.blocks):
                for h in range(heads):
                    for t in range(context):
                        def patch(m, i, o, l=l, h=h, t=t):
                            o = o.clone()
                            o[:, h, t] = cache[l][:, h, t]
                            return o
                        handle = b.hook_z.register_forward_hook(patch)
                        grid[l, h, t] = (metric(model(corrupted)) - m_corrupted) / (
                            m_clean - m_corrupted)
                        handle.remove()
        return grid
    return time_iterations(c["warmup"], c["iterations"], sweep, synchronizer(device))


def sgemm_case(c):
    n = c["size"]
    device = device_of(c)
    a, b = torch.randn(n, n).to(device), torch.randn(n, n).to(device)
    return time_iterations(c["warmup"], c["iterations"], lambda: torch.mm(a, b),
                           synchronizer(device))


def op_case(c):
    """One small op called c["calls"] times from a Python loop per timed iteration."""
    device = device_of(c)
    torch.manual_seed(1)
    a, b = torch.randn(*c["shape"]).to(device), torch.randn(*c["shape"]).to(device)
    if c.get("requires_grad"):  # each call also records a graph node
        a.requires_grad_(True)
        b.requires_grad_(True)
    calls = range(c["calls"])
    index = slice(2, 10)
    ops = {"add": lambda: a + b, "mul": lambda: a * b, "matmul": lambda: torch.matmul(a, b),
           "softmax": lambda: torch.softmax(a, -1), "index": lambda: a[index]}
    if c["op"] not in ops:
        raise ValueError("op must be one of %s, got %s" % (sorted(ops), c["op"]))
    op = ops[c["op"]]

    def loop():
        for _ in calls:
            op()
    return time_iterations(c["warmup"], c["iterations"], loop, synchronizer(device))


def peak_rss_kb():
    """VmHWM of this process image (ru_maxrss would include the pre-exec fork of the parent)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return -1


def info(c):
    device = device_of(c)
    out = {"case": "info", "torch_version": torch.__version__,
           "cuda_available": torch.cuda.is_available(), "cuda_version": torch.version.cuda}
    if device.type == "cuda" and torch.cuda.is_available():
        props = torch.cuda.get_device_properties(device)
        out.update(device_name=props.name, multiprocessors=props.multi_processor_count,
                   total_memory_bytes=props.total_memory,
                   capability="%d.%d" % (props.major, props.minor))
    return out


def run(c):
    if c["case"] == "info":
        return info(c)
    device = device_of(c)
    if device.type == "cuda":
        # Both flags exist in PyTorch 1.13 and 2.x; set explicitly, whatever the defaults.
        torch.backends.cuda.matmul.allow_tf32 = bool(c.get("tf32", False))
        torch.backends.cudnn.allow_tf32 = bool(c.get("tf32", False))
        torch.zeros(1, device=device)  # initializes CUDA (a --once run starts cold)
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats(device)
    fn = {"mha": mha_case, "gpt": gpt_case, "ensemble": ensemble_case,
          "patching": patching_case, "sgemm": sgemm_case, "op": op_case}[c["case"]]
    times = fn(c)
    out = {"case": c["case"], "times_ms": times, "peak_rss_kb": peak_rss_kb()}
    if c["case"] == "op":
        out["calls"] = c["calls"]
    if device.type == "cuda":
        out["device"] = str(device)
        out["device_name"] = torch.cuda.get_device_name(device)
        out["peak_allocated_bytes"] = torch.cuda.max_memory_allocated(device)
    return out


def main():
    torch.set_num_threads(int(sys.argv[1]))
    if len(sys.argv) > 3 and sys.argv[2] == "--once":
        print(json.dumps(run(json.loads(sys.argv[3]))), flush=True)
        return
    for line in sys.stdin:
        print(json.dumps(run(json.loads(line))), flush=True)


if __name__ == "__main__":
    main()
