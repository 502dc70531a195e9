#!/usr/bin/env python3
"""Fails when a header or source file of the library includes a later layer.

The library's folders are layers (docs/design.md): each may include its own folder and
the folders before it, never one after it. Every `#include "..."` under src/ and
include/headgrad/ is resolved to the layer of the file it names; an include from layer i
to layer j > i is reported with file, line and both layers, and the script exits 1.
Run by CTest (tests/CMakeLists.txt) with the source root as its argument.

The study (examples/heads_compare: its code, statistics and Python extension) sits above
the library: nothing under src/, include/ or python/src/ may include one of its files, and
the library's Python module may not link it (python/CMakeLists.txt).
"""
import pathlib
import re
import sys

# Dependency order, lowest first. `cuda` is the CUDA backend library (libheadgrad_cuda),
# loaded at run time: it implements interfaces declared in core and ops, and nothing of the
# library includes it.
LAYERS = ["core", "autograd", "ops", "nn", "optim", "distributed", "train", "inspect",
          "cuda"]
# The umbrella header is above every layer: users include it, the library never does.
UMBRELLA = "headgrad/headgrad.hpp"
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')
SOURCE_SUFFIXES = {".hpp", ".cpp", ".cu", ".cuh", ".h"}


def layer_of_path(parts):
    """The layer of a path given as parts relative to src/ or include/headgrad/."""
    if parts and parts[0] in LAYERS:
        return parts[0]
    return None


def layer_of_include(name):
    """The layer an include string names: "headgrad/<layer>/..." or "<layer>/..." (src/)."""
    parts = pathlib.PurePosixPath(name).parts
    if name == UMBRELLA:
        return "umbrella"
    if parts and parts[0] == "headgrad":
        parts = parts[1:]
    return layer_of_path(parts)


def library_files(root):
    for base in (root / "src", root / "include" / "headgrad"):
        for path in sorted(base.rglob("*")):
            if path.suffix in SOURCE_SUFFIXES and path.is_file():
                yield base, path


def study_violations(root):
    """Includes of the study's files from the library or its Python module, and a link of
    the library's module to the study."""
    study = root / "examples" / "heads_compare"
    if not study.is_dir():
        return []
    names = {p.name for p in study.rglob("*") if p.suffix in SOURCE_SUFFIXES}
    found = []
    for base in ("src", "include", "python/src"):
        for path in sorted((root / base).rglob("*")):
            if path.suffix not in SOURCE_SUFFIXES or not path.is_file():
                continue
            for lineno, line in enumerate(path.read_text().splitlines(), 1):
                match = INCLUDE.match(line)
                if match and pathlib.PurePosixPath(match.group(1)).name in names and \
                        not (path.parent / match.group(1)).exists() and \
                        not (root / "src" / match.group(1)).exists() and \
                        not (root / "include" / match.group(1)).exists():
                    found.append(f"{path.relative_to(root)}:{lineno}: includes the study's "
                                 f"{match.group(1)} (examples/heads_compare)")
    cmake = root / "python" / "CMakeLists.txt"
    if cmake.is_file() and re.search(r"target_link_libraries\(headgrad_python[^)]*heads_compare",
                                     cmake.read_text()):
        found.append("python/CMakeLists.txt: headgrad_python links the study; the study's "
                     "bindings are its own extension (headgrad_study_python)")
    return found


def main():
    if len(sys.argv) != 2:
        print("usage: check_layers.py SOURCE_ROOT", file=sys.stderr)
        return 2
    root = pathlib.Path(sys.argv[1]).resolve()
    rank = {name: i for i, name in enumerate(LAYERS)}
    violations, unplaced, arrows = [], [], set()
    files = 0
    for base, path in library_files(root):
        rel = path.relative_to(base)
        if rel.as_posix() == "headgrad.hpp":
            continue  # the umbrella itself may include everything
        files += 1
        own = layer_of_path(rel.parts)
        if own is None:
            unplaced.append(str(path.relative_to(root)))
            continue
        for lineno, line in enumerate(path.read_text().splitlines(), 1):
            match = INCLUDE.match(line)
            if not match:
                continue
            target = layer_of_include(match.group(1))
            if target is None:
                continue  # a third-party or same-folder include
            where = f"{path.relative_to(root)}:{lineno}"
            if target == "umbrella":
                violations.append(f"{where}: {own} includes the umbrella header {UMBRELLA}")
                continue
            if target != own:
                arrows.add((own, target))
            if rank[target] > rank[own]:
                violations.append(f"{where}: {own} includes {target} ({match.group(1)})")
    for path in unplaced:
        violations.append(f"{path}: not in any layer folder ({', '.join(LAYERS)})")
    violations += study_violations(root)
    print(f"checked {files} files; {len(arrows)} arrows between layers")
    for v in violations:
        print(v if "not in any layer" in v or "study" in v else "upward include: " + v)
    if violations:
        print(f"{len(violations)} violation(s) of the layer order {' -> '.join(LAYERS)}")
        return 1
    print("no include points to a later layer: " + " -> ".join(LAYERS))
    return 0


if __name__ == "__main__":
    sys.exit(main())
