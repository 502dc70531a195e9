"""Tensors and NumPy: memory shared both ways, what from_numpy copies, factories, dtypes,
indexing with PyTorch's spellings and the operators."""
import gc

import numpy as np
import pytest

import headgrad as hg


def test_numpy_shares_memory_with_the_tensor_both_ways():
    t = hg.zeros(2, 3)
    a = t.numpy()
    a[0, 1] = 5.0
    assert t[0, 1].item() == 5.0
    t.fill_(2.0)
    assert (a == 2.0).all()
    b = np.asarray(t)  # the buffer protocol / __array__
    b[1, 2] = -1.0
    assert t[1, 2].item() == -1.0


def test_the_storage_outlives_the_tensor_while_an_array_holds_it():
    t = hg.arange(0, 1000, dtype=hg.float64)
    a = t.numpy()
    del t
    gc.collect()
    hg.randn(1000, dtype=hg.float64)  # would reuse freed memory
    np.testing.assert_array_equal(a, np.arange(1000, dtype=np.float64))
    # The array holds the storage, not the tensor: a module's to() swapping its parameters'
    # storage leaves the array valid (the old values).
    lin = hg.nn.Linear(64, 64)
    w = np.asarray(lin.weight.detach())
    before = w.copy()
    lin.double()
    hg.full((64, 64), 5.0)
    np.testing.assert_array_equal(w, before)


def test_from_numpy_shares_when_it_can():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    t = hg.from_numpy(a)
    assert t.shape == (3, 4) and t.dtype == hg.float32
    a[2, 3] = 100.0
    assert t[2, 3].item() == 100.0
    t.fill_(1.0)
    assert (a == 1.0).all()
    del a
    gc.collect()
    assert t.sum().item() == 12.0  # the array outlives its Python name while t holds it
    for dtype, hg_dtype in [(np.float64, hg.float64), (np.int64, hg.int64), (np.bool_, hg.bool)]:
        b = np.zeros(5, dtype=dtype)
        s = hg.from_numpy(b)
        assert s.dtype == hg_dtype
        b[0] = 1
        assert s[0].item() == 1


def test_from_numpy_copies_what_it_cannot_share():
    base = np.arange(24, dtype=np.float32).reshape(4, 6)
    for array in [base[:, ::2],                      # not contiguous
                  base.T,                            # Fortran order
                  np.arange(5, dtype=np.int32),      # int32 -> int64
                  np.arange(5, dtype=np.float16),    # float16 -> float32
                  np.arange(5, dtype=">f4"),         # big-endian
                  np.arange(5, dtype=">f8")]:        # big-endian float64 stays float64
        t = hg.from_numpy(array)
        np.testing.assert_array_equal(t.numpy(), array)
        t.fill_(-7)
        assert not (np.asarray(array) == -7).any(), array
    ro = np.ones(3, dtype=np.float32)
    ro.setflags(write=False)
    t = hg.from_numpy(ro)
    t.fill_(3.0)
    assert (ro == 1.0).all()
    with pytest.raises(hg.ValueError, match="2\\^63"):
        hg.from_numpy(np.array([2 ** 63], dtype=np.uint64))
    assert hg.from_numpy(np.array([7], dtype=np.uint64)).tolist() == [7]
    with pytest.raises(hg.DTypeError, match="complex"):
        hg.from_numpy(np.zeros(3, dtype=np.complex64))


def test_tensor_copies_and_uses_pytorchs_default_dtypes():
    assert hg.tensor([1.0, 2.0]).dtype == hg.float32
    assert hg.tensor([1, 2]).dtype == hg.int64
    assert hg.tensor([True, False]).dtype == hg.bool
    assert hg.tensor([[1, 2]], dtype=hg.float64).dtype == hg.float64
    a = np.ones(3)
    t = hg.tensor(a)
    assert t.dtype == hg.float64
    a[0] = 9
    assert t[0].item() == 1.0
    assert hg.tensor([[1.5, 2.5]]).tolist() == [[1.5, 2.5]]


def test_factories_dtypes_and_devices():
    assert hg.zeros(2, 3).shape == (2, 3)
    assert hg.zeros((2, 3)).shape == (2, 3)
    assert hg.ones([4], dtype="float64").dtype == hg.float64
    assert hg.full((2,), 3.5).tolist() == [3.5, 3.5]
    assert hg.arange(5).dtype == hg.int64 and hg.arange(5).tolist() == [0, 1, 2, 3, 4]
    assert hg.arange(0, 1, 0.25).tolist() == [0, 0.25, 0.5, 0.75]
    r = hg.randint(0, 5, (100,))
    assert r.dtype == hg.int64 and 0 <= r.numpy().min() and r.numpy().max() < 5
    hg.manual_seed(3)
    x = hg.randn(4)
    hg.manual_seed(3)
    assert hg.randn(4).tolist() == x.tolist()
    g = hg.Generator(7)
    assert hg.rand(3, generator=g).tolist() == hg.rand(3, generator=hg.Generator(7)).tolist()
    assert str(hg.zeros(1).device) == "cpu" and hg.zeros(1).device == "cpu"
    assert hg.zeros(2, 2).double().dtype == hg.float64
    assert hg.zeros(2).to(hg.int64).dtype == hg.int64
    assert hg.zeros(2).to("float64").dtype == hg.float64
    assert repr(hg.float32) == "headgrad.float32"


