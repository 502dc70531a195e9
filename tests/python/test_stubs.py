"""The type stubs of the compiled module (python/headgrad/_headgrad/*.pyi) name exactly what
the module has: every function, class, method and property, in every submodule. A binding
added or removed without rerunning scripts/make_python_stubs.py fails here, naming it; so
does a parameter pybind11 had to call arg0, arg1 ... (a binding without py::arg)."""
import ast
import importlib.util
import os
import re

import headgrad

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SOURCE = os.path.join(ROOT, "python", "headgrad", "_headgrad")
FIX = ("rerun: PYTHONPATH=build/release/python /usr/bin/python3 scripts/make_python_stubs.py")


def generator():
    spec = importlib.util.spec_from_file_location(
        "make_python_stubs", os.path.join(ROOT, "scripts", "make_python_stubs.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def names(stub_text, prefix):
    """Every top-level name of a stub and every Class.member, prefixed."""
    found = set()
    for node in ast.parse(stub_text).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            found.add(prefix + node.name)
        elif isinstance(node, ast.AnnAssign):
            found.add(prefix + node.target.id)
        if isinstance(node, ast.ClassDef):
            for member in node.body:
                if isinstance(member, ast.FunctionDef):
                    found.add(prefix + node.name + "." + member.name)
    return found


def committed():
    found = set()
    for f in os.listdir(SOURCE):
        if f.endswith(".pyi"):
            sub = f[:-4]
            with open(os.path.join(SOURCE, f), encoding="utf-8") as stub:
                found |= names(stub.read(), "" if sub == "__init__" else sub + ".")
    return found


def test_the_stubs_name_what_the_module_has():
    make = generator()
    module = headgrad._headgrad
    expected = names(make.module_stub(module, ""), "")
    for sub, obj in vars(module).items():
        if type(obj) is type(module):
            expected |= names(make.module_stub(obj, sub), sub + ".")
    have = committed()
    missing, extra = sorted(expected - have), sorted(have - expected)
    assert not missing and not extra, (
        f"the stubs lack {missing[:20]} and name {extra[:20]}, which the module lacks; {FIX}")
    assert len(have) > 500  # the walk found the module's bindings at all


def test_the_built_package_carries_the_stubs_and_the_typed_marker():
    package = os.path.dirname(headgrad.__file__)
    for f in os.listdir(SOURCE):
        if f.endswith(".pyi"):
            assert os.path.exists(os.path.join(package, "_headgrad", f)), f
    assert os.path.exists(os.path.join(package, "py.typed"))


def test_a_stub_names_the_arguments_and_result_of_a_binding():
    text = open(os.path.join(SOURCE, "__init__.pyi"), encoding="utf-8").read()
    assert "def tensor(data: object, *, dtype: object = ..., device: object = ..., " \
           "requires_grad: builtins.bool = ...) -> Tensor:" in text
    nn = open(os.path.join(SOURCE, "nn.pyi"), encoding="utf-8").read()
    assert "def batch_first(self) -> builtins.bool: ..." in nn


UNNAMED = re.compile(r"^arg\d+$")


def unnamed_parameters(stub_text, prefix):
    """'prefix + function: parameter' for every parameter pybind11 named argN (a binding
    without py::arg) in a stub's functions and methods, dunder methods aside."""
    found = []

    def check(function, qualname):
        if function.name.startswith("__") and function.name.endswith("__"):
            return  # __getitem__(self, arg0) and the like keep pybind11's names
        a = function.args
        for arg in a.posonlyargs + a.args + a.kwonlyargs:
            if UNNAMED.match(arg.arg):
                found.append(f"{prefix}{qualname}: {arg.arg}")

    for node in ast.parse(stub_text).body:
        if isinstance(node, ast.FunctionDef):
            check(node, node.name)
        elif isinstance(node, ast.ClassDef):
            for member in node.body:
                if isinstance(member, ast.FunctionDef):
                    check(member, node.name + "." + member.name)
    return found


def test_no_stub_function_has_an_unnamed_parameter():
    assert unnamed_parameters("def f(arg0: int) -> None: ...\nclass C:\n"
                              "    def __getitem__(self, arg0: int) -> int: ...\n"
                              "    def g(self, x: int, arg1: int) -> None: ...\n", "m.") == [
        "m.f: arg0", "m.C.g: arg1"]
    found = []
    for f in sorted(os.listdir(SOURCE)):
        if f.endswith(".pyi"):
            sub = f[:-4]
            with open(os.path.join(SOURCE, f), encoding="utf-8") as stub:
                found += unnamed_parameters(stub.read(), "" if sub == "__init__" else sub + ".")
    assert not found, (
        f"{len(found)} parameters without a name (give each binding py::arg(\"...\"), as "
        f"PyTorch names it, then {FIX}): {found}")
