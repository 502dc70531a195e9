"""Side-by-side benchmark: headgrad against PyTorch on this machine, in one invocation.

    /usr/bin/python3 bench/side_by_side/run.py [--rounds 3] [--threads 1,2] [--quick]
                                               [--python-only] [--binary B] [--pythonpath P]

(Debian's python3 with python3-torch; build bench_case first:
 cmake --build --preset release --target bench_case.) For every configuration and thread
count it alternates the two sides ROUNDS times (headgrad, PyTorch, headgrad, ...) so drift
hits both, each run timing `iterations` calls after a warm-up, and reports the median of
all timed calls per side. Every run of either side is a fresh process started for that
run alone, and this script waits for it blocked, so while one side is timed no other
process of the runner is alive (a persistent PyTorch worker's idle OpenMP threads used to
spin on the second core and slow headgrad's 2-thread runs). Threads are pinned: headgrad
calls set_num_threads(t) (OpenBLAS's pool; OPENBLAS_NUM_THREADS=t); PyTorch runs with
torch.set_num_threads(t), OMP_NUM_THREADS=OPENBLAS_NUM_THREADS=MKL_NUM_THREADS=t and
OMP_WAIT_POLICY=PASSIVE: Debian's PyTorch runs its elementwise kernels on a libgomp pool
and its GEMMs on OpenBLAS's own pool, and with libgomp's default active wait the two
pools fight over the cores (PyTorch's best 2-thread setting on this machine). The sgemm
reference (1024^3, single-threaded, both sides) is measured in the same run, and "of peak"
is against the faster side (headgrad's, where its products run on JIT kernels wider than
the OpenBLAS PyTorch uses: docs/performance.md, "GEMMs on JIT kernels"); GFLOP/s count
the model's matrix products only (2 m n k each, 3x forward for a training step). The
GEMMs of one toy GPT step alone on OpenBLAS (bench_case --case gpt_gemms) give the floor
no framework on this OpenBLAS can beat. The study rows time one training step of
heads_compare's own models (2 layers, E = 64, H = 1 and 8, its associative-recall batch: B = 32, T = 19,
vocab 22, AdamW with weight decay 0.01 and gradient clipping at 1.0). Peak memory is the
peak resident set (VmHWM) of a fresh process running 20 toy GPT training steps. Prints a
Markdown table, the targets (GPT <= 0.70 x PyTorch on 1 thread, >= 1.7x from the second
thread, peak RSS <= 70 MiB, the z patching sweep <= 0.5 x PyTorch's hooks on 1 thread) with
whether each is met, and writes the raw numbers to --json. The patching rows time a full
(layer, head, position) activation-patching sweep of the study's models on 128 prompts:
inspect::Patching against the same sweep with forward hooks on an identity module on z
(TransformerLens's HookPoint) in a GPT whose attention is written out in torch ops.

Python bindings (the `headgrad` package; headgrad_py_worker.py, a fresh process per run
like the other sides, taking the package from PYTHONPATH = <build>/python of the --binary's
build folder, e.g. build/dev/bench/bench_case -> build/dev/python, or --pythonpath; when the
package is not importable there the Python rows are skipped with a message). One thread
only, measured in the same run as the other sides and alternated with them round by round:
  python-driven study step: the study rows' training step (same model from Generator(1),
    same tokens and targets, AdamW weight decay 0.01, clipping at 1.0) driven by a Python
    loop -- model(tokens), nn.functional.cross_entropy, opt.zero_grad(), loss.backward(),
    optim.clip_grad_norm_, opt.step() -- against the study row's C++ step (bench_case
    --case gpt, the same runs as the table's 1-thread study rows) and PyTorch's
    (torch_worker.py's gpt case); H = 1 and 8 (--quick: H = 1). Targets: Python / C++
    <= 1.15 and Python / PyTorch <= 0.6.
  python op overhead: one small op called from Python in a loop (1000 calls per timed
    iteration; per call = the median iteration / 1000): `a + b` on two (16,) float32
    tensors and matmul on two (16, 16), through headgrad and through PyTorch, against the
    same op from C++: bench_case --case add --size 16 and --case sgemm --size 16 (one
    headgrad op per timed call, each timed alone with steady_clock, so its median includes
    two clock reads, some tens of ns).
--python-only runs just these rows (no sgemm, main table, GEMM floor or RSS) and writes
--json (default runs/side_by_side_python.json); use it with more --rounds for steadier
figures.

Ensemble rows (a separate table after the main one, always 1 thread; --json key
"ensemble"): one training step of K study models (H = 8) trained as one, bench_case --case
ensemble (nn::GPTEnsemble + optim::EnsembleAdamW) against PyTorch 1.13's functorch
ensemble (torch_worker.py's ensemble case: combine_state_for_ensemble of K ToyGPTs,
vmap(grad_and_value(loss)), per-member clipping at 1.0 and AdamW with per-member
learning rates written out on the stacked parameters). Members alternate lr 1e-3 and
3e-3, each has its own tokens and targets. K = 1, 10, 40 (--quick: K = 10), alternated
round by round as the main rows; throughput = K model-steps per step, the ratio is
headgrad's throughput / PyTorch's; the study GPT's 1-thread H = 8 row is the single-model
reference, and the peak RSS of both sides is printed for K = 40. Target: K = 10, headgrad
throughput >= 2x PyTorch vmap's. --ensemble-only runs just these rows plus the H = 8
study row for the reference (no sgemm, other rows, GEMM floor, RSS or Python rows) and
writes --json (default runs/side_by_side_ensemble.json).

GPU mode: `run.py --device cuda` (or cuda:N; add --tf32 to allow TF32 tensor cores on both
sides) runs bench_case --device cuda:N and torch_worker.py on the same GPU, each
synchronizing the device before every timer read (cuda_synchronize,
torch.cuda.synchronize). Configurations: MHA forward and forward + backward at the CPU
shapes and at (32, 256, 512, 8) and (16, 1024, 1024, 16), the toy GPT training step and a
bigger GPT (d_model 512, 8 heads, 6 layers, context 256, batch 64). It prints the GPU's
name, a Markdown table of medians, the ratio headgrad / PyTorch, the TFLOP/s of each side
from the counted FLOPs and their fraction of the GPU's FP32 peak (and of its TF32 peak
with --tf32), an sgemm reference on the GPU, and the peak GPU memory of the bigger GPT
(headgrad's cuda_memory_stats against torch.cuda.max_memory_allocated). PyTorch runs
eagerly (no torch.compile). A configuration that fails on one side is reported and the
run goes on; the exit status is then 1. Raw numbers go to --json (default
runs/side_by_side_cuda.json, or ..._cuda_tf32.json).
"""
import argparse
import importlib.util
import json
import os
import select
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

