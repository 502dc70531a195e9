#!/usr/bin/env bash
# The batched GPU job: everything that needs a GPU, in one command, on a machine that may
# have no Debian package registry. See docs/cuda.md.
#
#   bash scripts/gpu_run.sh [--out DIR] [--steps LIST] [--jobs N] [--quick]
#
#   --out DIR     where logs and results go (default: $OUT when set, else runs/gpu)
#   --steps LIST  comma-separated, in this order (default: all of them):
#                   build       unpack debs/ into .deps/ when debs/MANIFEST.tsv is there
#                               (scripts/unpack_debs.sh; else the system's packages are
#                               used), configure the CMake preset "gpu" (Release,
#                               HEADGRAD_CUDA=ON, build/gpu; Ninja when present; the GPU's
#                               own sm_XX from nvidia-smi) and build everything
#                   test        ctest: the CPU suite and the GPU suite (headgrad_cuda_tests,
#                               "cuda." tests), and the Python module's pytest files
#                               (test_cuda.py's GPU cases) where the interpreter with
#                               PyTorch also has NumPy and pybind11
#                   parity      train_toy on cpu and twice on cuda:0 with one seed: the two
#                               GPU runs must agree bitwise (metrics and checkpoint), the GPU
#                               run must track the CPU run; then heads_compare's smoke preset on
#                               cuda:0
#                   bench       bench/side_by_side/run.py --device cuda (FP32)
#                   bench-tf32  the same with --tf32
#                   ensemble    model ensembles on the GPU: the GPU suite's ensemble cases,
#                               the study model's training step as an ensemble of K = 1, 10,
#                               40 (bench_case --case ensemble) against functorch's vmap
#                               ensemble and against one model at a time, and heads_compare
#                               (9 runs of one model) with and without ensembles
#                 Each step builds what it needs first (a no-op when built), so steps can
#                 run in separate commands, e.g. --steps build,test then --steps
#                 parity,bench then --steps bench-tf32.
#   --jobs N      build and test parallelism (default: nproc)
#   --quick       a shorter benchmark (the smallest MHA shape and the toy GPT) and parity
#
# Environment: HEADGRAD_CUDA_ARCHITECTURES (e.g. 90) overrides the sm_XX read from
# nvidia-smi (the CMake default, 80;90, when neither is there). HEADGRAD_TEST_TIMEOUT
# (seconds, default 900) is ctest's limit per test: a short one keeps a hung GPU test from
# eating a short lease.
#
# It keeps going when a step fails (the benchmark runs even if a test failed), and exits 1
# at the end if any step failed. Files written to DIR (at most 8, for transfer limits):
#   summary.txt  machine, versions, each step's status and time, key result lines
#   build.log    unpack, configure, build        ctest.log    the test run
#   parity.log   the parity runs and their comparison
#   bench.log, bench.json, bench_tf32.log, bench_tf32.json   the benchmark tables and numbers
#   ensemble.log  the ensemble step
#
# Bringing the Debian packages: on a machine with the registry run
# `bash scripts/gather_debs.sh` (writes debs/, git-ignored), then bring debs/ along (with
# the device tool: carry ["debs"]).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

out="${OUT:-$root/runs/gpu}"
steps="build,test,parity,bench,bench-tf32,ensemble"
jobs=$(nproc 2>/dev/null || echo 4)
quick=0
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out="$2"; shift 2 ;;
    --out=*) out="${1#--out=}"; shift ;;
    --steps) steps="$2"; shift 2 ;;
    --steps=*) steps="${1#--steps=}"; shift ;;
    --jobs) jobs="$2"; shift 2 ;;
    --jobs=*) jobs="${1#--jobs=}"; shift ;;
    --quick) quick=1; shift ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) echo "gpu_run: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
for s in ${steps//,/ }; do
  case "$s" in build|test|parity|bench|bench-tf32|ensemble) ;;
    *) echo "gpu_run: unknown step '$s' (build, test, parity, bench, bench-tf32, ensemble)" >&2; exit 2 ;;
  esac
done
mkdir -p "$out"
out=$(cd "$out" && pwd)
build="$root/build/gpu"
summary="$out/summary.txt"
: >"$summary"

note() { echo "$*" | tee -a "$summary"; }
stamp() { date -u +%H:%M:%S; }
# Echoes a command, then runs it.
run() { echo "+ $*"; "$@"; }

