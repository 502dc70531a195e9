"""Every bound op with PyTorch's name, keywords and defaults against torch 1.13: the same
float64 inputs through headgrad's binding and through torch, forward values and input
gradients (for a random upstream gradient) compared. A binding that passes an argument to
the wrong C++ parameter, or drops a keyword, fails here."""
import numpy as np
import pytest

import headgrad as hg
import headgrad.nn.functional as F

RNG = np.random.default_rng(1234)


def randn(*shape):
    return RNG.standard_normal(shape)


def positive(*shape):
    return RNG.uniform(0.5, 2.0, shape)


def compare(torch, hg_fn, torch_fn, arrays, grad=True, rtol=1e-10, atol=1e-12):
    """Runs both sides on `arrays` (float arrays become float64 leaves that require grad)."""
    def leaves(make):
        out = []
        for a in arrays:
            if isinstance(a, np.ndarray) and a.dtype == np.float64:
                out.append(make(a, True))
            elif isinstance(a, np.ndarray):
                out.append(make(a, False))
            else:
                out.append(a)
        return out
    hs = leaves(lambda a, rg: hg.tensor(a, requires_grad=rg))
    ts = leaves(lambda a, rg: torch.tensor(a, requires_grad=rg))
    h_out, t_out = hg_fn(*hs), torch_fn(*ts)
    h_list = list(h_out) if isinstance(h_out, (list, tuple)) else [h_out]
    t_list = list(t_out) if isinstance(t_out, (list, tuple)) else [t_out]
    assert len(h_list) == len(t_list)
    for h, t in zip(h_list, t_list):
        assert tuple(h.shape) == tuple(t.shape)
        np.testing.assert_allclose(h.detach().numpy(), t.detach().numpy(), rtol=rtol, atol=atol)
    if not grad:
        return
    h_loss, t_loss = 0, 0
    for h, t in zip(h_list, t_list):
        if not t.dtype.is_floating_point:
            continue
        g = randn(*t.shape)
        h_loss = (h * hg.tensor(g)).sum() + h_loss
        t_loss = (t * torch.tensor(g)).sum() + t_loss
    h_loss.backward()
    t_loss.backward()
    for h, t in zip(hs, ts):
        if isinstance(t, torch.Tensor) and t.requires_grad:
            assert (h.grad is None) == (t.grad is None)
            if t.grad is not None:
                np.testing.assert_allclose(h.grad.numpy(), t.grad.numpy(), rtol=rtol, atol=atol)