MHA_SHAPES = [(64, 16, 64, 4), (32, 64, 256, 8), (8, 128, 512, 8)]
GPT = dict(vocab=64, context=64, d=128, layers=2, batch=32)
# heads_compare's default models: associative recall with 8 pairs (T = 2 * 8 + 3, vocab
# 2 * 10 + 2), batch 32, E = 64, 2 layers, the fixed-width arm's extremes H = 1 and 8.
STUDY_GPT = dict(vocab=22, context=19, d_model=64, layers=2, batch=32, clip=1.0)
STUDY_HEADS = (1, 8)
# A full activation-patching sweep of those models (inspect::Patching against forward hooks
# on an identity module on z, TransformerLens's way): 128 prompts, every (layer, head,
# query position) of z, one patched forward each, plus the clean and corrupted runs.
PATCHING = dict(case="patching", vocab=22, context=19, d_model=64, layers=2, batch=128)

# The targets the runner checks (docs/performance.md).
GPT_RATIO_TARGET = 0.70     # toy GPT step, headgrad / PyTorch, 1 thread
THREAD_SPEEDUP_TARGET = 1.7  # headgrad 1 thread / 2 threads: toy GPT, MHA (8,128,512,8) train
PEAK_RSS_TARGET_MIB = 70.0   # 20 toy GPT steps in a fresh process
PATCHING_RATIO_TARGET = 0.5  # the z patching sweep, headgrad / PyTorch hooks, 1 thread
PY_CXX_TARGET = 1.15         # study step driven from Python / the same step in C++, 1 thread
PY_TORCH_TARGET = 0.6        # study step driven from Python / PyTorch's, 1 thread
ENSEMBLE_THROUGHPUT_TARGET = 2.0  # study ensemble, K = ENSEMBLE_TARGET_K: headgrad model-steps/s
ENSEMBLE_TARGET_K = 10            # over PyTorch vmap's, 1 thread
OP_CXX_TARGET_US = {"add": 0.5, "add_graph": 0.8}  # one (16,) add from C++, per call
OP_PY_TORCH_TARGET = 1.0     # each small op from Python / the same op in PyTorch from Python

# The ensemble rows: K study models (H = 8, the slowest study model) trained as one, one
# thread; (K, timed iterations, warm-up) per row (--quick: K = 10 only).
ENSEMBLE_HEADS = 8
ENSEMBLE_MEMBERS = [(1, 20, 2), (10, 5, 2), (40, 2, 1)]
ENSEMBLE_RSS_K = 40  # the row whose peak RSS is printed

# The per-call overhead rows: one small op called from Python (1000 calls a timed iteration),
# and the bench_case configuration timing the same op from C++ where one exists.
PY_OPS = [
    dict(case="op", op="add", shape=[16], calls=1000, warmup=3, iterations=30,
         name="a + b, (16,) float32", cxx=dict(case="add", size=16, warmup=1000, iterations=5000)),
    dict(case="op", op="add", shape=[16], calls=1000, warmup=3, iterations=30, requires_grad=True,
         name="a + b, (16,), recording a node",
         cxx=dict(case="add_graph", size=16, warmup=1000, iterations=5000)),
    dict(case="op", op="mul", shape=[16], calls=1000, warmup=3, iterations=30,
         name="a * b, (16,) float32", cxx=None),
    dict(case="op", op="matmul", shape=[16, 16], calls=1000, warmup=3, iterations=30,
         name="matmul, (16, 16) @ (16, 16) float32",
         cxx=dict(case="sgemm", size=16, warmup=1000, iterations=5000)),
    dict(case="op", op="softmax", shape=[16], calls=1000, warmup=3, iterations=30,
         name="softmax(a, -1), (16,) float32", cxx=None),
    dict(case="op", op="index", shape=[16], calls=1000, warmup=3, iterations=30,
         name="a[2:10], (16,) float32", cxx=None),
]

# GPU mode: the CPU shapes, then larger ones.
GPU_MHA_SHAPES = MHA_SHAPES + [(32, 256, 512, 8), (16, 1024, 1024, 16)]
TOY_GPT = dict(vocab=64, context=64, d_model=128, heads=4, layers=2, batch=32)
BIG_GPT = dict(vocab=64, context=256, d_model=512, heads=8, layers=6, batch=64)

# Dense (no sparsity) datasheet peaks in TFLOP/s: (FP32 on CUDA cores, TF32 on tensor
# cores), matched against the GPU's name in this order. --fp32-peak / --tf32-peak override.
GPU_PEAKS = [
    ("H200 NVL", 60.0, 417.5), ("H200", 67.0, 494.5),
    ("H100 NVL", 60.0, 417.5), ("H100 PCIe", 51.2, 378.0), ("H100", 67.0, 494.5),
    ("A100", 19.5, 156.0), ("L40S", 91.6, 183.0), ("A10G", 31.2, 62.5), ("L4", 30.3, 60.0),
]


def pinned_env(threads):
    env = dict(os.environ)
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env[var] = str(threads)
    return env


def torch_env(threads):
    """PyTorch's environment on the CPU: pinned, and its OpenMP pool sleeping when idle."""
    env = pinned_env(threads)
    env["OMP_WAIT_POLICY"] = "PASSIVE"
    return env


def mha_flops(b, l, e, mode):
    forward = 8 * b * l * e * e + 4 * b * l * l * e  # projections, q k^T, weights v
    return forward * (3 if mode == "train" else 1)


def gpt_flops():
    b, t, d, v = GPT["batch"], GPT["context"], GPT["d"], GPT["vocab"]
    per_layer = 24 * b * t * d * d + 4 * b * t * t * d  # attention + feed-forward (4d)
    return 3 * (GPT["layers"] * per_layer + 2 * b * t * d * v)