# --- the machine ------------------------------------------------------------------------
python=""
for py in python3 /usr/bin/python3 /opt/torch/.venv/bin/python3; do
  if command -v "$py" >/dev/null 2>&1 && "$py" -c 'import torch' >/dev/null 2>&1; then
    python=$(command -v "$py"); break
  fi
done
python_any=${python:-$(command -v python3 || echo /usr/bin/python3)}
note "gpu_run: $(date -u +%Y-%m-%dT%H:%M:%SZ), steps: $steps, out: $out"
{
  echo "--- machine"
  uname -srm
  (. /etc/os-release 2>/dev/null && echo "$PRETTY_NAME") || true
  echo "cores: $(nproc 2>/dev/null || echo ?)"
  nvidia-smi --query-gpu=name,memory.total,driver_version,compute_cap --format=csv,noheader 2>/dev/null ||
    echo "nvidia-smi: not available"
  nvcc_bin=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
  "$nvcc_bin" --version 2>/dev/null | tail -n 2 || echo "nvcc: not found"
  cmake --version 2>/dev/null | head -n 1 || echo "cmake: not found"
  c++ --version 2>/dev/null | head -n 1 || echo "c++: not found"
  echo "${CXX:-c++} -print-file-name=libstdc++.so: $("${CXX:-c++}" -print-file-name=libstdc++.so 2>/dev/null)" \
    "| CXX='${CXX:-}' LDFLAGS='${LDFLAGS:-}' CXXFLAGS='${CXXFLAGS:-}'"
  command -v ninja >/dev/null && echo "ninja $(ninja --version)" || echo "ninja: not found"
  if [ -n "$python" ]; then
    "$python" -c 'import sys, torch; print("python", sys.version.split()[0], sys.executable, "| torch", torch.__version__, "| cuda", torch.version.cuda, "| GPU", torch.cuda.get_device_name(0) if torch.cuda.is_available() else "none")' 2>&1
  else
    echo "python3 with torch: not found (the benchmark will be skipped)"
  fi
  if [ -n "$python" ]; then
    "$python" -c 'import sys, sysconfig, os, numpy, pybind11; h = os.path.join(sysconfig.get_paths()["include"], "Python.h"); print("for the Python module: numpy", numpy.__version__, "| pybind11", pybind11.__version__, "|", h, "present" if os.path.exists(h) else "MISSING")' 2>&1 || true
  fi
  echo "---"
} 2>&1 | tee -a "$summary"

declare -A status
failed=0
# run_step NAME LOG: runs step_NAME with errexit in a subshell, appending to LOG (and to
# this script's output), records its status and time, and never stops the script.
run_step() {
  local name=$1 log=$2 start rc
  start=$(date +%s)
  echo
  echo "==> [$(stamp)] step $name (log: $log)"
  set +e
  (
    set -euo pipefail
    "step_${name//-/_}"
  ) 2>&1 | tee -a "$log"
  rc=${PIPESTATUS[0]}
  set -e
  local took=$(( $(date +%s) - start ))
  if [ "$rc" -eq 0 ]; then
    status[$name]="ok"
  else
    status[$name]="FAILED (exit $rc)"
    failed=1
  fi
  note "step $name: ${status[$name]} in ${took}s"
}

# --- build --------------------------------------------------------------------------------
deps_flags=()
use_deps() {
  deps_flags=()
  if [ -f "$root/debs/MANIFEST.tsv" ]; then
    run bash "$root/scripts/unpack_debs.sh" --debs "$root/debs" --prefix "$root/.deps" >&2
    # shellcheck disable=SC1091
    . "$root/.deps/env.sh"
    mapfile -t deps_flags <"$root/.deps/cmake-flags.txt"
  fi
}

configure_and_build() {  # configure_and_build [TARGET...]: everything when none is named
  use_deps
  local args=(--preset gpu)
  if [ ! -f "$build/CMakeCache.txt" ] && command -v ninja >/dev/null; then args+=(-G Ninja); fi
  # The GPU's own architecture (e.g. 90 for an H100): one instead of two makes nvcc's part
  # of the build twice as fast. $HEADGRAD_CUDA_ARCHITECTURES, when set, wins.
  local cap=${HEADGRAD_CUDA_ARCHITECTURES:-}
  if [ -z "$cap" ]; then
    cap=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -n1 | tr -d ' .' || true)
  fi
  if [[ "$cap" =~ ^[0-9]+(;[0-9]+)*$ ]]; then args+=("-DHEADGRAD_CUDA_ARCHITECTURES=$cap"); fi
  # The Python module, for the interpreter that holds PyTorch (the GPU machines' own, with
  # NumPy and pip's pybind11): its pytest files, test_cuda.py among them, then run there.
  if [ -n "$python" ] && "$python" -c 'import numpy, pybind11' >/dev/null 2>&1; then
    args+=("-DPython_EXECUTABLE=$python" "-Dpybind11_DIR=$("$python" -m pybind11 --cmakedir)")
  fi
  run cmake "${args[@]}" "${deps_flags[@]}"
  if [ $# -gt 0 ]; then
    run cmake --build "$build" -j "$jobs" --target "$@"
    return
  fi
  # Keep going past a failing target, so that everything else still gets built.
  if grep -q '^CMAKE_GENERATOR:INTERNAL=Ninja' "$build/CMakeCache.txt"; then
    run cmake --build --preset gpu -j "$jobs" -- -k 0
  else
    run cmake --build --preset gpu -j "$jobs" -- -k
  fi
}

