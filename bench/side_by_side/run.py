"""Side-by-side benchmark: headgrad against PyTorch on this machine, in one invocation.

    /usr/bin/python3 bench/side_by_side/run.py [--rounds 3] [--threads 1,2] [--quick]

(Debian's python3 with python3-torch; build bench_case first:
 cmake --build --preset release --target bench_case.) For every configuration and thread
count it alternates the two sides ROUNDS times (headgrad, PyTorch, headgrad, ...) so drift
hits both, each run timing `iterations` calls after a warm-up, and reports the median of
all timed calls per side. Every threading layer is pinned: OMP_NUM_THREADS,
OPENBLAS_NUM_THREADS and MKL_NUM_THREADS are set for both processes, headgrad calls
set_num_threads and PyTorch torch.set_num_threads. The sgemm reference (1024^3,
single-threaded, both sides) is measured in the same run; GFLOP/s count the model's
matrix products only (2 m n k each, 3x forward for a training step). The GEMMs of one toy
GPT step alone (bench_case --case gpt_gemms) give the floor no framework on this OpenBLAS
can beat. Peak memory is the peak resident set (VmHWM) of a fresh process running 20 toy
GPT training steps. Prints a Markdown table and writes the raw numbers to --json.
"""
import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

MHA_SHAPES = [(64, 16, 64, 4), (32, 64, 256, 8), (8, 128, 512, 8)]
GPT = dict(vocab=64, context=64, d=128, layers=2, batch=32)


def pinned_env(threads):
    env = dict(os.environ)
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env[var] = str(threads)
    return env


def mha_flops(b, l, e, mode):
    forward = 8 * b * l * e * e + 4 * b * l * l * e  # projections, q k^T, weights v
    return forward * (3 if mode == "train" else 1)


def gpt_flops():
    b, t, d, v = GPT["batch"], GPT["context"], GPT["d"], GPT["vocab"]
    per_layer = 24 * b * t * d * d + 4 * b * t * t * d  # attention + feed-forward (4d)
    return 3 * (GPT["layers"] * per_layer + 2 * b * t * d * v)


def configurations(quick):
    configs = []
    for b, l, e, h in MHA_SHAPES[:1] if quick else MHA_SHAPES:
        for mask in ("none", "causal", "padding"):
            for mode in ("forward", "train"):
                configs.append(dict(case="mha", batch=b, len=l, embed=e, heads=h, mask=mask,
                                    mode=mode, flops=mha_flops(b, l, e, mode),
                                    name=f"MHA {mode} (B,L,E,H)=({b},{l},{e},{h}) mask={mask}"))
    configs.append(dict(case="gpt", flops=gpt_flops(), name="toy GPT training step"))
    return configs