def gpt_flops_of(g):
    """The matrix-product FLOPs of one training step of a GPT of size g (as gpt_flops)."""
    b, t, d, v = g["batch"], g["context"], g["d_model"], g["vocab"]
    per_layer = 24 * b * t * d * d + 4 * b * t * t * d
    return 3 * (g["layers"] * per_layer + 2 * b * t * d * v)


def configurations(quick):
    configs = []
    for b, l, e, h in MHA_SHAPES[:1] if quick else MHA_SHAPES:
        for mask in ("none", "causal", "padding"):
            for mode in ("forward", "train"):
                configs.append(dict(case="mha", batch=b, len=l, embed=e, heads=h, mask=mask,
                                    mode=mode, flops=mha_flops(b, l, e, mode),
                                    name=f"MHA {mode} (B,L,E,H)=({b},{l},{e},{h}) mask={mask}"))
    configs.append(dict(case="gpt", flops=gpt_flops(), name="toy GPT training step"))
    for heads in STUDY_HEADS:
        # python: also driven from Python through the bindings (1 thread; --quick: H = 1).
        configs.append(dict(case="gpt", heads=heads, flops=gpt_flops_of(STUDY_GPT), iterations=50,
                            name=f"study GPT step (E=64, H={heads}, L=2, B=32, T=19)",
                            python=heads in (STUDY_HEADS[:1] if quick else STUDY_HEADS),
                            **STUDY_GPT))
    for heads in STUDY_HEADS[:1] if quick else STUDY_HEADS:
        configs.append(dict(PATCHING, heads=heads, flops=0, warmup=1, iterations=2,
                            name=f"z patching sweep, every (layer, head, position) "
                                 f"(E=64, H={heads}, L=2, B=128, T=19)"))
    return configs


def ensemble_configurations(quick):
    return [dict(case="ensemble", members=k, heads=ENSEMBLE_HEADS, iterations=iterations,
                 warmup=warmup, name=f"study ensemble (E=64, H={ENSEMBLE_HEADS}, L=2, B=32, "
                                     f"T=19), K={k}", **STUDY_GPT)
            for k, iterations, warmup in ENSEMBLE_MEMBERS if not quick or k == ENSEMBLE_TARGET_K]


def study_reference_name():
    """The main table's study row of the ensemble's model (its single-model step)."""
    return f"study GPT step (E=64, H={ENSEMBLE_HEADS}, L=2, B=32, T=19)"


def torch_run(config, threads):
    """One run of the PyTorch side in a fresh process (nothing of it outlives the run)."""
    out = subprocess.run([sys.executable, os.path.join(HERE, "torch_worker.py"), str(threads),
                          "--once", json.dumps(config)], check=True, capture_output=True,
                         text=True, env=torch_env(threads))
    return json.loads(out.stdout)


def python_env(pythonpath, threads):
    """The Python worker's environment: pinned as bench_case, the package on PYTHONPATH."""
    env = pinned_env(threads)
    env["PYTHONPATH"] = pythonpath + (os.pathsep + env["PYTHONPATH"]
                                      if env.get("PYTHONPATH") else "")
    return env


def python_run(pythonpath, config, threads):
    """One run of headgrad driven from Python (headgrad_py_worker.py) in a fresh process."""
    out = subprocess.run([sys.executable, os.path.join(HERE, "headgrad_py_worker.py"),
                          str(threads), "--once", json.dumps(config)], check=True,
                         capture_output=True, text=True, env=python_env(pythonpath, threads))
    return json.loads(out.stdout)


def python_check(pythonpath):
    """(info, None) when the worker can import headgrad from pythonpath, else (None, why)."""
    if not os.path.isdir(pythonpath):
        return None, f"no {pythonpath}"
    try:
        return python_run(pythonpath, dict(case="info"), 1), None
    except subprocess.CalledProcessError as e:
        lines = (e.stderr or e.stdout or "no output").strip().splitlines()
        return None, lines[-1][:300] if lines else f"exit {e.returncode}"


def headgrad_run(binary, config, threads):
    args = [binary, "--case", config["case"], "--threads", str(threads),
            "--warmup", str(config["warmup"]), "--iterations", str(config["iterations"])]
    for key in ("batch", "len", "embed", "heads", "mask", "mode", "size", "vocab", "context",
                "d_model", "layers", "clip", "members"):
        if key in config:
            args += ["--" + key.replace("_", "-"), str(config[key])]
    out = subprocess.run(args, check=True, capture_output=True, text=True, env=pinned_env(threads))
    return json.loads(out.stdout)


# --- GPU mode -------------------------------------------------------------------------------

class SideFailed(Exception):
    """One side could not run a configuration (its message says why)."""


def gpu_headgrad_run(binary, config, timeout):
    args = [binary, "--case", config["case"], "--threads", "1", "--device", config["device"],
            "--warmup", str(config["warmup"]), "--iterations", str(config["iterations"])]
    if config.get("tf32"):
        args.append("--tf32")
    for key in ("batch", "len", "embed", "heads", "mask", "mode", "size", "vocab", "context",
                "d_model", "layers"):
        if key in config:
            args += ["--" + key.replace("_", "-"), str(config[key])]
    try:
        out = subprocess.run(args, capture_output=True, text=True, env=pinned_env(1),
                             timeout=timeout)
    except subprocess.TimeoutExpired:
        raise SideFailed(f"headgrad: no answer within {timeout} s")
    if out.returncode != 0:
        lines = (out.stderr.strip() or out.stdout.strip() or "no output").splitlines()
        raise SideFailed(f"headgrad: exit {out.returncode}: {lines[-1][:300]}")
    try:
        return json.loads(out.stdout)
    except ValueError:
        raise SideFailed("headgrad: unreadable output: " + out.stdout[:200])


