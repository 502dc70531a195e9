#!/usr/bin/env python3
"""Fails when a document names a file or folder of the repository that does not exist.

    check_doc_paths.py ROOT [DOC ...]

Checks README.md and every docs/**/*.md under ROOT (or the DOCs given): each `code span`
that starts with one of the repository's top-level folders (src/, include/, docs/, tests/,
examples/, bench/, python/, scripts/, results/, ...) and each relative Markdown link target.
Spans with a wildcard or placeholder (*, <, {, $) and generated folders (build/, runs/) are
not paths to check. Prints every missing path with its file and line; exit 1 if any.
"""
import pathlib
import re
import sys

SPAN = re.compile(r"`([^`\s]+)`")
LINK = re.compile(r"\]\(([^)\s]+)\)")
GENERATED = ("build/", "runs/", "out/")


def candidates(root, doc, line):
    tops = {p.name + "/" for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")}
    for span in SPAN.findall(line):
        span = span.rstrip(".,;:")
        if any(c in span for c in "*<{$") or span.startswith(GENERATED):
            continue
        if any(span.startswith(t) for t in tops):
            yield span, root / span.split(":")[0]
    for target in LINK.findall(line):
        if re.match(r"^[a-z]+:", target) or target.startswith("#"):
            continue
        path = target.split("#")[0]
        if path and not any(c in path for c in "*<{$"):
            yield target, (doc.parent / path)


def main():
    root = pathlib.Path(sys.argv[1]).resolve()
    docs = [pathlib.Path(d) for d in sys.argv[2:]] or \
        [root / "README.md"] + sorted((root / "docs").rglob("*.md"))
    missing = []
    for doc in docs:
        if "node_modules" in doc.parts:
            continue
        for number, line in enumerate(doc.read_text(encoding="utf-8").splitlines(), start=1):
            for name, path in candidates(root, doc, line):
                if not path.exists():
                    missing.append(f"{doc.relative_to(root) if doc.is_relative_to(root) else doc}:"
                                   f"{number}: {name} does not exist")
    for m in missing:
        print(m)
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