UNARY = [
    ("neg", lambda x: hg.neg(x), lambda x: x.neg(), randn),
    ("exp", lambda x: hg.exp(x), lambda x: x.exp(), randn),
    ("log", lambda x: hg.log(x), lambda x: x.log(), positive),
    ("sqrt", lambda x: hg.sqrt(x), lambda x: x.sqrt(), positive),
    ("rsqrt", lambda x: hg.rsqrt(x), lambda x: x.rsqrt(), positive),
    ("abs", lambda x: hg.abs(x), lambda x: x.abs(), randn),
    ("tanh", lambda x: hg.tanh(x), lambda x: x.tanh(), randn),
    ("sigmoid", lambda x: hg.sigmoid(x), lambda x: x.sigmoid(), randn),
    ("relu", lambda x: F.relu(x), lambda x: x.relu(), randn),
    ("gelu", lambda x: F.gelu(x), lambda x: __import__("torch").nn.functional.gelu(x), randn),
    ("gelu_tanh", lambda x: F.gelu(x, approximate="tanh"),
     lambda x: __import__("torch").nn.functional.gelu(x, approximate="tanh"), randn),
    ("clamp", lambda x: hg.clamp(x, min=-0.5, max=0.7), lambda x: x.clamp(min=-0.5, max=0.7), randn),
    ("clamp_min", lambda x: x.clamp(min=0.1), lambda x: x.clamp(min=0.1), randn),
    ("softmax", lambda x: hg.softmax(x, 1), lambda x: x.softmax(1), randn),
    ("log_softmax", lambda x: F.log_softmax(x, dim=-1), lambda x: x.log_softmax(-1), randn),
    ("pow_scalar", lambda x: x ** 2.5, lambda x: x ** 2.5, positive),
    ("rpow", lambda x: 2.0 ** x, lambda x: 2.0 ** x, randn),
    ("sum_dims", lambda x: x.sum(dim=(0, 2), keepdim=True), lambda x: x.sum(dim=(0, 2), keepdim=True), randn),
    ("sum_all", lambda x: hg.sum(x), lambda x: x.sum(), randn),
    ("mean_dim", lambda x: hg.mean(x, 1), lambda x: x.mean(1), randn),
    ("var_unbiased", lambda x: x.var(1), lambda x: x.var(1), randn),
    ("var_biased", lambda x: x.var(dim=2, unbiased=False, keepdim=True),
     lambda x: x.var(dim=2, unbiased=False, keepdim=True), randn),
    ("amax", lambda x: hg.amax(x, dim=(1,)), lambda x: x.amax(dim=(1,)), randn),
    ("max_dim", lambda x: tuple(x.max(dim=2)), lambda x: tuple(x.max(dim=2)), randn),
    ("max_all", lambda x: x.max(), lambda x: x.max(), randn),
    ("reshape", lambda x: x.reshape(4, -1), lambda x: x.reshape(4, -1), randn),
    ("view", lambda x: x.view((2, 2, 15)), lambda x: x.view(2, 2, 15), randn),
    ("flatten", lambda x: hg.flatten(x, 1), lambda x: x.flatten(1), randn),
    ("transpose", lambda x: hg.transpose(x, 0, 2), lambda x: x.transpose(0, 2), randn),
    ("permute", lambda x: x.permute(2, 0, 1), lambda x: x.permute(2, 0, 1), randn),
    ("unsqueeze", lambda x: hg.unsqueeze(x, -1), lambda x: x.unsqueeze(-1), randn),
    ("expand", lambda x: x[:, :1].expand(3, 4, 5), lambda x: x[:, :1].expand(3, 4, 5), randn),
    ("narrow", lambda x: hg.narrow(x, 1, 1, 2), lambda x: x.narrow(1, 1, 2), randn),
    ("select", lambda x: hg.select(x, 2, -1), lambda x: x.select(2, -1), randn),
    ("split", lambda x: tuple(hg.split(x, 2, dim=1)), lambda x: tuple(x.split(2, dim=1)), randn),
    ("split_sizes", lambda x: tuple(x.split([1, 4], dim=2)), lambda x: tuple(x.split([1, 4], dim=2)), randn),
    ("chunk", lambda x: tuple(hg.chunk(x, 3, dim=2)), lambda x: tuple(x.chunk(3, dim=2)), randn),
    ("index", lambda x: x[1:, None, ..., ::2], lambda x: x[1:, None, ..., ::2], randn),
    ("masked_fill", lambda x: hg.masked_fill(x, x > 0.3, -2.0), lambda x: x.masked_fill(x > 0.3, -2.0), randn),
    ("dropout_eval", lambda x: F.dropout(x, 0.4, training=False),
     lambda x: __import__("torch").nn.functional.dropout(x, 0.4, training=False), randn),
]


@pytest.mark.parametrize("name,hg_fn,torch_fn,make", UNARY, ids=[u[0] for u in UNARY])
def test_unary_ops(torch, name, hg_fn, torch_fn, make):
    compare(torch, hg_fn, torch_fn, [make(3, 4, 5)])