# The steps after build only need their own targets; an up-to-date build is a no-op.
ensure_built() {
  if [ ! -f "$build/CMakeCache.txt" ]; then
    configure_and_build "$@" >>"$out/build.log" 2>&1
  else
    use_deps >>"$out/build.log" 2>&1
    run cmake --build "$build" -j "$jobs" --target "$@" >>"$out/build.log" 2>&1
  fi
}

step_build() {
  configure_and_build
  # A static libstdc++ inside libheadgrad crashes the Python module next to NumPy (see
  # cmake/SharedLibstdcxx.cmake); the C++ suite alone would not notice.
  if ldd "$build/lib/libheadgrad.so" | grep -q 'libstdc++[.]so[.]6'; then
    echo "libheadgrad links the shared libstdc++: $(ldd "$build/lib/libheadgrad.so" | grep 'libstdc++')"
  else
    echo "gpu_run: libheadgrad.so carries a static libstdc++ (no libstdc++.so.6 in ldd)"
    return 1
  fi
}

# --- test ---------------------------------------------------------------------------------
step_test() {
  # Test whatever got built, even if some target failed to build (the build step says which).
  ensure_built all || echo "gpu_run: the build is incomplete (see build.log); testing what was built"
  cd "$build"
  # The whole suite (CPU and GPU tests; -R '^cuda[.]' would select the GPU suite alone).
  local rc=0
  run ctest --output-on-failure -j "$jobs" --timeout "${HEADGRAD_TEST_TIMEOUT:-900}" || rc=$?
  echo "--- GPU suite alone: $(ctest -N -R '^cuda[.]' | tail -n 1)"
  return $rc
}