def test_indexing_matches_numpy():
    a = np.arange(60, dtype=np.float32).reshape(3, 4, 5)
    t = hg.from_numpy(a.copy())
    idx = np.array([2, 0])
    for key in [0, -1, (0, slice(None), 2), (slice(1, None), Ellipsis), (None, slice(None, None, 2)),
                (Ellipsis, None), (1, slice(0, 3), -1), (idx,), (slice(None), idx, 1),
                (idx, slice(None), idx), (a[:, 0, 0] > 10,)]:
        key_hg = tuple(hg.from_numpy(k) if isinstance(k, np.ndarray) else k for k in
                       (key if isinstance(key, tuple) else (key,)))
        np.testing.assert_array_equal(t[key_hg].numpy(), a[key], err_msg=str(key))
    # NumPy arrays index directly, as torch tensors accept them (NumPy scalars too).
    for key in [idx, (slice(None), idx), (idx, idx), np.int64(1), a[:, 0, 0] > 10,
                np.array([[0, 1], [2, 0]])]:
        np.testing.assert_array_equal(t[key].numpy(), a[key], err_msg=str(key))
    t[0, :, 2] = 7.0
    a[0, :, 2] = 7.0
    t[hg.tensor([1, 2])] = hg.zeros(4, 5)
    a[[1, 2]] = 0
    np.testing.assert_array_equal(t.numpy(), a)
    with pytest.raises(hg.IndexError):
        t[3]
    with pytest.raises(IndexError):  # also a Python IndexError
        t[0, 9]


def test_operators_and_methods_match_numpy():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((3, 4)).astype(np.float64)
    b = rng.standard_normal((4,)).astype(np.float64)
    x, y = hg.from_numpy(a.copy()), hg.from_numpy(b.copy())
    close = np.testing.assert_allclose
    close((x + y).numpy(), a + b)
    close((x - 2).numpy(), a - 2)
    close((2 - x).numpy(), 2 - a)
    close((x * y).numpy(), a * b)
    close((x / 3).numpy(), a / 3)
    close((1 / (x.abs() + 1)).numpy(), 1 / (np.abs(a) + 1))
    close((x.abs() ** 1.5).numpy(), np.abs(a) ** 1.5)
    close((x @ y).numpy(), a @ b)
    close((-x).numpy(), -a)
    np.testing.assert_array_equal((x > 0).numpy(), a > 0)
    np.testing.assert_array_equal((x == x).numpy(), np.ones_like(a, dtype=bool))
    close(x.sum(dim=1).numpy(), a.sum(1))
    close(x.sum((0, 1), keepdim=True).numpy(), a.sum(keepdims=True))
    close(x.mean().item(), a.mean())
    close(x.var(1).numpy(), a.var(1, ddof=1))
    close(x.var(1, unbiased=False).numpy(), a.var(1))
    values, indices = x.max(dim=1)
    close(values.numpy(), a.max(1))
    np.testing.assert_array_equal(indices.numpy(), a.argmax(1))
    close(x.T.numpy(), a.T)
    close(x.reshape(2, 6).numpy(), a.reshape(2, 6))
    close(x.unsqueeze(0).permute(2, 0, 1).numpy(), a[None].transpose(2, 0, 1))
    close(x.softmax(-1).numpy(), np.exp(a) / np.exp(a).sum(-1, keepdims=True))
    close(x.clamp(min=-0.5).numpy(), np.maximum(a, -0.5))
    close(hg.cat([x, x], dim=0).numpy(), np.concatenate([a, a]))
    close(hg.stack([x, x], 1).numpy(), np.stack([a, a], 1))
    close(hg.where(x > 0, x, 0.0).numpy(), np.where(a > 0, a, 0))
    parts = x.split([1, 3], dim=1)
    assert [p.shape for p in parts] == [(3, 1), (3, 3)]
    x += 1
    close(x.numpy(), a + 1)
    assert len(x) == 3 and [r.shape for r in x] == [(4,), (4,), (4,)]
    assert float(hg.tensor([2.5])) == 2.5 and int(hg.tensor([3])) == 3
    assert hg.tensor(3.5).shape == () and hg.as_tensor(np.float32(2)).shape == ()
    assert hg.arange(6.0).dtype == hg.float32 and hg.arange(6).dtype == hg.int64
    w = hg.ones(3, requires_grad=True)
    out = np.full(3, 2.0, dtype=np.float32) * w  # NumPy on the left defers to the tensor
    assert isinstance(out, hg.Tensor) and out.requires_grad
    assert isinstance(np.float32(2) * w, hg.Tensor)