class TorchWorker:
    def __init__(self, threads):
        self.proc = subprocess.Popen(
            [sys.executable, os.path.join(HERE, "torch_worker.py"), str(threads)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=pinned_env(threads))

    def run(self, config):
        self.proc.stdin.write(json.dumps(config) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError("the PyTorch worker died on " + config.get("name", config["case"]))
        return json.loads(line)

    def close(self):
        self.proc.stdin.close()
        self.proc.wait()


def headgrad_run(binary, config, threads):
    args = [binary, "--case", config["case"], "--threads", str(threads),
            "--warmup", str(config["warmup"]), "--iterations", str(config["iterations"])]
    for key in ("batch", "len", "embed", "heads", "mask", "mode", "size"):
        if key in config:
            args += ["--" + key, str(config[key])]
    out = subprocess.run(args, check=True, capture_output=True, text=True, env=pinned_env(threads))
    return json.loads(out.stdout)


def measure(binary, worker, config, threads, rounds):
    hg, pt = [], []
    for _ in range(rounds):
        hg += headgrad_run(binary, config, threads)["times_ms"]
        pt += worker.run(config)["times_ms"]
    return statistics.median(hg), statistics.median(pt)


def peak_rss(binary):
    config = dict(case="gpt", warmup=0, iterations=20)
    hg = headgrad_run(binary, config, 1)["peak_rss_kb"]
    out = subprocess.run([sys.executable, os.path.join(HERE, "torch_worker.py"), "1", "--once",
                          json.dumps(config)], check=True, capture_output=True, text=True,
                         env=pinned_env(1))
    return hg, json.loads(out.stdout)["peak_rss_kb"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--binary", default=os.path.join(ROOT, "build/release/bench/bench_case"))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--quick", action="store_true", help="the smallest MHA shape and the GPT")
    parser.add_argument("--iterations", type=int, default=0,
                        help="timed calls per run (default 20 for MHA, 10 for the GPT)")
    parser.add_argument("--json", default=os.path.join(ROOT, "runs/side_by_side.json"))
    args = parser.parse_args()
    if not os.path.exists(args.binary):
        sys.exit(f"no {args.binary}: cmake --build --preset release --target bench_case")
    # Not imported here: the parent stays small, and the workers are separate processes.
    if importlib.util.find_spec("torch") is None:
        print("SKIPPED: PyTorch is not importable by " + sys.executable)
        sys.exit(77)
    threads_list = [int(t) for t in args.threads.split(",")]

    workers = {t: TorchWorker(t) for t in sorted(set(threads_list) | {1})}
    sgemm = dict(case="sgemm", size=1024, warmup=2, iterations=10)
    hg_ms, pt_ms = measure(args.binary, workers[1], sgemm, 1, args.rounds)
    peak = 2 * 1024 ** 3 / (min(hg_ms, pt_ms) * 1e6)  # GFLOP/s, the faster side
    print(f"sgemm 1024^3, 1 thread: headgrad {2 * 1024 ** 3 / (hg_ms * 1e6):.1f} GFLOP/s, "
          f"PyTorch {2 * 1024 ** 3 / (pt_ms * 1e6):.1f} GFLOP/s; peak = {peak:.1f} GFLOP/s\n")

    rows = []
    print("| configuration | threads | headgrad ms | PyTorch ms | headgrad / PyTorch "
          "| headgrad GFLOP/s | of 1-thread sgemm peak |")
    print("|---|---|---|---|---|---|---|")
    for config in configurations(args.quick):
        config.setdefault("warmup", 3)
        config.setdefault("iterations", args.iterations or (20 if config["case"] == "mha" else 10))
        for threads in threads_list:
            hg, pt = measure(args.binary, workers[threads], config, threads, args.rounds)
            gflops = config["flops"] / (hg * 1e6)
            rows.append(dict(name=config["name"], threads=threads, headgrad_ms=hg, torch_ms=pt,
                             ratio=hg / pt, headgrad_gflops=gflops))
            print(f"| {config['name']} | {threads} | {hg:.3f} | {pt:.3f} | {hg / pt:.2f} "
                  f"| {gflops:.1f} | {100 * gflops / peak:.0f}% |", flush=True)
    for w in workers.values():
        w.close()
    floor_runs = [headgrad_run(args.binary, dict(case="gpt_gemms", warmup=2, iterations=10), 1)
                  for _ in range(args.rounds)]
    floor_ms = statistics.median(t for r in floor_runs for t in r["times_ms"])
    gpt_torch = [r["torch_ms"] for r in rows if r["name"] == "toy GPT training step"
                 and r["threads"] == 1]
    print(f"\nGEMMs alone of one toy GPT training step (direct cblas_sgemm, 1 thread, same "
          f"shapes): {floor_ms:.1f} ms" + (f"; 0.8 x PyTorch's 1-thread step: "
                                          f"{0.8 * gpt_torch[0]:.1f} ms" if gpt_torch else ""))
    hg_rss, pt_rss = peak_rss(args.binary)
    print(f"\npeak RSS, 20 toy GPT training steps in a fresh process: headgrad "
          f"{hg_rss / 1024:.1f} MiB, PyTorch {pt_rss / 1024:.1f} MiB")
    os.makedirs(os.path.dirname(args.json), exist_ok=True)
    with open(args.json, "w") as f:
        json.dump(dict(sgemm_peak_gflops=peak, rows=rows, gpt_gemms_ms=floor_ms, peak_rss_kb=dict(
            headgrad=hg_rss, torch=pt_rss)), f, indent=1)


if __name__ == "__main__":
    main()