# --- parity -------------------------------------------------------------------------------
step_parity() {
  ensure_built train_toy heads_compare
  local bin="$build/examples/train_toy" work="$build/parity" steps=300 rc=0
  [ $quick = 1 ] && steps=120
  rm -rf "$work"
  mkdir -p "$work"
  local common=(--task sort --steps "$steps" --eval-every 40 --checkpoint-every 0 --seed 3
                --threads 1 --quiet)
  run "$bin" "${common[@]}" --device cpu --out "$work/cpu" || rc=1
  run "$bin" "${common[@]}" --device cuda:0 --out "$work/cuda_a" || rc=1
  run "$bin" "${common[@]}" --device cuda:0 --out "$work/cuda_b" || rc=1
  if [ $rc = 0 ]; then
    "$python_any" - "$work" <<'EOF' || rc=1
import csv, os, sys, zipfile
work = sys.argv[1]
def rows(run):
    with open(os.path.join(work, run, "metrics.csv")) as f:
        return {(int(r["step"]), r["split"]): (float(r["loss"]), float(r["accuracy"]))
                for r in csv.DictReader(f)}
cpu, a, b = rows("cpu"), rows("cuda_a"), rows("cuda_b")
# The checkpoints' arrays, less the two that differ between any two runs: the wall time
# (trainer/elapsed_s) and the run's configuration, which names its --out folder.
def arrays(run):
    with zipfile.ZipFile(os.path.join(work, run, "checkpoint.npz")) as z:
        return {n: z.read(n) for n in z.namelist()
                if n not in ("trainer/elapsed_s.npy", "trainer/config.npy")}
ckpt_a, ckpt_b = arrays("cuda_a"), arrays("cuda_b")
differing = sorted(n for n in ckpt_a.keys() | ckpt_b.keys() if ckpt_a.get(n) != ckpt_b.get(n))
same = a == b and not differing
print("determinism: two cuda:0 runs give " +
      (f"bitwise identical metrics and checkpoints ({len(ckpt_a)} arrays)" if same else
       "DIFFERENT results: " + ("metrics differ; " if a != b else "") +
       f"{len(differing)} checkpoint arrays differ, e.g. {differing[:3]}"))
ok = same
try:  # how far the weights drifted apart, where numpy is there to read them
    import io, numpy as np
    def weights(run):
        with zipfile.ZipFile(os.path.join(work, run, "checkpoint.npz")) as z:
            return {n: np.load(io.BytesIO(z.read(n))) for n in z.namelist()
                    if not n.startswith(("optimizer/", "trainer/"))}
    wc, wg = weights("cpu"), weights("cuda_a")
    diff = max(float(np.max(np.abs(wc[n].astype(np.float64) - wg[n]))) for n in wc)
    scale = max(float(np.max(np.abs(wc[n]))) for n in wc)
    print(f"cpu vs cuda weights after the last step: max |diff| {diff:.3e}, largest |weight| "
          f"{scale:.3e} ({len(wc)} tensors)")
except ImportError:
    pass
print("\n| step | split | cpu loss | cuda loss | rel. diff | cpu acc | cuda acc |")
print("|---|---|---|---|---|---|---|")
worst = 0.0
for key in sorted(cpu):
    if key not in a:
        print(f"| {key[0]} | {key[1]} | missing on cuda |")
        ok = False
        continue
    (lc, ac), (lg, ag) = cpu[key], a[key]
    rel = abs(lg - lc) / max(abs(lc), 1e-3)
    worst = max(worst, rel)
    print(f"| {key[0]} | {key[1]} | {lc:.5f} | {lg:.5f} | {rel:.2e} | {ac:.4f} | {ag:.4f} |")
last = max(k[0] for k in cpu)
acc_gap = abs(cpu[(last, "validation")][1] - a.get((last, "validation"), (0, -1))[1])
# float32 on both sides with different summation orders: the runs drift apart slowly.
track = worst <= 5e-2 and acc_gap <= 0.05
print(f"\ncpu vs cuda: worst relative loss difference {worst:.2e} (limit 5e-2), final "
      f"validation accuracy gap {acc_gap:.4f} (limit 0.05): {'ok' if track else 'TOO FAR APART'}")
sys.exit(0 if ok and track else 1)
EOF
  else
    echo "gpu_run: a train_toy run failed; no comparison"
  fi
  # The per-head study end to end on the GPU, tiny (capture, importance, pruning, plots).
  run "$build/examples/heads_compare" --preset smoke --device cuda:0 \
    --out "$work/heads_compare" --quiet || rc=1
  [ -f "$work/heads_compare/report.md" ] && grep -m 3 -i -E 'device|runs' "$work/heads_compare/report.md" || true
  return $rc
}

# --- bench --------------------------------------------------------------------------------
bench() {  # bench LOG-STEM [run.py arguments]
  local stem=$1; shift
  ensure_built bench_case
  [ -n "$python" ] || { echo "no python3 that imports torch: cannot run the benchmark"; return 1; }
  local extra=()
  [ $quick = 1 ] && extra+=(--quick)
  PYTHONUNBUFFERED=1 run "$python" "$root/bench/side_by_side/run.py" --device cuda:0 \
    --binary "$build/bench/bench_case" --json "$out/$stem.json" "${extra[@]}" "$@"
}
step_bench() { bench bench; }
step_bench_tf32() { bench bench_tf32 --tf32; }