class GpuTorchWorker:
    """torch_worker.py on the GPU, restarted when it dies; answers time out."""

    def __init__(self, timeout):
        self.timeout = timeout
        self.proc = None

    def start(self):
        # stderr to a file: a pipe nobody reads would block a worker that warns a lot.
        self.stderr = tempfile.TemporaryFile(mode="w+")
        self.proc = subprocess.Popen(
            [sys.executable, os.path.join(HERE, "torch_worker.py"), "1"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.stderr, text=True,
            env=pinned_env(1))

    def run(self, config):
        if self.proc is None or self.proc.poll() is not None:
            self.start()
        try:
            self.proc.stdin.write(json.dumps(config) + "\n")
            self.proc.stdin.flush()
            ready, _, _ = select.select([self.proc.stdout], [], [], self.timeout)
            line = self.proc.stdout.readline() if ready else ""
        except (BrokenPipeError, OSError):
            ready, line = True, ""
        if not line:
            why = "died" if ready else "gave no answer within %d s" % self.timeout
            self.proc.kill()
            self.proc.wait()
            self.stderr.seek(0)
            err = self.stderr.read().strip().splitlines()
            self.proc = None
            raise SideFailed(f"PyTorch: the worker {why}" + (": " + err[-1][:300] if err else ""))
        return json.loads(line)

    def close(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.stdin.close()
            self.proc.wait()


def gpu_peaks(name, args):
    fp32 = tf32 = None
    for key, f, t in GPU_PEAKS:
        if key.lower() in name.lower():
            fp32, tf32 = f, t
            break
    return args.fp32_peak or fp32, args.tf32_peak or tf32


def gpu_configurations(args, device):
    shapes = GPU_MHA_SHAPES[:1] if args.quick else GPU_MHA_SHAPES
    masks = args.masks.split(",")
    configs = []
    for b, l, e, h in shapes:
        for mask in masks:
            for mode in ("forward", "train"):
                configs.append(dict(case="mha", batch=b, len=l, embed=e, heads=h, mask=mask,
                                    mode=mode, flops=mha_flops(b, l, e, mode),
                                    name=f"MHA {mode} (B,L,E,H)=({b},{l},{e},{h}) mask={mask}"))
    gpts = [("toy GPT training step", TOY_GPT)]
    if not args.quick:
        gpts.append(("GPT d512 h8 L6 ctx256 b64 training step", BIG_GPT))
    for name, g in gpts:
        configs.append(dict(case="gpt", flops=gpt_flops_of(g), name=name, **g))
    for c in configs:
        c.update(device=device, tf32=args.tf32)
        c.setdefault("warmup", 5)
        c.setdefault("iterations", args.iterations or (20 if c["case"] == "mha" else 10))
    return configs


def pct(x):
    if x is None:
        return "n/a"
    return f"{100 * x:.1f}%" if 100 * x >= 10 else f"{100 * x:.2f}%"


def main_gpu(args):
    device = args.device if ":" in args.device else args.device + ":0"
    timeout = args.timeout
    worker = GpuTorchWorker(timeout)
    failures = 0
    try:
        info = worker.run(dict(case="info", device=device))
    except SideFailed as e:
        sys.exit(f"PyTorch cannot start on {device}: {e}")
    if not info.get("cuda_available"):
        print(f"SKIPPED: PyTorch {info.get('torch_version')} sees no CUDA GPU")
        sys.exit(77)
    name = info.get("device_name", "unknown GPU")
    try:
        hg_info = gpu_headgrad_run(args.binary, dict(case="sgemm", size=256, warmup=0,
                                                    iterations=1, device=device), timeout)
        hg_name = hg_info.get("device_name", "?")
    except SideFailed as e:
        hg_name = f"headgrad failed on {device}: {e}"
        failures += 1
    fp32_peak, tf32_peak = gpu_peaks(name, args)
    print(f"GPU: {name} ({device}; headgrad sees: {hg_name}); compute capability "
          f"{info.get('capability')}, {info.get('multiprocessors')} SMs; PyTorch "
          f"{info.get('torch_version')} (CUDA {info.get('cuda_version')}), eager")
    print(f"TF32: {'allowed on both sides' if args.tf32 else 'off on both sides (pure FP32)'}")
    print("peaks (dense, datasheet): FP32 " +
          (f"{fp32_peak:.1f} TFLOP/s" if fp32_peak else "unknown (pass --fp32-peak)") +
          ("; TF32 " + (f"{tf32_peak:.1f} TFLOP/s" if tf32_peak else "unknown (pass --tf32-peak)")
           if args.tf32 else ""))

    result = dict(device=device, gpu_name=name, headgrad_device_name=hg_name, torch=info,
                  tf32=args.tf32, fp32_peak_tflops=fp32_peak, tf32_peak_tflops=tf32_peak,
                  rows=[], failures=[])

    def measure_gpu(config):
        hg, pt, extra = [], [], {}
        for _ in range(args.rounds):
            r = gpu_headgrad_run(args.binary, config, timeout)
            hg += r["times_ms"]
            extra["headgrad_peak_allocated_bytes"] = r.get("peak_allocated_bytes")
            r = worker.run(config)
            pt += r["times_ms"]
            extra["torch_peak_allocated_bytes"] = r.get("peak_allocated_bytes")
        # The spread behind each median: n and the quartiles of every timed call.
        for side, times in (("headgrad", hg), ("torch", pt)):
            q = statistics.quantiles(times, n=4) if len(times) >= 2 else [times[0]] * 3
            extra.update({f"{side}_n": len(times), f"{side}_q1_ms": q[0], f"{side}_q3_ms": q[2]})
        return statistics.median(hg), statistics.median(pt), extra

    n = args.sgemm_size
    sgemm = dict(case="sgemm", size=n, warmup=3, iterations=10, device=device, tf32=args.tf32,
                 name=f"sgemm {n}^3")
    try:
        hg_ms, pt_ms, _ = measure_gpu(sgemm)
        flops = 2 * n ** 3
        result["sgemm"] = dict(size=n, headgrad_ms=hg_ms, torch_ms=pt_ms,
                               headgrad_tflops=flops / (hg_ms * 1e9),
                               torch_tflops=flops / (pt_ms * 1e9))
        print(f"sgemm {n}^3 on the GPU: headgrad {flops / (hg_ms * 1e9):.1f} TFLOP/s, "
              f"PyTorch {flops / (pt_ms * 1e9):.1f} TFLOP/s\n")
    except SideFailed as e:
        failures += 1
        result["failures"].append(dict(name=sgemm["name"], error=str(e)))
        print(f"sgemm {n}^3 on the GPU: FAILED: {e}\n")

    header = ("| configuration | headgrad ms | PyTorch ms | headgrad / PyTorch | headgrad TFLOP/s "
              "| PyTorch TFLOP/s | headgrad of FP32 peak | PyTorch of FP32 peak |")
    rule = "|---|---|---|---|---|---|---|---|"
    if args.tf32:
        header += " headgrad of TF32 peak | PyTorch of TF32 peak |"
        rule += "---|---|"
    print(header)
    print(rule)
    for config in gpu_configurations(args, device):
        try:
            hg, pt, extra = measure_gpu(config)
        except SideFailed as e:
            failures += 1
            result["failures"].append(dict(name=config["name"], error=str(e)))
            print(f"| {config['name']} | FAILED: {e} |", flush=True)
            continue
        hg_tf, pt_tf = config["flops"] / (hg * 1e9), config["flops"] / (pt * 1e9)
        row = dict(name=config["name"], flops=config["flops"], headgrad_ms=hg, torch_ms=pt,
                   ratio=hg / pt, headgrad_tflops=hg_tf, torch_tflops=pt_tf,
                   headgrad_fp32_peak_fraction=hg_tf / fp32_peak if fp32_peak else None,
                   torch_fp32_peak_fraction=pt_tf / fp32_peak if fp32_peak else None, **extra)
        line = (f"| {config['name']} | {hg:.3f} | {pt:.3f} | {hg / pt:.2f} | {hg_tf:.2f} "
                f"| {pt_tf:.2f} | {pct(row['headgrad_fp32_peak_fraction'])} "
                f"| {pct(row['torch_fp32_peak_fraction'])} |")
        if args.tf32:
            row["headgrad_tf32_peak_fraction"] = hg_tf / tf32_peak if tf32_peak else None
            row["torch_tf32_peak_fraction"] = pt_tf / tf32_peak if tf32_peak else None
            line += (f" {pct(row['headgrad_tf32_peak_fraction'])} "
                     f"| {pct(row['torch_tf32_peak_fraction'])} |")
        result["rows"].append(row)
        print(line, flush=True)
    worker.close()

    big = [r for r in result["rows"] if r["name"].startswith("GPT d512")]
    if big and big[0].get("headgrad_peak_allocated_bytes") is not None:
        hg_b, pt_b = big[0]["headgrad_peak_allocated_bytes"], big[0]["torch_peak_allocated_bytes"]
        print(f"\npeak GPU memory allocated, {big[0]['name']} (warm-up and timed steps): "
              f"headgrad {hg_b / 2 ** 20:.1f} MiB (cuda_memory_stats), PyTorch "
              f"{pt_b / 2 ** 20:.1f} MiB (torch.cuda.max_memory_allocated)")
    if result["failures"]:
        print(f"\n{len(result['failures'])} configuration(s) FAILED:")
        for f in result["failures"]:
            print(f"  {f['name']}: {f['error']}")
    path = args.json or os.path.join(
        ROOT, "runs/side_by_side_cuda" + ("_tf32" if args.tf32 else "") + ".json")
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as f:
        json.dump(result, f, indent=1)
    print(f"\nraw numbers: {path}")
    sys.exit(1 if failures else 0)


def measure(binary, config, threads, rounds):
    hg, pt = [], []
    for _ in range(rounds):
        hg += headgrad_run(binary, config, threads)["times_ms"]
        pt += torch_run(config, threads)["times_ms"]
    return statistics.median(hg), statistics.median(pt)


def measure_ensemble(binary, config, rounds):
    """measure() for an ensemble row (1 thread), keeping each side's peak RSS too (the
    largest VmHWM of its fresh processes)."""
    hg, pt, hg_rss, pt_rss = [], [], [], []
    for _ in range(rounds):
        r = headgrad_run(binary, config, 1)
        hg += r["times_ms"]
        hg_rss.append(r["peak_rss_kb"])
        r = torch_run(config, 1)
        pt += r["times_ms"]
        pt_rss.append(r["peak_rss_kb"])
    hg_ms, pt_ms, k = statistics.median(hg), statistics.median(pt), config["members"]
    return dict(name=config["name"], members=k, heads=config["heads"], threads=1,
                warmup=config["warmup"], iterations=config["iterations"], headgrad_ms=hg_ms,
                torch_ms=pt_ms, headgrad_model_steps_per_s=1e3 * k / hg_ms,
                torch_model_steps_per_s=1e3 * k / pt_ms, throughput_ratio=pt_ms / hg_ms,
                headgrad_peak_rss_kb=max(hg_rss), torch_peak_rss_kb=max(pt_rss))


def print_ensemble_header():
    print("| study ensemble, 1 thread | K | headgrad ms/step | PyTorch vmap ms/step "
          "| headgrad model-steps/s | PyTorch model-steps/s | throughput ratio |")
    print("|---|---|---|---|---|---|---|")


def print_ensemble_row(r):
    print(f"| {r['name']} | {r['members']} | {r['headgrad_ms']:.3f} | {r['torch_ms']:.3f} "
          f"| {r['headgrad_model_steps_per_s']:.1f} | {r['torch_model_steps_per_s']:.1f} "
          f"| {r['throughput_ratio']:.2f} |", flush=True)


def run_ensemble(binary, quick, rounds, reference):
    """The ensemble table (printed as it goes) and its --json value. reference: the main
    table's 1-thread study row of the same model, or None."""
    print()
    print_ensemble_header()
    rows = []
    for config in ensemble_configurations(quick):
        rows.append(measure_ensemble(binary, config, rounds))
        print_ensemble_row(rows[-1])
    result = dict(rows=rows, single_model_reference=None, peak_rss_kb=None)
    if reference:
        result["single_model_reference"] = dict(
            name=reference["name"], headgrad_ms=reference["headgrad_ms"],
            torch_ms=reference["torch_ms"],
            headgrad_model_steps_per_s=1e3 / reference["headgrad_ms"],
            torch_model_steps_per_s=1e3 / reference["torch_ms"])
        print(f"single model for reference ({reference['name']}, 1 thread): "
              f"headgrad {reference['headgrad_ms']:.3f} ms/step = "
              f"{1e3 / reference['headgrad_ms']:.1f} model-steps/s; PyTorch "
              f"{reference['torch_ms']:.3f} ms/step = {1e3 / reference['torch_ms']:.1f} "
              f"model-steps/s")
    else:
        print("single model for reference: no 1-thread study row of this model in this run")
    big = [r for r in rows if r["members"] == ENSEMBLE_RSS_K]
    if big:
        result["peak_rss_kb"] = dict(members=ENSEMBLE_RSS_K, headgrad=big[0]["headgrad_peak_rss_kb"],
                                     torch=big[0]["torch_peak_rss_kb"])
        print(f"peak RSS, study ensemble K = {ENSEMBLE_RSS_K} (fresh process, warm-up and timed "
              f"steps): headgrad {big[0]['headgrad_peak_rss_kb'] / 1024:.1f} MiB, PyTorch vmap "
              f"{big[0]['torch_peak_rss_kb'] / 1024:.1f} MiB")
    return result


def ensemble_targets(ensemble):
    found = [r for r in ensemble["rows"] if r["members"] == ENSEMBLE_TARGET_K]
    if not found:
        return []
    ratio = found[0]["throughput_ratio"]
    return [dict(target=f"study ensemble K = {ENSEMBLE_TARGET_K}: headgrad throughput >= "
                        f"{ENSEMBLE_THROUGHPUT_TARGET:.0f}x PyTorch vmap's",
                 value=round(ratio, 3), met=ratio >= ENSEMBLE_THROUGHPUT_TARGET)]


def main_ensemble_only(args):
    """--ensemble-only: the ensemble rows, with the 1-thread H = 8 study row as reference."""
    reference = None
    for config in configurations(True):
        if config["name"] == study_reference_name():
            config.setdefault("warmup", 3)
            hg, pt = measure(args.binary, config, 1, args.rounds)
            reference = dict(name=config["name"], threads=1, headgrad_ms=hg, torch_ms=pt)
    ensemble = run_ensemble(args.binary, args.quick, args.rounds, reference)
    targets = ensemble_targets(ensemble)
    print("\ntargets:")
    for t in targets:
        print(f"  {t['target']}: {t['value']} ({met(t['met'])})")
    os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
    with open(args.json, "w") as f:
        json.dump(dict(ensemble=ensemble, targets=targets, rounds=args.rounds), f, indent=1)
    print(f"\nraw numbers: {args.json}")


def measure_with_python(binary, pythonpath, config, threads, rounds):
    """measure() with a third side, headgrad from Python, alternated with the other two."""
    hg, pt, py = [], [], []
    for _ in range(rounds):
        hg += headgrad_run(binary, config, threads)["times_ms"]
        pt += torch_run(config, threads)["times_ms"]
        py += python_run(pythonpath, config, threads)["times_ms"]
    return statistics.median(hg), statistics.median(pt), statistics.median(py)


def measure_ops(binary, pythonpath, rounds):
    """The per-call rows: microseconds per call, median over all timed iterations of each
    side (PyTorch and Python: an iteration's time / its calls; C++: single timed calls)."""
    out = []
    for op in PY_OPS:
        config = {k: v for k, v in op.items() if k != "cxx"}
        cxx, pt, py = [], [], []
        for _ in range(rounds):
            if op["cxx"]:
                cxx += headgrad_run(binary, op["cxx"], 1)["times_ms"]
            pt += [t / op["calls"] for t in torch_run(config, 1)["times_ms"]]
            py += [t / op["calls"] for t in python_run(pythonpath, config, 1)["times_ms"]]
        row = dict(name=op["name"], calls_per_iteration=op["calls"],
                   cxx_us=1e3 * statistics.median(cxx) if cxx else None,
                   cxx_source=("bench_case --case %s --size %d" % (op["cxx"]["case"], op["cxx"]["size"])
                               if op["cxx"] else "none (no bench_case case for this op)"),
                   python_us=1e3 * statistics.median(py), torch_us=1e3 * statistics.median(pt))
        row["python_minus_cxx_us"] = row["python_us"] - row["cxx_us"] if cxx else None
        row["python_over_torch"] = row["python_us"] / row["torch_us"]
        out.append(row)
        c = f"{row['cxx_us']:.2f}" if cxx else "n/a (no bench_case case)"
        d = f"{row['python_minus_cxx_us']:.2f}" if cxx else "n/a"
        print(f"| {row['name']} | {c} | {row['python_us']:.2f} | {row['torch_us']:.2f} | {d} "
              f"| {row['python_over_torch']:.2f} |", flush=True)
    return out


def print_python_study_header():
    print("| study step, 1 thread | headgrad C++ ms | headgrad from Python ms | PyTorch ms "
          "| Python / C++ | Python / PyTorch |")
    print("|---|---|---|---|---|---|")


def print_python_study_row(r):
    print(f"| {r['name']} | {r['cxx_ms']:.3f} | {r['python_ms']:.3f} | {r['torch_ms']:.3f} "
          f"| {r['python_over_cxx']:.3f} | {r['python_over_torch']:.3f} |", flush=True)


def python_study_row(name, cxx_ms, torch_ms, python_ms):
    return dict(name=name, threads=1, cxx_ms=cxx_ms, torch_ms=torch_ms, python_ms=python_ms,
                python_over_cxx=python_ms / cxx_ms, python_over_torch=python_ms / torch_ms)


def op_targets(ops):
    """The per-call targets: the C++ add without and with a graph node, and every small op
    from Python at most PyTorch's own time from Python."""
    targets = []
    for r in ops:
        case = r["cxx_source"].split()[2] if r["cxx_us"] is not None else None
        if case in OP_CXX_TARGET_US:
            targets.append(dict(target=f"{r['name']} from C++ <= {OP_CXX_TARGET_US[case]} us",
                                value=round(r["cxx_us"], 3),
                                met=r["cxx_us"] <= OP_CXX_TARGET_US[case]))
        targets.append(dict(target=f"{r['name']} from Python / PyTorch from Python <= "
                                   f"{OP_PY_TORCH_TARGET:.1f}",
                            value=round(r["python_over_torch"], 3),
                            met=r["python_over_torch"] <= OP_PY_TORCH_TARGET))
    return targets


def python_targets(study):
    targets = []
    for r in study:
        targets.append(dict(target=f"{r['name']} from Python, 1 thread: Python / C++ <= "
                                   f"{PY_CXX_TARGET:.2f}", value=round(r["python_over_cxx"], 3),
                            met=r["python_over_cxx"] <= PY_CXX_TARGET))
        targets.append(dict(target=f"{r['name']} from Python, 1 thread: Python / PyTorch <= "
                                   f"{PY_TORCH_TARGET:.2f}", value=round(r["python_over_torch"], 3),
                            met=r["python_over_torch"] <= PY_TORCH_TARGET))
    return targets


def peak_rss(binary):
    config = dict(case="gpt", warmup=0, iterations=20)
    return (headgrad_run(binary, config, 1)["peak_rss_kb"],
            torch_run(config, 1)["peak_rss_kb"])


def met(ok):
    return "met" if ok else "NOT met"


def print_python_tables_intro(pythonpath):
    print(f"\nPython bindings, 1 thread (headgrad_py_worker.py, PYTHONPATH={pythonpath}); per "
          f"call: {PY_OPS[0]['calls']} calls from a Python loop per timed iteration; C++: "
          f"single bench_case calls")
    print("| op (per call) | headgrad C++ us | headgrad from Python us | PyTorch from Python us "
          "| Python - C++ us | headgrad / PyTorch from Python |")
    print("|---|---|---|---|---|---|")


def main_python_only(args, pythonpath, python_result):
    """--python-only: the Python-bindings rows alone, each alternated with its other sides."""
    print_python_tables_intro(pythonpath)
    python_result["ops"] = measure_ops(args.binary, pythonpath, args.rounds)
    print()
    print_python_study_header()
    for config in configurations(args.quick):
        if not config.get("python"):
            continue
        config.setdefault("warmup", 3)
        config.setdefault("iterations", args.iterations or 10)
        hg, pt, py = measure_with_python(args.binary, pythonpath, config, 1, args.rounds)
        python_result["study"].append(python_study_row(config["name"], hg, pt, py))
        print_python_study_row(python_result["study"][-1])
    targets = op_targets(python_result["ops"]) + python_targets(python_result["study"])
    print("\ntargets:")
    for t in targets:
        print(f"  {t['target']}: {t['value']} ({met(t['met'])})")
    os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
    with open(args.json, "w") as f:
        json.dump(dict(python=python_result, targets=targets, rounds=args.rounds), f, indent=1)
    print(f"\nraw numbers: {args.json}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--binary", default=os.path.join(ROOT, "build/release/bench/bench_case"))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--quick", action="store_true", help="the smallest MHA shape, the GPTs, the H = 1 patching sweep, the H = 1 python-driven study step and the K = 10 ensemble row")
    parser.add_argument("--iterations", type=int, default=0,
                        help="timed calls per run (default 20 for MHA, 10 for the GPT; the "
                             "ensemble rows keep their own: 20, 5, 2 for K = 1, 10, 40)")
    parser.add_argument("--python-only", action="store_true",
                        help="only the Python-bindings rows (python-driven study step, python "
                             "op overhead) against their C++ and PyTorch sides")
    parser.add_argument("--ensemble-only", action="store_true",
                        help="only the ensemble rows (headgrad's GPT ensemble against "
                             "functorch's vmap, 1 thread) and the H = 8 study row they refer to")
    parser.add_argument("--pythonpath", default=None,
                        help="where the headgrad package is (default: <build>/python, <build> "
                             "being the folder above the --binary's bench/)")
    parser.add_argument("--json", default=None,
                        help="where the raw numbers go (default runs/side_by_side.json; "
                             "--python-only: runs/side_by_side_python.json, --ensemble-only: "
                             "runs/side_by_side_ensemble.json; GPU mode: "
                             "runs/side_by_side_cuda[_tf32].json)")
    gpu = parser.add_argument_group("GPU mode")
    gpu.add_argument("--device", default="cpu",
                     help="cpu (default: the CPU comparison above) or cuda / cuda:N")
    gpu.add_argument("--tf32", action="store_true",
                     help="allow TF32 tensor cores for float32 matmuls on both sides")
    gpu.add_argument("--masks", default="none,causal,padding",
                     help="MHA masks to run on the GPU (comma-separated)")
    gpu.add_argument("--sgemm-size", type=int, default=8192, help="n of the GPU sgemm reference")
    gpu.add_argument("--fp32-peak", type=float, default=None,
                     help="the GPU's FP32 peak in TFLOP/s (default: from its name)")
    gpu.add_argument("--tf32-peak", type=float, default=None,
                     help="the GPU's dense TF32 peak in TFLOP/s (default: from its name)")
    gpu.add_argument("--timeout", type=int, default=600,
                     help="seconds one side may take for one run of a configuration")
    args = parser.parse_args()
    if args.device != "cpu" and args.binary == parser.get_default("binary"):
        gpu_binary = os.path.join(ROOT, "build/gpu/bench/bench_case")
        if os.path.exists(gpu_binary):
            args.binary = gpu_binary
    if not os.path.exists(args.binary):
        sys.exit(f"no {args.binary}: cmake --build --preset release --target bench_case")
    # Not imported here: the parent stays small, and the workers are separate processes.
    if importlib.util.find_spec("torch") is None:
        print("SKIPPED: PyTorch is not importable by " + sys.executable)
        sys.exit(77)
    if args.device != "cpu":
        if args.device != "cuda" and not (args.device.startswith("cuda:")
                                          and args.device[5:].isdigit()):
            sys.exit(f"--device {args.device}: expected cpu, cuda or cuda:N")
        main_gpu(args)
        return
    if args.tf32:
        sys.exit("--tf32 applies to --device cuda only")
    if args.python_only and args.ensemble_only:
        sys.exit("--python-only and --ensemble-only exclude each other")
    if args.json is None:
        args.json = os.path.join(ROOT, "runs/side_by_side_python.json" if args.python_only
                                 else "runs/side_by_side_ensemble.json" if args.ensemble_only
                                 else "runs/side_by_side.json")
    if args.ensemble_only:
        main_ensemble_only(args)
        return
    threads_list = [int(t) for t in args.threads.split(",")]
    # The headgrad package of the same build as the binary: build/X/bench/bench_case ->
    # build/X/python.
    pythonpath = os.path.abspath(args.pythonpath or os.path.join(
        os.path.dirname(os.path.dirname(os.path.abspath(args.binary))), "python"))
    py_info, py_why = python_check(pythonpath)
    if py_info:
        print(f"headgrad from Python: {py_info['path']} (PYTHONPATH={pythonpath})")
    else:
        print(f"SKIPPING the Python-bindings rows: the headgrad package is not importable from "
              f"PYTHONPATH={pythonpath}: {py_why}")
    python_result = dict(pythonpath=pythonpath, available=bool(py_info), skipped_reason=py_why,
                         ops=[], study=[])
    if args.python_only:
        if not py_info:
            sys.exit(1)
        main_python_only(args, pythonpath, python_result)
        return

    sgemm = dict(case="sgemm", size=1024, warmup=2, iterations=10)
    hg_ms, pt_ms = measure(args.binary, sgemm, 1, args.rounds)
    peak = 2 * 1024 ** 3 / (min(hg_ms, pt_ms) * 1e6)  # GFLOP/s, the faster side
    print(f"sgemm 1024^3, 1 thread: headgrad {2 * 1024 ** 3 / (hg_ms * 1e6):.1f} GFLOP/s, "
          f"PyTorch {2 * 1024 ** 3 / (pt_ms * 1e6):.1f} GFLOP/s; peak = {peak:.1f} GFLOP/s\n")

    rows = []
    py_study = python_result["study"]
    print("| configuration | threads | headgrad ms | PyTorch ms | headgrad / PyTorch "
          "| headgrad GFLOP/s | of 1-thread sgemm peak |")
    print("|---|---|---|---|---|---|---|")
    for config in configurations(args.quick):
        config.setdefault("warmup", 3)
        config.setdefault("iterations", args.iterations or (20 if config["case"] == "mha" else 10))
        for threads in threads_list:
            py = None
            if py_info and config.get("python") and threads == 1:
                hg, pt, py = measure_with_python(args.binary, pythonpath, config, threads,
                                                 args.rounds)
                py_study.append(python_study_row(config["name"], hg, pt, py))
            else:
                hg, pt = measure(args.binary, config, threads, args.rounds)
            gflops = config["flops"] / (hg * 1e6)
            rows.append(dict(name=config["name"], threads=threads, headgrad_ms=hg, torch_ms=pt,
                             ratio=hg / pt, headgrad_gflops=gflops))
            if py is not None:
                rows[-1]["headgrad_python_ms"] = py
            print(f"| {config['name']} | {threads} | {hg:.3f} | {pt:.3f} | {hg / pt:.2f} "
                  f"| {gflops:.1f} | {100 * gflops / peak:.0f}% |", flush=True)
    reference = [r for r in rows if r["name"] == study_reference_name() and r["threads"] == 1]
    ensemble = run_ensemble(args.binary, args.quick, args.rounds,
                            reference[0] if reference else None)
    floor_runs = [headgrad_run(args.binary, dict(case="gpt_gemms", warmup=2, iterations=10), 1)
                  for _ in range(args.rounds)]
    floor_ms = statistics.median(t for r in floor_runs for t in r["times_ms"])
    gpt_torch = [r["torch_ms"] for r in rows if r["name"] == "toy GPT training step"
                 and r["threads"] == 1]
    print(f"\nGEMMs alone of one toy GPT training step (direct cblas_sgemm for every product, "
          f"full L x L attention, 1 thread, same shapes): {floor_ms:.1f} ms"
          + (f"; the 1-thread target, 0.70 x PyTorch's step: {0.70 * gpt_torch[0]:.1f} ms"
             if gpt_torch else ""))
    hg_rss, pt_rss = peak_rss(args.binary)
    print(f"\npeak RSS, 20 toy GPT training steps in a fresh process: headgrad "
          f"{hg_rss / 1024:.1f} MiB, PyTorch {pt_rss / 1024:.1f} MiB")
    if py_info:
        print_python_tables_intro(pythonpath)
        python_result["ops"] = measure_ops(args.binary, pythonpath, args.rounds)
        print()
        print_python_study_header()
        for r in py_study:
            print_python_study_row(r)

    def row(name, threads):
        found = [r for r in rows if r["name"] == name and r["threads"] == threads]
        return found[0] if found else None

    targets = []
    gpt1 = row("toy GPT training step", 1)
    if gpt1:
        targets.append(dict(target=f"toy GPT step, 1 thread: headgrad / PyTorch <= "
                                   f"{GPT_RATIO_TARGET:.2f}", value=round(gpt1["ratio"], 3),
                            met=gpt1["ratio"] <= GPT_RATIO_TARGET))
    for name in ("toy GPT training step", "MHA train (B,L,E,H)=(8,128,512,8) mask=none"):
        one, two = row(name, 1), row(name, 2)
        if one and two:
            speedup = one["headgrad_ms"] / two["headgrad_ms"]
            targets.append(dict(target=f"{name}: headgrad 1 -> 2 threads >= "
                                       f"{THREAD_SPEEDUP_TARGET:.1f}x", value=round(speedup, 3),
                                met=speedup >= THREAD_SPEEDUP_TARGET))
    for config in configurations(args.quick):
        sweep = row(config["name"], 1) if config["case"] == "patching" else None
        if sweep:
            targets.append(dict(target=f"{config['name']}, 1 thread: headgrad / PyTorch <= "
                                       f"{PATCHING_RATIO_TARGET:.1f}", value=round(sweep["ratio"], 3),
                                met=sweep["ratio"] <= PATCHING_RATIO_TARGET))
    targets.append(dict(target=f"peak RSS, 20 toy GPT steps <= {PEAK_RSS_TARGET_MIB:.0f} MiB",
                        value=round(hg_rss / 1024, 1), met=hg_rss / 1024 <= PEAK_RSS_TARGET_MIB))
    targets += op_targets(python_result.get("ops", []))
    targets += python_targets(py_study)
    targets += ensemble_targets(ensemble)
    print("\ntargets:")
    for t in targets:
        print(f"  {t['target']}: {t['value']} ({met(t['met'])})")
    os.makedirs(os.path.dirname(args.json), exist_ok=True)
    with open(args.json, "w") as f:
        json.dump(dict(sgemm_peak_gflops=peak, rows=rows, gpt_gemms_ms=floor_ms, peak_rss_kb=dict(
            headgrad=hg_rss, torch=pt_rss), targets=targets, python=python_result,
            ensemble=ensemble,
            torch_threads="torch.set_num_threads(t), OMP/OPENBLAS/MKL_NUM_THREADS=t, "
                          "OMP_WAIT_POLICY=PASSIVE"), f, indent=1)


if __name__ == "__main__":
    main()
