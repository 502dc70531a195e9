#!/usr/bin/env python3
"""Writes every ```cpp block of a Markdown file as a C++ program of its own, for the tests
that compile and run the documentation's snippets (tests/CMakeLists.txt).

    extract_snippets.py DOC.md OUT_DIR PREFIX

Block n (counted from 1 in the file's order) becomes OUT_DIR/PREFIX_n.cpp. A block is
compiled as written: its #include lines open the file, the rest becomes the body of
int main(); a block that defines its own main() is copied unchanged. #line directives point
compiler errors at the Markdown file. Files whose text would not change are left alone (no
rebuild), and files of blocks that no longer exist are removed. Prints the names written,
one per line, in order.
"""
import pathlib
import re
import sys

FENCE_OPEN = re.compile(r"^```cpp\s*$")
FENCE_CLOSE = re.compile(r"^```\s*$")
HAS_MAIN = re.compile(r"^\s*int\s+main\s*\(", re.MULTILINE)


def blocks(lines):
    """(first line number of the code, code lines) for each ```cpp block."""
    inside, start, body = False, 0, []
    for number, line in enumerate(lines, start=1):
        if not inside and FENCE_OPEN.match(line):
            inside, start, body = True, number + 1, []
        elif inside and FENCE_CLOSE.match(line):
            inside = False
            yield start, body
        elif inside:
            body.append(line)
    if inside:
        sys.exit(f"extract_snippets: a ```cpp block opened at line {start - 1} is never closed")


def program(doc, start, body):
    quoted = str(doc).replace("\\", "\\\\").replace('"', '\\"')
    text = "\n".join(body)
    if HAS_MAIN.search(text):
        return f'#line {start} "{quoted}"\n{text}\n'
    includes = [(start + i, l) for i, l in enumerate(body) if l.lstrip().startswith("#include")]
    rest = [(start + i, l) for i, l in enumerate(body) if not l.lstrip().startswith("#include")]
    out = [f'#line {n} "{quoted}"\n{l}' for n, l in includes]
    out.append("int main() {")
    if rest:
        out.append(f'#line {rest[0][0]} "{quoted}"')
        out.extend(l for _, l in rest)
    out.append("  return 0;\n}")
    return "\n".join(out) + "\n"


def main():
    if len(sys.argv) != 4:
        sys.exit("usage: extract_snippets.py DOC.md OUT_DIR PREFIX")
    doc, out_dir, prefix = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2]), sys.argv[3]
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for index, (start, body) in enumerate(blocks(doc.read_text().splitlines()), start=1):
        path = out_dir / f"{prefix}_{index}.cpp"
        text = program(doc, start, body)
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
        written.append(path.name)
    for stale in out_dir.glob(f"{prefix}_*.cpp"):
        if stale.name not in written:
            stale.unlink()
    if not written:
        sys.exit(f"extract_snippets: {doc} has no ```cpp block")
    print("\n".join(written))


if __name__ == "__main__":
    main()
