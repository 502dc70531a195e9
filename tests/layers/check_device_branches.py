#!/usr/bin/env python3
"""Fails when an op under src/ops branches on the device or calls the CUDA backend itself.

Ops get their kernels from their inputs' device through one interface, `kernels_for(device)`
(src/core/kernels.hpp), which the CPU (src/ops/cpu) and the CUDA backend both implement; an
`is_cuda()` or `is_cpu()` test or a `cuda::` call under src/ops (outside src/ops/cpu, the CPU's
kernels) is a device branch the interface should hold. The ops still being moved onto the
interface are listed in PENDING with their current number of such lines: a file not listed
may have none, a listed file may not have more, and one that has fewer must have its entry
lowered (or removed at zero), so the list only shrinks. Run by CTest with the source root as its argument.
"""
import pathlib
import re
import sys

BRANCH = re.compile(r"\bis_cuda\(\)|\bis_cpu\(\)|\bcuda::")
# src/ops file -> lines with a device branch, until its op moves onto Kernels.
PENDING: dict[str, int] = {}


def branch_lines(path):
    lines = path.read_text(encoding="utf-8").splitlines()
    return [(i + 1, line.strip()) for i, line in enumerate(lines)
            if BRANCH.search(line.split("//", 1)[0])]


def main():
    if len(sys.argv) != 2:
        print("usage: check_device_branches.py SOURCE_ROOT", file=sys.stderr)
        return 2
    ops = pathlib.Path(sys.argv[1]).resolve() / "src" / "ops"
    problems = []
    for path in sorted(ops.rglob("*")):
        if path.suffix not in {".cpp", ".hpp"} or not path.is_file():
            continue
        name = path.relative_to(ops).as_posix()
        if name.startswith("cpu/"):
            continue  # the CPU's own kernels
        found = branch_lines(path)
        allowed = PENDING.get(name, 0)
        if len(found) > allowed:
            for line, text in found:
                problems.append(f"src/ops/{name}:{line}: device branch: {text}")
            problems.append(f"src/ops/{name}: {len(found)} device-branch lines, {allowed} allowed: "
                            "call kernels_for(tensor.device(), op).<kernel>(...) and implement the "
                            "kernel in src/ops/cpu and src/cuda")
        elif len(found) < allowed:
            problems.append(f"src/ops/{name}: {len(found)} device-branch lines, fewer than the "
                            f"{allowed} PENDING allows: lower its entry in {pathlib.Path(__file__).name}")
    for line in problems:
        print(line)
    if problems:
        return 1
    print(f"no new device branches under src/ops ({sum(PENDING.values())} lines pending in "
          f"{len(PENDING)} files)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
