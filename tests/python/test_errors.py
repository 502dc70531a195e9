"""headgrad's exceptions arrive in Python as classes that are also the Python exception a
caller would catch, with the library's message."""
import pytest

import headgrad as hg


def test_exception_classes_subclass_pythons():
    assert issubclass(hg.ShapeError, hg.Error) and issubclass(hg.ShapeError, ValueError)
    assert issubclass(hg.IndexError, IndexError) and issubclass(hg.ValueError, ValueError)
    assert issubclass(hg.DTypeError, TypeError) and issubclass(hg.MemoryError, MemoryError)
    assert issubclass(hg.IOError, OSError) and issubclass(hg.Error, RuntimeError)


def test_messages_are_the_librarys():
    with pytest.raises(hg.ShapeError, match=r"matmul: \(2,3\) @ \(4,5\): inner dimensions 3 and 4 differ"):
        hg.zeros(2, 3) @ hg.zeros(4, 5)
    with pytest.raises(ValueError):
        hg.zeros(2, 3) + hg.zeros(4)
    with pytest.raises(hg.IndexError):
        hg.zeros(2).select(0, 5)
    with pytest.raises(hg.DTypeError):
        hg.nn.functional.cross_entropy(hg.zeros(2, 3), hg.zeros(2))
    with pytest.raises(hg.ValueError, match="make_task"):
        hg.train.make_task("no_such_task")
    with pytest.raises(hg.AutogradError, match="detach"):
        hg.ones(2, requires_grad=True).numpy()
    with pytest.raises(hg.DTypeError, match="float32, float64, int64, bool"):
        hg.zeros(2, dtype="complex64")
    with pytest.raises(hg.ValueError, match="head count"):
        hg.study.heads_compare(preset="smoke", heads=[3], out="unused", quiet=True)
    with pytest.raises(TypeError, match="unknown option"):
        hg.study.heads_compare(preset="smoke", layers=2)