# --- ensemble -------------------------------------------------------------------------------
step_ensemble() {
  # HEADGRAD_ENSEMBLE_PARTS: which of tests, bench, study to run (default all three).
  local parts=",${HEADGRAD_ENSEMBLE_PARTS:-tests,bench,study},"
  local targets=(headgrad_cuda)
  [[ $parts == *,tests,* ]] && targets+=(headgrad_cuda_tests)
  [[ $parts == *,bench,* ]] && targets+=(bench_case)
  [[ $parts == *,study,* ]] && targets+=(heads_compare)
  ensure_built "${targets[@]}"
  local rc=0
  if [[ $parts == *,tests,* ]]; then
    (cd "$build" && run ctest --output-on-failure --timeout "${HEADGRAD_TEST_TIMEOUT:-900}" \
      -R '^cuda[.].*(grouped|ensemble|per-member)') || rc=1
  fi
  # The study model (H = 8, E = 64, 2 layers, B = 32, T = 19, clip 1): ms per step, median
  # of 10 after 3 warm-up steps, one process per measurement.
  local study=(--vocab 22 --context 19 --d-model 64 --heads 8 --layers 2 --batch 32 --clip 1)
  median() { "$python" -c 'import json,sys,statistics; print("%.3f" % statistics.median(json.loads(sys.stdin.read())["times_ms"]))'; }
  if [[ $parts == *,bench,* ]]; then
  local one; one=$("$build/bench/bench_case" --case gpt "${study[@]}" --device cuda:0 \
    --warmup 3 --iterations 20 | median) || rc=1
  echo "headgrad one model: $one ms/step"
  local k hg pt
  for k in 1 10 40; do
    hg=$("$build/bench/bench_case" --case ensemble --members $k "${study[@]}" --device cuda:0 \
      --warmup 3 --iterations 10 | median) || { rc=1; hg=nan; }
    pt=nan
    if [ -n "$python" ]; then
      pt=$("$python" "$root/bench/side_by_side/torch_worker.py" 1 --once \
        "{\"case\": \"ensemble\", \"members\": $k, \"vocab\": 22, \"context\": 19, \"d_model\": 64, \"heads\": 8, \"layers\": 2, \"batch\": 32, \"clip\": 1.0, \"device\": \"cuda:0\", \"warmup\": 3, \"iterations\": 10}" \
        | median) || pt=nan
    fi
    echo "ensemble K=$k: headgrad $hg ms/step, PyTorch vmap $pt ms/step"
  done
  fi
  [[ $parts == *,study,* ]] || return $rc
  # The study's runs of one model (9: 3 learning rates x 3 seeds) with and without ensembles.
  local mode
  for mode in ensemble no-ensemble; do
    local flag=(); [ $mode = no-ensemble ] && flag=(--no-ensemble)
    local t0; t0=$(date +%s%N)
    run "$build/examples/heads_compare" --preset default --arms fixed_width --heads 8 \
      --device cuda:0 --out "$build/ensemble_$mode" --quiet "${flag[@]}" || rc=1
    echo "heads_compare H=8, 9 runs, $mode: $(( ($(date +%s%N) - t0) / 1000000 )) ms"
  done
  "$python" - "$build/ensemble_ensemble/cache" "$build/ensemble_no-ensemble/cache" <<'PY' || rc=1
import glob, json, os, sys
a, b = sys.argv[1:3]
worst, solved = 0.0, []
for f in sorted(glob.glob(a + "/*.json")):
    x, y = json.load(open(f)), json.load(open(os.path.join(b, os.path.basename(f))))
    worst = max(worst, abs(x["final_test_loss"] - y["final_test_loss"]) / max(abs(y["final_test_loss"]), 1e-12))
    solved.append((x["solved_step"], y["solved_step"]))
print("ensemble vs alone on cuda:0: worst relative final test loss difference %.2e; solve steps %s"
      % (worst, "equal" if all(p == q for p, q in solved) else "differ: %s" % solved))
PY
  return $rc
}

# --- run them -------------------------------------------------------------------------------
for s in ${steps//,/ }; do
  case "$s" in
    build) run_step build "$out/build.log" ;;
    test) run_step test "$out/ctest.log" ;;
    parity) run_step parity "$out/parity.log" ;;
    bench) run_step bench "$out/bench.log" ;;
    bench-tf32) run_step bench-tf32 "$out/bench_tf32.log" ;;
    ensemble) run_step ensemble "$out/ensemble.log" ;;
  esac
done

{
  echo
  echo "--- results"
  if [ -f "$out/ctest.log" ]; then
    grep -E 'tests passed|tests failed|Total Test time' "$out/ctest.log" | tail -n 3 || true
  fi
  if [ -f "$out/parity.log" ]; then
    grep -E '^determinism:|^cpu vs cuda:' "$out/parity.log" || true
  fi
  if [ -f "$out/ensemble.log" ]; then
    grep -E '^headgrad one model|^ensemble K=|^heads_compare H=8|^ensemble vs alone' "$out/ensemble.log" || true
  fi
  for b in bench bench_tf32; do
    if [ -f "$out/$b.log" ]; then
      grep -E '^GPU:|^sgemm|^peak GPU|FAILED' "$out/$b.log" | sed "s/^/$b: /" || true
    fi
  done
  echo "--- steps"
  for s in ${steps//,/ }; do echo "$s: ${status[$s]:-not run}"; done
} | tee -a "$summary"
if [ $failed = 1 ]; then
  note "gpu_run: some steps FAILED (see above); logs in $out"
  exit 1
fi
note "gpu_run: all steps passed; logs in $out"