def test_python_ints_beyond_int64_are_refused_as_in_pytorch():
    # torch 1.13 raises "Overflow when unpacking long" for each of these; headgrad stored
    # 2**63 as -2**63 and made [1, 2**63] a float32 tensor.
    for value in ([2**63], 2**63, [1, 2**63], [-2**63 - 1], [[1], [2**64]], (True, 2**63)):
        with pytest.raises(hg.OverflowError, match=r"tensor: the Python int -?\d+ does not fit "
                                                   r"int64"):
            hg.tensor(value)
    with pytest.raises(OverflowError, match="does not fit int64"):
        hg.tensor([2**63], dtype=hg.int64)
    with pytest.raises(OverflowError, match=r"full: the Python int 9223372036854775808"):
        hg.full((2,), 2**63, dtype=hg.int64)
    with pytest.raises(OverflowError, match="full_like"):
        hg.full_like(hg.zeros(2, dtype=hg.int64), 2**63)
    with pytest.raises(OverflowError, match="fill_"):
        hg.zeros(2, dtype=hg.int64).fill_(-2**63 - 1)
    with pytest.raises(OverflowError):
        hg.zeros(2, dtype=hg.int64) == 2**63  # the scalar becomes an int64 tensor
    # The limits themselves fit, exactly (a double would round 2**63 - 1 up to 2**63).
    assert hg.tensor([2**63 - 1, -2**63]).tolist() == [2**63 - 1, -2**63]
    assert hg.full((2,), 2**63 - 1, dtype=hg.int64).tolist() == [2**63 - 1] * 2
    assert hg.full_like(hg.zeros(1, dtype=hg.int64), 2**53 + 1).tolist() == [2**53 + 1]
    t = hg.zeros(2, dtype=hg.int64)
    t.fill_(2**62 + 1)
    assert t.tolist() == [2**62 + 1] * 2
    # As floats they are numbers like any other, as in PyTorch.
    assert hg.tensor([1.5, 2**63]).dtype == hg.float32
    assert hg.tensor([2**63], dtype=hg.float32).tolist() == [2.0**63]
    assert hg.tensor([2**64], dtype=hg.float64).tolist() == [2.0**64]
    assert hg.full((1,), 2**63).tolist() == [2.0**63]  # float32 by default


def test_deepcopy_and_pickle_copy_tensors_as_torch_does(torch):
    import copy
    import pickle
    a, ta = hg.tensor([1.0, 2.0, 3.0], requires_grad=True), torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    (a * 3).sum().backward()
    (ta * 3).sum().backward()
    for t, ref in [(copy.deepcopy(a), copy.deepcopy(ta))]:
        np.testing.assert_array_equal(t.detach().numpy(), ref.detach().numpy())
        assert (t.requires_grad, t.is_leaf) == (ref.requires_grad, ref.is_leaf)
        np.testing.assert_array_equal(t.grad.numpy(), ref.grad.numpy())  # deepcopy keeps .grad
    copied = copy.deepcopy(a)
    copied.detach().numpy()[0] = 100.0  # its own storage
    assert a.detach().numpy()[0] == 1.0
    with pytest.raises(hg.AutogradError, match="graph leaves"):
        copy.deepcopy(a * 2)
    with pytest.raises(RuntimeError, match="graph leaves"):
        copy.deepcopy(ta * 2)
    # pickle: values, dtype, requires_grad (a result comes back as a leaf, as in torch); no grad.
    for protocol in (2, pickle.HIGHEST_PROTOCOL):
        back, ref = pickle.loads(pickle.dumps(a * 2, protocol)), pickle.loads(pickle.dumps(ta * 2, protocol))
        np.testing.assert_array_equal(back.detach().numpy(), ref.detach().numpy())
        assert (back.requires_grad, back.is_leaf, back.grad) == (ref.requires_grad, ref.is_leaf, None)
        for values in ([[1, 2], [3, 4]], [True, False], 2.5, np.arange(6.0).reshape(2, 3)):
            t = hg.tensor(values)
            u = pickle.loads(pickle.dumps(t, protocol))
            assert u.dtype == t.dtype and u.shape == t.shape
            np.testing.assert_array_equal(u.numpy(), t.numpy())
    # A view is pickled as a tensor of its own, as torch does for a lone view.
    base = hg.tensor(np.arange(6.0, dtype=np.float32).reshape(2, 3))
    column = pickle.loads(pickle.dumps(base[:, 1]))
    column.numpy()[0] = -1.0
    assert base.numpy()[0, 1] == 1.0 and repr(hg.tensor([1.0]) > 0) == "tensor([True], dtype=bool)"
