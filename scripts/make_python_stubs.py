#!/usr/bin/env python3
"""Writes python/headgrad/_headgrad/*.pyi, the type stubs of the compiled module and its
submodules (nn, optim, inspect, ...), from the built module itself: every function, class, method and property with the signature that
pybind11 records in its docstring (overloads as typing.overload), and the docstring's
first paragraph. Editors complete and check calls with it; tests/python/test_stubs.py
fails when the stubs and the module name different things. Run it after changing a
binding:

    cmake --build --preset release --target headgrad_python
    PYTHONPATH=build/release/python /usr/bin/python3 scripts/make_python_stubs.py
"""
import ast
import inspect
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "python", "headgrad", "_headgrad")
MODULE = "headgrad._headgrad"
HEADER = '''"""Type stubs of {name} (written by scripts/make_python_stubs.py from the module's
own signatures; do not edit by hand)."""
import builtins
import os
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple, Union, overload

import numpy
{imports}'''
CURRENT = [""]  # the submodule being written ("" = the top module), for clean()
# pybind11's spellings -> names the stub can resolve.
QUALIFIED = re.compile(r"\bheadgrad\._headgrad((?:\.[a-z_]+)?)\.(\w+)")
RENAMES = [(re.compile(r"\bnumpy\.ndarray\[[^\]]*\]"), "numpy.ndarray"),
           (re.compile(r"\bpathlib\.Path\b"), "os.PathLike"), (re.compile(r"\bos\.PathLike\[[^\]]*\]"), "os.PathLike"),
           # the module's dtypes headgrad.bool and headgrad.float shadow the builtins here
           (re.compile(r"(?<![\w.])(bool|float)\b"), r"builtins.\1")]
SIGNATURE = re.compile(r"^(?:\d+\. )?(\w*)(\(.*\))(?: -> (.+))?$")


def split_top_level(text):
    """`text` split at the commas outside brackets."""
    parts, depth, start = [], 0, 0
    for i, c in enumerate(text):
        if c in "([{<":
            depth += 1
        elif c in ")]}>":
            depth -= 1
        elif c == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p.strip() for p in parts if p.strip()]


def qualified(match):
    """headgrad._headgrad[.sub].Name as the stub of CURRENT[0] names it."""
    sub, name = match.group(1).lstrip("."), match.group(2)
    if sub == CURRENT[0]:
        return name
    if CURRENT[0] == "":
        return f"{sub}.{name}"
    return f"_hg.{sub}.{name}" if sub else f"_hg.{name}"


def clean(annotation):
    annotation = QUALIFIED.sub(qualified, annotation)
    for pattern, replacement in RENAMES:
        annotation = pattern.sub(replacement, annotation)
    return annotation


def stub_arguments(arguments):
    """pybind11's '(a: int, b: Tensor = <...>)' as a stub's argument list, defaults '...'."""
    out = []
    for arg in split_top_level(arguments[1:-1]):
        name_and_type, has_default, _ = arg.partition(" = ")
        out.append(clean(name_and_type) + (" = ..." if has_default else ""))
    return "(" + ", ".join(out) + ")"


def signatures(obj, name=None):
    """The (arguments, result) pairs of pybind11's docstring signature lines of `obj` (a
    property's getter: any name)."""
    found = []
    for line in (obj.__doc__ or "").splitlines():
        m = SIGNATURE.match(line.strip())
        if m and (name is None or m.group(1) == name):
            found.append((stub_arguments(m.group(2)), clean(m.group(3) or "None")))
    return found


def summary(obj):
    """The docstring's first paragraph after the signature lines, as a stub docstring."""
    lines = [l for l in (obj.__doc__ or "").splitlines()
             if not SIGNATURE.match(l.strip()) and l.strip() != "Overloaded function."]
    text = "\n".join(lines).strip().split("\n\n")[0].strip().replace('"""', "'''")
    return text.replace("\\", "\\\\")


def parses(source):
    try:
        ast.parse(source)
        return True
    except SyntaxError:
        return False


