"""Autograd from Python: backward (with a gradient), .grad, retain_grad, no_grad, tensor
hooks written in Python, autograd.grad and gradcheck, checked against torch 1.13."""
import threading

import numpy as np
import pytest

import headgrad as hg


def test_backward_fills_grad_like_torch(torch):
    rng = np.random.default_rng(1)
    a = rng.standard_normal((3, 5))
    w = rng.standard_normal((5, 4))
    x = hg.tensor(a, requires_grad=True)
    W = hg.tensor(w, requires_grad=True)
    tx = torch.tensor(a, requires_grad=True)
    tW = torch.tensor(w, requires_grad=True)
    y = (x @ W).tanh()
    ty = (tx @ tW).tanh()
    g = rng.standard_normal((3, 4))
    y.backward(hg.tensor(g))
    ty.backward(torch.tensor(g))
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(W.grad.numpy(), tW.grad.numpy(), rtol=1e-12)
    assert x.is_leaf and not y.is_leaf and y.grad_fn is not None


def test_retain_grad_and_grad_accumulation():
    x = hg.ones(3, requires_grad=True)
    h = x * 2
    h.retain_grad()
    (h * h).sum().backward()
    np.testing.assert_allclose(h.grad.numpy(), [4.0, 4.0, 4.0])
    (x * 3).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [8 + 3] * 3)
    x.grad = None
    assert x.grad is None


def test_no_grad_records_nothing():
    x = hg.ones(2, requires_grad=True)
    with hg.no_grad():
        y = x * 2
        assert not hg.is_grad_enabled()
    assert hg.is_grad_enabled()
    assert not y.requires_grad

    @hg.no_grad()
    def f(t):
        return t * 3
    assert not f(x).requires_grad
    with hg.set_grad_enabled(False):
        assert not (x + 1).requires_grad
    assert (x + 1).requires_grad


def test_python_tensor_hooks_see_and_replace_the_gradient():
    x = hg.ones(3, requires_grad=True)
    seen = []
    handle = x.register_hook(lambda g: seen.append(g.numpy().copy()))
    (x * 2).sum().backward()
    assert len(seen) == 1 and seen[0].tolist() == [2, 2, 2]
    handle.remove()
    x.grad = None
    h2 = x.register_hook(lambda g: g * 10)
    (x * 2).sum().backward()
    assert x.grad.tolist() == [20, 20, 20]
    h2.remove()

    def bad(g):
        return "not a tensor"
    x.register_hook(bad)
    with pytest.raises(hg.ValueError, match="a tensor hook returned a str"):
        (x * 2).sum().backward()


def test_autograd_grad_returns_gradients_without_accumulating(torch):
    x = hg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = hg.tensor([0.5], requires_grad=True)
    out = (x * x).sum() * y.sum()
    gx, gy = hg.autograd.grad(out, [x, y])
    np.testing.assert_allclose(gx.numpy(), [1.0, 2.0, 3.0])
    np.testing.assert_allclose(gy.numpy(), [14.0])
    assert x.grad is None
    # An input the output does not use: an error, or None with allow_unused (torch's rule).
    unused = hg.ones(1, requires_grad=True)
    with pytest.raises(hg.AutogradError, match="allow_unused=True"):
        hg.autograd.grad((x * 2).sum(), [unused])
    (gu,) = hg.autograd.grad((x * 2).sum(), [unused], allow_unused=True)
    assert gu is None
    tx, tu = torch.ones(3, requires_grad=True), torch.ones(1, requires_grad=True)
    with pytest.raises(RuntimeError, match="allow_unused=True"):
        torch.autograd.grad((tx * 2).sum(), [tu])
    assert torch.autograd.grad((tx * 2).sum(), [tu], allow_unused=True) == (None,)
    # Tensors print as torch's do.
    assert "requires_grad=True" in repr(x) and "requires_grad=True" in repr(torch.ones(1, requires_grad=True))


def test_gradcheck_passes_and_fails():
    x = hg.randn(3, 4, dtype=hg.float64, requires_grad=True)
    assert hg.autograd.gradcheck(lambda t: (t.tanh() * t).sum(dim=1), [x])

    def wrong(t):  # t.detach() * t: backward sees only one factor, differences see both
        return (t.detach() * t).sum(dim=1)
    with pytest.raises(hg.AutogradError, match="gradcheck"):
        hg.autograd.gradcheck(wrong, [x])


def test_backward_releases_the_gil():
    # A Python thread counts while a long backward runs in C++; with the GIL held it could
    # not advance at all until backward returned.
    hg.set_num_threads(1)
    x = hg.randn(256, 256, requires_grad=True)
    y = x
    for _ in range(400):
        y = (y @ x).tanh()
    loss = y.sum()
    count = [0]
    done = threading.Event()

    def spin():
        while not done.is_set():
            count[0] += 1
    t = threading.Thread(target=spin)
    t.start()
    before = count[0]
    loss.backward()
    during = count[0] - before
    done.set()
    t.join()
    assert during > 1000, during