BINARY = [
    ("add_alpha", lambda a, b: hg.add(a, b, alpha=0.5), lambda a, b: a.add(b, alpha=0.5)),
    ("sub_alpha", lambda a, b: a.sub(b, alpha=2.0), lambda a, b: a.sub(b, alpha=2.0)),
    ("mul", lambda a, b: hg.mul(a, b), lambda a, b: a * b),
    ("div", lambda a, b: a / (b.abs() + 1), lambda a, b: a / (b.abs() + 1)),
    ("maximum", hg.maximum, lambda a, b: __import__("torch").maximum(a, b)),
    ("minimum", hg.minimum, lambda a, b: __import__("torch").minimum(a, b)),
    ("where", lambda a, b: hg.where(a > b, a, b), lambda a, b: __import__("torch").where(a > b, a, b)),
    ("pow", lambda a, b: hg.pow(a.abs() + 1, b), lambda a, b: (a.abs() + 1) ** b),
    ("cat", lambda a, b: hg.cat([a, b.expand(3, 4, 5)], dim=1),
     lambda a, b: __import__("torch").cat([a, b.expand(3, 4, 5)], dim=1)),
    ("stack", lambda a, b: hg.stack([a, b.expand(3, 4, 5)], dim=-1),
     lambda a, b: __import__("torch").stack([a, b.expand(3, 4, 5)], dim=-1)),
]


@pytest.mark.parametrize("name,hg_fn,torch_fn", BINARY, ids=[b[0] for b in BINARY])
def test_binary_ops_broadcast(torch, name, hg_fn, torch_fn):
    compare(torch, hg_fn, torch_fn, [randn(3, 4, 5), randn(4, 5)])


@pytest.mark.parametrize("a_shape,b_shape", [((5,), (5,)), ((3, 5), (5,)), ((5,), (5, 2)),
                                             ((2, 3, 5), (5, 4)), ((2, 1, 3, 5), (4, 5, 2))])
def test_matmul_shapes(torch, a_shape, b_shape):
    compare(torch, hg.matmul, torch.matmul, [randn(*a_shape), randn(*b_shape)])
    compare(torch, lambda a, b: a @ b, lambda a, b: a @ b, [randn(*a_shape), randn(*b_shape)])


def test_functional_layers(torch):
    tf = torch.nn.functional
    x, w, b = randn(2, 3, 5), randn(4, 5), randn(4)
    compare(torch, F.linear, tf.linear, [x, w, b])
    compare(torch, lambda x, w: F.linear(x, w), lambda x, w: tf.linear(x, w), [x, w])
    g, beta = randn(5), randn(5)
    compare(torch, lambda x, g, b: F.layer_norm(x, (5,), g, b, eps=1e-3),
            lambda x, g, b: tf.layer_norm(x, (5,), g, b, eps=1e-3), [x, g, beta])
    ids = RNG.integers(0, 6, (2, 3))
    table = randn(6, 4)
    compare(torch, lambda i, t: F.embedding(i, t, padding_idx=2),
            lambda i, t: tf.embedding(i, t, padding_idx=2), [ids, table])
    np.testing.assert_array_equal(F.one_hot(hg.tensor(ids), 7).numpy(),
                                  tf.one_hot(torch.tensor(ids), 7).numpy())
    np.testing.assert_array_equal(F.one_hot(hg.tensor(ids)).numpy(), tf.one_hot(torch.tensor(ids)).numpy())
    np.testing.assert_array_equal(hg.causal_mask(4).numpy(),
                                  torch.ones(4, 4, dtype=torch.bool).triu(1).numpy())
    np.testing.assert_array_equal(hg.causal_mask(3, 5).numpy(),
                                  torch.ones(3, 5, dtype=torch.bool).triu(1).numpy())


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_losses(torch, reduction):
    tf = torch.nn.functional
    logits = randn(6, 5)
    targets = RNG.integers(0, 5, (6,))
    targets[2] = -100
    compare(torch, lambda l, t: F.cross_entropy(l, t, reduction=reduction, label_smoothing=0.1),
            lambda l, t: tf.cross_entropy(l, t, reduction=reduction, label_smoothing=0.1), [logits, targets])
    seq = randn(2, 5, 3)  # (N, C, d1): the class dim second, as torch
    seq_targets = RNG.integers(0, 5, (2, 3))
    compare(torch, lambda l, t: F.cross_entropy(l, t, reduction=reduction, ignore_index=1),
            lambda l, t: tf.cross_entropy(l, t, reduction=reduction, ignore_index=1), [seq, seq_targets])
    compare(torch, lambda a, b: F.mse_loss(a, b, reduction=reduction),
            lambda a, b: tf.mse_loss(a, b, reduction=reduction), [randn(4, 3), randn(4, 3)])