def function_stub(obj, indent, is_method):
    """A def (or one per overload) for a pybind11 function or method."""
    sigs = signatures(obj, obj.__name__) or [("(self, *args: Any, **kwargs: Any)" if is_method
                                else "(*args: Any, **kwargs: Any)", "Any")]
    text = summary(obj)
    out = []
    for arguments, result in sigs:
        head = f"def {obj.__name__}{arguments} -> {result}:"
        if not parses(head + " ..."):
            head = f"def {obj.__name__}({'self, ' if is_method else ''}*args: Any, **kwargs: Any) -> Any:"
        if len(sigs) > 1:
            out.append(indent + "@overload")
        body = f' """{text}"""' if text and len(sigs) == 1 else " ..."
        out.append(indent + head + body)
    return out


def base_names(cls, module):
    """cls's bases as the stub names them: builtins (the exceptions) and the module's own."""
    names = [("builtins." if b.__module__ == "builtins" else "") + b.__name__
             for b in cls.__bases__
             if b.__module__ == "builtins" and b.__name__ not in ("object", "pybind11_object")
             or getattr(module, b.__name__, None) is b and not b.__name__.startswith("_")]
    return f"({', '.join(names)})" if names else ""


def class_stub(cls, module):
    out = [f"class {cls.__name__}{base_names(cls, module)}:"]
    text = summary(cls)
    if text:
        out.append(f'    """{text}"""')
    for name, member in sorted(vars(cls).items()):
        if name.startswith("_") and name not in ("__init__", "__call__", "__getitem__",
                                                 "__setitem__", "__len__", "__iter__"):
            continue
        if isinstance(member, property):
            out.append("    @property")
            result = "Any"
            if member.fget is not None and signatures(member.fget):
                result = signatures(member.fget)[0][1]
                result = result if parses(f"x: {result}") else "Any"
            out.append(f"    def {name}(self) -> {result}: ...")
        elif isinstance(member, staticmethod):
            out += ["    @staticmethod"] + function_stub(member.__func__, "    ", False)
        elif callable(member) and hasattr(member, "__name__"):
            if name == "__init__" and not signatures(member, name):
                continue  # no constructor bound: pybind11's inherited __init__
            out += function_stub(member, "    ", True)
        elif not callable(member):
            out.append(f"    {name}: Any")
    if len(out) == 1:
        out.append("    ...")
    return out


def module_stub(module, sub):
    """The stub text of `module`, the top module (sub "") or its submodule `sub`."""
    CURRENT[0] = sub
    subs = sorted(n for n, v in vars(module).items() if inspect.ismodule(v)) if not sub else []
    imports = ("\nfrom . import " + ", ".join(subs) + "\n") if subs else (
        "\nimport headgrad._headgrad as _hg\n" if sub else "")
    lines = [HEADER.format(name=module.__name__, imports=imports)]
    for name, obj in sorted(vars(module).items()):
        if name.startswith("_") or inspect.ismodule(obj):
            continue
        if inspect.isclass(obj):
            lines += [""] + class_stub(obj, module)
        elif callable(obj):
            lines += [""] + function_stub(obj, "", False)
        else:
            kind = type(obj).__name__
            lines.append(f"{name}: {kind if getattr(module, kind, None) is type(obj) else 'Any'}")
    text = "\n".join(lines) + "\n"
    if not parses(text):
        sys.exit(f"make_python_stubs: the stubs of {module.__name__} do not parse; nothing written")
    return text


def write_atomically(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)


def main():
    module = __import__(MODULE, fromlist=["_"])
    stubs = {"__init__": module_stub(module, "")}
    for sub, obj in sorted(vars(module).items()):
        if inspect.ismodule(obj):
            stubs[sub] = module_stub(obj, sub)
    os.makedirs(OUT, exist_ok=True)
    for name, text in stubs.items():
        write_atomically(os.path.join(OUT, name + ".pyi"), text)
    stale = [f for f in os.listdir(OUT) if f.endswith(".pyi") and f[:-4] not in stubs]
    for f in stale:
        os.remove(os.path.join(OUT, f))
    lines = sum(t.count("\n") for t in stubs.values())
    print(f"make_python_stubs: wrote {len(stubs)} files in {OUT} ({lines} lines)")


if __name__ == "__main__":
    main()
