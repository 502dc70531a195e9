"""Every public function, class, method and property of headgrad has a docstring: the test
walks the package (headgrad and its public submodules, each public class's own methods and
properties) and lists every name whose __doc__ is empty, or holds nothing but the
signature lines that pybind11 writes on its own."""
import re
import types

import headgrad as hg

# pybind11 writes a callable's signature as the first line of its __doc__,
# "name(self: T, x: int = 0) -> T", and for overloads "name(*args, **kwargs)",
# "Overloaded function." and one numbered signature per overload ("1. name(...) -> T"),
# each followed by that overload's docstring. A docstring that is itself nothing but
# signatures ("zeros(*size, dtype=None)") says nothing more, and counts as empty too.
_OVERLOADED = "Overloaded function."
_NUMBERED = re.compile(r"^(\d+)\.\s+[A-Za-z_]\w*\(.*$", re.M)
_BARE_SIGNATURE = re.compile(r"^\s*[A-Za-z_][\w.]*\([^()]*(?:\([^()]*\)[^()]*)*\)"
                             r"(?:\s*->\s*[\w.\[\], ]*)?\s*$")


def _is_pybind(obj):
    """Whether obj is a pybind11 function, method or class (whose __doc__ pybind11 writes)."""
    return type(obj).__name__ in ("builtin_function_or_method", "instancemethod") or (
        isinstance(obj, type) and any(t.__name__ == "pybind11_object" for t in obj.__mro__))


def _own_text(text):
    """The text less the lines that are only a signature."""
    return "\n".join(ln for ln in text.splitlines() if not _BARE_SIGNATURE.match(ln)).strip()


def _sections(doc, pybind_callable):
    """The docstring's own text, one entry per overload: for a pybind11 callable, each
    overload's text after its signature line; otherwise the whole docstring."""
    if not pybind_callable:
        return [doc]
    lines = doc.splitlines()
    if len(lines) > 1 and lines[1].strip() == _OVERLOADED:
        parts = _NUMBERED.split("\n".join(lines[2:]))
        # ['', '1', 'text of 1', '2', 'text of 2', ...]
        return [parts[i + 1] for i in range(1, len(parts) - 1, 2)]
    return ["\n".join(lines[1:])]


def _missing(obj, pybind_callable):
    """Why obj's docstring does not count ("empty", "overload 2 empty"), or None."""
    doc = obj.__doc__ if isinstance(obj.__doc__, str) else ""
    sections = [_own_text(s) for s in _sections(doc, pybind_callable)]
    if not any(sections):
        return "empty"
    bare = [str(i + 1) for i, s in enumerate(sections) if not s]
    return "overload %s empty" % ", ".join(bare) if bare else None


def _public_modules():
    """headgrad and its public submodules, found by walking the package's attributes."""
    found, todo = [], [hg]
    while todo:
        module = todo.pop(0)
        if module in found:
            continue
        found.append(module)
        for name, value in sorted(vars(module).items()):
            if (isinstance(value, types.ModuleType) and not name.startswith("_")
                    and value.__name__.startswith("headgrad.")
                    and not value.__name__.split(".")[-1].startswith("_")):
                todo.append(value)
    return found


def _class_members(cls):
    """(name, object, pybind) for the class's own public methods, properties and nested
    classes, and its __init__ where it defines one: in Python, or in pybind11 with py::init
    (a pybind11 class without one holds only the slot wrapper "Initialize self")."""
    pybind_enum = _is_pybind(cls) and hasattr(cls, "__members__")
    for name, raw in sorted(vars(cls).items()):
        if name.startswith("_") and name != "__init__":
            continue
        if pybind_enum and name in ("__init__", "name", "value"):
            continue  # pybind11's own members of every enum (py::enum_)
        if isinstance(raw, (staticmethod, classmethod)):
            raw = raw.__func__
        if isinstance(raw, property):
            yield name, raw, False  # pybind11 writes no signature into a property
        elif isinstance(raw, type):
            yield name, raw, _is_pybind(raw)
        elif name == "__init__" and type(raw).__name__ == "wrapper_descriptor":
            continue
        elif callable(raw):
            yield name, raw, _is_pybind(raw)
        # Other class attributes (enum values, constants) carry their type's docstring.


def _walk():
    """(qualified name, reason) for every public callable, class, method and property of
    headgrad without a docstring of its own."""
    failures, seen = [], set()

    def check(qualname, obj, pybind):
        reason = _missing(obj, pybind)
        if reason:
            failures.append((qualname, reason))

    def visit_class(qualname, cls):
        if id(cls) in seen:
            return
        seen.add(id(cls))
        check(qualname, cls, False)
        for name, member, pybind in _class_members(cls):
            if isinstance(member, type):
                visit_class(qualname + "." + name, member)
            elif id(member) not in seen:
                seen.add(id(member))
                check(qualname + "." + name, member, pybind)

    for module in _public_modules():
        for name, value in sorted(vars(module).items()):
            if name.startswith("_") or isinstance(value, types.ModuleType):
                continue
            qualname = module.__name__ + "." + name
            if isinstance(value, type):
                visit_class(qualname, value)
            elif callable(value) and id(value) not in seen:
                seen.add(id(value))
                check(qualname, value, _is_pybind(value))
    return failures


def test_the_walk_sees_the_package_and_reads_pybind11s_signatures():
    names = {m.__name__ for m in _public_modules()}
    for sub in ("nn", "nn.functional", "nn.utils", "optim", "inspect", "train", "autograd",
                "cuda", "study"):
        assert "headgrad." + sub in names
    assert _sections("f(self: T, x: int = 0) -> T\n", True) == [""]
    assert _sections("f(x: int) -> T\n\nThe sum.\n", True) == ["\nThe sum."]
    overloaded = ("f(*args, **kwargs)\nOverloaded function.\n\n1. f(x: int) -> T\n\nOne.\n\n"
                  "2. f(x: str) -> T\n")
    assert [s.strip() for s in _sections(overloaded, True)] == ["One.", ""]
    assert _own_text("zeros(*size, dtype=None) -> Tensor") == ""
    assert _own_text("grad(a, b) -> tuple: the gradients.") != ""
    assert _own_text("f(x, y=(1, 2)) -> Tuple[int, int]") == ""
    assert _own_text("F(p, q): metric(x) = x[p] - x[q], each in [0, n)") != ""

    class Documented:
        """A class."""

        def method(self):
            """A method."""

    assert _missing(Documented, False) is None and _missing(Documented.method, False) is None
    assert _missing(lambda: None, False) == "empty"
    assert _missing(hg.Tensor.dim, True) in (None, "empty")


def test_every_public_name_has_a_docstring():
    failures = _walk()
    listing = "\n".join("  %s: %s" % f for f in failures)
    assert not failures, "%d public names without a docstring:\n%s" % (len(failures), listing)