def test_indexing_ops(torch):
    x = randn(5, 4)
    idx = np.array([4, 0, 4])
    compare(torch, lambda x, i: hg.index_select(x, 0, i), lambda x, i: x.index_select(0, i), [x, idx])
    compare(torch, lambda x, i: x[i, 1:], lambda x, i: x[i, 1:], [x, idx])
    v = randn(3, 4)
    compare(torch, lambda x, i, v: hg.index_put(x, (i,), v, accumulate=True),
            lambda x, i, v: x.index_put((i,), v, accumulate=True), [x, idx, v])
    compare(torch, lambda x: hg.argmax(x, 1), lambda x: x.argmax(1), [x], grad=False)
    for op in ["eq", "ne", "lt", "le", "gt", "ge"]:
        compare(torch, lambda a, b: getattr(hg, op)(a, b), lambda a, b: getattr(torch, op)(a, b),
                [x, randn(4)], grad=False)
    compare(torch, lambda a: hg.logical_not(a > 0), lambda a: (a > 0).logical_not(), [x], grad=False)


def test_float32_edge_cases_match_torch(torch):
    """Where float32 overflows or underflows inside an op, headgrad gives torch's answer."""
    def same(h, t):
        np.testing.assert_array_equal(h.detach().numpy(), t.detach().numpy())

    # x / x at 1e-30: d/dx = 1/x - x/x^2 = 1e30 - 1e30 = 0 (x*x underflows: it was -inf).
    h, t = hg.tensor([1e-30], requires_grad=True), torch.tensor([1e-30], requires_grad=True)
    (h / h).sum().backward()
    (t / t).sum().backward()
    same(h.grad, t.grad)
    # A row whose variance overflows float32: NaN, as torch (it was the bias).
    row = [[2.5e30, 0.0, 0.0, 0.0], [1.0, 2.0, 3.0, 4.0]]
    w, b = [1.0, 2.0, 3.0, 4.0], [0.5] * 4
    h = F.layer_norm(hg.tensor(row), (4,), hg.tensor(w), hg.tensor(b)).numpy()
    t = torch.nn.functional.layer_norm(torch.tensor(row), (4,), torch.tensor(w), torch.tensor(b))
    assert np.isnan(h[0]).all() and np.isnan(t[0].numpy()).all()
    np.testing.assert_allclose(h[1], t[1].numpy(), rtol=1e-6)
    # var with correction = count: inf (float32 squares of 5e-31 underflowed: 0/0 = NaN).
    same(hg.tensor([1e-30, 0.0]).var(0, correction=2), torch.tensor([1e-30, 0.0]).var(0, correction=2))
    # flatten of a 0-d tensor takes dims in [-1, 0] only.
    for dims in [(3, -1), (0, 3), (-2, 0)]:
        with pytest.raises(IndexError):
            torch.tensor(1.0).flatten(*dims)
        with pytest.raises(IndexError, match=r"\[-1, 0\]"):
            hg.tensor(1.0).flatten(*dims)
    same(hg.tensor(1.0).flatten(-1, 0), torch.tensor(1.0).flatten(-1, 0))


