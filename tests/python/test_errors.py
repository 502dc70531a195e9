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


def test_arguments_pybind_cannot_convert_get_messages_naming_them():
    with pytest.raises(hg.OverflowError, match=r"zeros: the entry 9223372036854775808 at "
                                               r"position 0 is out of range"):
        hg.zeros(2**63)
    assert issubclass(hg.OverflowError, OverflowError) and issubclass(hg.OverflowError, hg.Error)
    with pytest.raises(OverflowError, match=r"reshape.*position 1"):
        hg.zeros(4).reshape(2, -2**63 - 1)
    with pytest.raises(TypeError, match=r"ones: sizes and dims are ints, got float 2.5 at "
                                        r"position 1"):
        hg.ones(2, 2.5)
    with pytest.raises(TypeError, match=r"SGD: params must be Tensors \(got int at position 0\)"):
        hg.optim.SGD([1, 2], lr=0.1)
    with pytest.raises(TypeError, match=r"AdamW: params must be Tensors \(got dict at position 1\)"
                                        r".*parameter groups"):
        hg.optim.AdamW([hg.zeros(2, requires_grad=True), {"params": []}])
    with pytest.raises(TypeError, match="Adam: params must be an iterable of Tensors, got a Tensor"):
        hg.optim.Adam(hg.zeros(2, requires_grad=True))
    p = hg.ones(3, requires_grad=True)
    p.grad = hg.ones(3)
    assert hg.optim.clip_grad_norm_(p, 1.0) == pytest.approx(3 ** 0.5)  # one Tensor, as torch


def test_a_task_too_large_for_memory_is_refused_before_allocating():
    task = hg.train.make_task("copy", length=10**8)
    with pytest.raises(hg.MemoryError, match=r"copy.batch: a batch of 64 examples of up to "
                                             r"200000001 positions .* length"):
        task.batch("train", 0, 64)
