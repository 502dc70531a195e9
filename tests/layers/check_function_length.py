#!/usr/bin/env python3
"""Fails when a function of the library, the Python bindings, the examples, the benchmarks
or the tools (src/, include/, python/src/, examples/, bench/, tools/) is longer than 60 lines
and not marked.

A function's length is the number of lines between its body's braces. A longer function
is allowed when the comment block right above its definition says why, in a line that
contains "Longer than 60 lines" (for example "// Longer than 60 lines: one loop nest that
the compiler must see whole."). Each offender is reported as path:line: name, length.
Run by CTest (tests/CMakeLists.txt) with the source root as its argument.

Outside src/ and include/ the functions still to be split are listed in PENDING with their
current length: a listed function may not grow, and one that is split (or shortened to the
limit) must leave the list, so it only shrinks.

The scan is lexical, so that it takes a second rather than a compiler's parse of every
file: comments, string and character literals and preprocessor lines are blanked, then
every brace block that opens at namespace or class scope right after a parameter list's
")" (optionally followed by const, noexcept, override, final, a trailing return type or a
constructor's initialiser list) is a function body. Lambdas and statements inside a
function are part of that function.
"""
import pathlib
import re
import sys

LIMIT = 60
# "path:function" -> its current length, until it is split (never under src/ or include/).
PENDING: dict[str, int] = {}
MARK = "Longer than 60 lines"
SUFFIXES = {".hpp", ".cpp", ".cu", ".cuh", ".h"}
# ")" then qualifiers / a trailing return type, right before "{".
AFTER_PARAMETERS = re.compile(
    r"\)\s*(?:const|noexcept|override|final|mutable|&&|&|\s)*(?:->\s*[\w:<>,\s\*&]+)?$")
# A constructor's initialiser list: ") : member_(x), other_(y)" ending in ")".
INITIALISERS = re.compile(r"\)\s*:\s*[\w:]+\s*[\(\{][^;{}]*[\)\}]\s*$")


def blank(text):
    """The text with comments, literals and preprocessor lines replaced by spaces
    (newlines kept, so offsets keep their line numbers)."""
    out, i, n = [], 0, len(text)
    while i < n:
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
        elif text.startswith('R"', i) and re.match(r'R"([^(\s]*)\(', text[i:]):
            delimiter = re.match(r'R"([^(\s]*)\(', text[i:]).group(1)
            j = text.find(")" + delimiter + '"', i)
            j = n if j < 0 else j + len(delimiter) + 2
        elif text[i] in "\"'" and not (text[i] == "'" and i > 0 and text[i - 1].isalnum()):
            quote, j = text[i], i + 1
            while j < n and text[j] != quote and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j += 1
        else:
            out.append(text[i])
            i += 1
            continue
        out.append("".join(c if c == "\n" else " " for c in text[i:j]))
        i = j
    lines = "".join(out).split("\n")
    return "\n".join("" if line.lstrip().startswith("#") else line for line in lines)


def function_bodies(code):
    """(open offset, close offset) of every function body at namespace or class scope."""
    stack, bodies = [], []
    for i, c in enumerate(code):
        if c == "{":
            before = code[max(0, i - 400):i].rstrip()
            is_function = bool(AFTER_PARAMETERS.search(before) or INITIALISERS.search(before))
            inside_function = any(f for _, f in stack)
            stack.append((i, is_function and not inside_function))
        elif c == "}" and stack:
            start, is_function = stack.pop()
            if is_function:
                bodies.append((start, i))
    return bodies


def marked(lines, first_line):
    """Whether the comment block above the definition that starts near first_line says why."""
    k = first_line - 1
    while k >= 0 and not lines[k].strip().startswith("//") and k > first_line - 6:
        k -= 1  # the signature may span a few lines above the brace
    while k >= 0 and lines[k].strip().startswith("//"):
        if MARK in lines[k]:
            return True
        k -= 1
    return False


def signature(code, start):
    """The name of the function whose body opens at offset `start`: the first name followed
    by "(" since the previous declaration or block ended."""
    begin = max(code.rfind(";", 0, start), code.rfind("}", 0, start), code.rfind("{", 0, start))
    names = re.findall(r"([~\w:]+)\s*\(", code[begin + 1:start])
    return names[0] if names else "?"


def offenders(root):
    found = []
    for base in ("src", "include", "python/src", "examples", "bench", "tools"):
        for path in sorted((root / base).rglob("*")):
            if path.suffix not in SUFFIXES or not path.is_file():
                continue
            text = path.read_text(encoding="utf-8")
            code, lines = blank(text), text.split("\n")
            for start, end in function_bodies(code):
                first = code.count("\n", 0, start)
                length = code.count("\n", start, end) - 1
                if length > LIMIT and not marked(lines, first):
                    found.append((path.relative_to(root), first + 1, signature(code, start),
                                  length))
    return found


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
    problems, seen = [], set()
    for path, line, name, length in offenders(root):
        key = f"{path.as_posix()}:{name}"
        seen.add(key)
        if key in PENDING and length <= PENDING[key] and path.parts[0] not in ("src", "include"):
            continue
        problems.append(f"{path}:{line}: {name} is {length} lines long (limit {LIMIT}): split it, "
                        f"or say why above it in a comment containing \"{MARK}\"")
    if (root / "src").is_dir() and (root / "examples").is_dir():  # the repository, not a fixture
        for key in sorted(set(PENDING) - seen):
            problems.append(f"{key}: no longer over {LIMIT} lines; remove it from PENDING in "
                            f"{pathlib.Path(__file__).name}")
    for line in problems:
        print(line)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