def test_integer_and_bool_sums_are_int64_as_in_torch(torch):
    values = [[2**53 + 1, 1, -3], [4, 5, 6]]  # 2**53 + 1 would round in a floating sum
    t, ref = hg.tensor(values), torch.tensor(values)
    assert t.sum().dtype == hg.int64 and t.sum().item() == ref.sum().item()
    np.testing.assert_array_equal(t.sum(dim=0).numpy(), ref.sum(dim=0).numpy())
    np.testing.assert_array_equal(t.sum(dim=1, keepdim=True).numpy(), ref.sum(dim=1, keepdim=True).numpy())
    flags = hg.tensor([1.0, 5.0, 3.0]) > 2
    assert flags.sum().dtype == hg.int64 and flags.sum().item() == (torch.tensor([1.0, 5.0, 3.0]) > 2).sum().item()


def test_keyword_arguments_have_torchs_names(torch):
    a, b, p = randn(2, 3), randn(2, 3), positive(2, 3)
    ha, hb, hp = hg.tensor(a), hg.tensor(b), hg.tensor(p)
    ta, tb, tp = torch.tensor(a), torch.tensor(b), torch.tensor(p)
    pairs = [
        (hg.mul(input=ha, other=hb), torch.mul(input=ta, other=tb)),
        (hg.div(ha, other=2.0), torch.div(ta, other=2.0)),
        (hg.maximum(input=ha, other=hb), torch.maximum(input=ta, other=tb)),
        (hg.minimum(ha, other=hb), torch.minimum(ta, other=tb)),
        (hg.lt(input=ha, other=hb), torch.lt(input=ta, other=tb)),
        (hg.ge(ha, other=0.25), torch.ge(ta, other=0.25)),
        (hg.pow(input=hp, exponent=hb), torch.pow(input=tp, exponent=tb)),
        (hg.reshape(ha, shape=(3, 2)), torch.reshape(ta, shape=(3, 2))),
        (hg.permute(ha, dims=(1, 0)), torch.permute(ta, dims=(1, 0))),
        (hg.zeros_like(input=ha), torch.zeros_like(input=ta)),
        (hg.ones_like(input=ha), torch.ones_like(input=ta)),
        (ha.pow(exponent=2), ta.pow(exponent=2)),
        (ha.mul(other=hb), ta.mul(other=tb)),
        (ha.div(other=hp), ta.div(other=tp)),
        (ha.eq(other=ha), ta.eq(other=ta)),
        (ha.matmul(other=hg.permute(hb, dims=(1, 0))), ta.matmul(other=tb.permute(1, 0))),
        (ha.clone().fill_(value=0.5).mul_(other=3.0), ta.clone().fill_(value=0.5).mul_(other=3.0)),
    ]
    for h, t in pairs:
        assert tuple(h.shape) == tuple(t.shape)
        np.testing.assert_allclose(h.numpy(), t.numpy(), rtol=1e-12)
    assert tuple(hg.empty_like(input=ha).shape) == (2, 3)
    # torch 1.13 documents copy_(src) but its binding takes other=; headgrad takes src=.
    np.testing.assert_array_equal(ha.clone().copy_(src=hb).numpy(), b)
    # torch.Generator.manual_seed takes no keyword; headgrad's names its argument seed.
    g = hg.Generator()
    assert g.manual_seed(seed=3) is g and g.initial_seed() == 3
    np.testing.assert_array_equal(hg.rand(4, generator=g).numpy(),
                                  hg.rand(4, generator=hg.Generator(3)).numpy())
    tokens = hg.tensor([[1, 2, 3]])
    moved = hg.train.Batch(tokens=tokens).to(device="cpu")
    np.testing.assert_array_equal(moved.tokens.numpy(), tokens.numpy())
    fused = hg.nn.MultiheadAttention(8, 2)
    headwise = hg.nn.HeadwiseMultiheadAttention.from_fused(fused=fused)
    assert hg.inspect.head_parameter_counts(model=headwise) == \
        hg.inspect.head_parameter_counts(fused)
    assert hg.inspect.attention_parameter_count(model=fused) == sum(
        p.numel() for p in fused.parameters())
