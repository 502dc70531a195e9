"""Modules from Python: MultiheadAttention against torch 1.13 (outputs and gradients, with
masks), state dicts both ways, modules written in Python, optimizers against torch.optim,
and save / load."""
import os

import numpy as np
import pytest

import headgrad as hg


def torch_mha_case(torch, rng, E, H, L, S, N, batch_first, kdim=None, add_bias_kv=False,
                   add_zero_attn=False):
    t_mha = torch.nn.MultiheadAttention(E, H, batch_first=batch_first, kdim=kdim, vdim=kdim,
                                        add_bias_kv=add_bias_kv, add_zero_attn=add_zero_attn,
                                        dtype=torch.float64)
    mha = hg.nn.MultiheadAttention(E, H, batch_first=batch_first, kdim=kdim, vdim=kdim,
                                   add_bias_kv=add_bias_kv, add_zero_attn=add_zero_attn)
    mha.double()
    mha.load_state_dict(t_mha.state_dict())  # torch tensors are read through NumPy
    return t_mha, mha


@pytest.mark.parametrize("case", range(6))
def test_multihead_attention_matches_torch_with_masks(torch, case):
    rng = np.random.default_rng(100 + case)
    E, H = [(8, 2), (12, 3), (16, 4), (6, 1), (8, 8), (10, 2)][case]
    L, S, N = int(rng.integers(1, 6)), int(rng.integers(2, 7)), int(rng.integers(1, 4))
    batch_first = bool(case % 2)
    kdim = [None, 5, None, 7, None, None][case]
    t_mha, mha = torch_mha_case(torch, rng, E, H, L, S, N, batch_first, kdim=kdim,
                                add_bias_kv=case == 2, add_zero_attn=case == 4)
    kd = kdim or E
    shape = lambda n, l, e: (n, l, e) if batch_first else (l, n, e)  # noqa: E731
    q = rng.standard_normal(shape(N, L, E))
    k = rng.standard_normal(shape(N, S, kd))
    v = rng.standard_normal(shape(N, S, kd))
    # Masks that leave every query at least one key: the first key is never blocked.
    attn_mask = rng.random((L, S)) < 0.3
    attn_mask[:, 0] = False
    kpm = rng.random((N, S)) < 0.3
    kpm[:, 0] = False
    average = case % 3 != 0
    tq, tk, tv = (torch.tensor(a, requires_grad=True) for a in (q, k, v))
    hq, hk, hv = (hg.tensor(a, requires_grad=True) for a in (q, k, v))
    t_out, t_w = t_mha(tq, tk, tv, key_padding_mask=torch.tensor(kpm), attn_mask=torch.tensor(attn_mask),
                       average_attn_weights=average)
    out, w = mha(hq, hk, hv, key_padding_mask=hg.tensor(kpm), attn_mask=hg.tensor(attn_mask),
                 average_attn_weights=average)
    np.testing.assert_allclose(out.detach().numpy(), t_out.detach().numpy(), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(w.detach().numpy(), t_w.detach().numpy(), rtol=1e-9, atol=1e-12)
    g = rng.standard_normal(out.shape)
    (t_out * torch.tensor(g)).sum().backward()
    (out * hg.tensor(g)).sum().backward()
    for mine, theirs in [(hq, tq), (hk, tk), (hv, tv)]:
        np.testing.assert_allclose(mine.grad.numpy(), theirs.grad.numpy(), rtol=1e-8, atol=1e-12)
    t_params = dict(t_mha.named_parameters())
    for name, p in mha.named_parameters():
        np.testing.assert_allclose(p.grad.numpy(), t_params[name].grad.numpy(), rtol=1e-8, atol=1e-12,
                                   err_msg=name)


def test_state_dict_is_numpy_and_round_trips(torch):
    m = hg.nn.GPT(vocab_size=11, max_len=8, d_model=16, nhead=4, num_layers=2)
    state = m.state_dict()
    assert all(isinstance(v, np.ndarray) for v in state.values())
    assert "layers.0.self_attn.in_proj_weight" in state and state["lm_head.weight"].shape == (11, 16)
    other = hg.nn.GPT(vocab_size=11, max_len=8, d_model=16, nhead=4, num_layers=2,
                      generator=hg.Generator(99))
    tokens = hg.randint(0, 11, (2, 8))
    assert not np.allclose(m(tokens).detach().numpy(), other(tokens).detach().numpy())
    result = other.load_state_dict(state)
    assert result.missing_keys == [] and result.unexpected_keys == []
    np.testing.assert_array_equal(m(tokens).detach().numpy(), other(tokens).detach().numpy())
    state["lm_head.weight"] = np.zeros((3, 3), dtype=np.float32)
    with pytest.raises(hg.Error, match=r"'lm_head.weight' has shape \(3,3\)"):
        other.load_state_dict(state)
    del state["lm_head.weight"]
    assert other.load_state_dict(state, strict=False).missing_keys == ["lm_head.weight"]


def test_modules_written_in_python_register_their_parts():
    class Probe(hg.nn.Module):
        def __init__(self):
            super().__init__()
            self.attn = hg.nn.MultiheadAttention(8, 2, batch_first=True)
            self.scale = hg.nn.Parameter(hg.ones(8))
            self.head = hg.nn.Sequential(hg.nn.Linear(8, 8), hg.nn.ReLU(), hg.nn.Linear(8, 3))
            self.not_a_parameter = hg.zeros(2)

        def forward(self, x):
            out, _ = self.attn(x * self.scale, x, x, need_weights=False)
            return self.head(out)

    p = Probe()
    names = [n for n, _ in p.named_parameters()]
    assert names[:2] == ["scale", "attn.in_proj_weight"] or "scale" in names
    assert "head.0.weight" in names and "head.2.bias" in names and "attn.out_proj.weight" in names
    assert not any("not_a_parameter" in n for n in names)
    x = hg.randn(2, 5, 8)
    y = p(x)
    assert y.shape == (2, 5, 3)
    y.sum().backward()
    assert p.scale.grad is not None and p.scale.grad.shape == (8,)
    assert "Probe" in repr(p)
    p.eval()
    assert not p.training and not p.attn.training
    opt = hg.optim.SGD(p.parameters(), lr=0.1)
    before = p.scale.detach().numpy().copy()
    opt.step()
    assert not np.allclose(before, p.scale.detach().numpy())  # the optimizer updated it in place
    p.double()
    assert p.scale.dtype == hg.float64 and p.state_dict()["scale"].dtype == np.float64


@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW"])
def test_optimizers_match_torch(torch, name):
    rng = np.random.default_rng(5)
    w0 = rng.standard_normal((4, 3))
    grads = [rng.standard_normal((4, 3)) for _ in range(4)]
    kwargs = {"SGD": dict(lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01),
              "Adam": dict(lr=0.01, betas=(0.8, 0.99), weight_decay=0.1, amsgrad=True),
              "AdamW": dict(lr=0.01, weight_decay=0.05)}[name]
    w = hg.tensor(w0, requires_grad=True)
    tw = torch.tensor(w0, requires_grad=True)
    opt = getattr(hg.optim, name)([w], **kwargs)
    topt = getattr(torch.optim, name)([tw], **kwargs)
    for g in grads:
        w.grad = hg.tensor(g)
        tw.grad = torch.tensor(g)
        opt.step()
        topt.step()
    np.testing.assert_allclose(w.detach().numpy(), tw.detach().numpy(), rtol=1e-12, atol=1e-14)
    state = opt.state_dict()
    assert all(isinstance(v, np.ndarray) for v in state.values())


def test_schedules_and_clipping():
    s = hg.optim.LRSchedule.cosine(1.0, warmup_steps=10, total_steps=110)
    # warm-up: base (step + 1) / W; then cosine from base at step W to 0 at step N
    assert s.lr_at(4) == pytest.approx(0.5) and s.lr_at(10) == pytest.approx(1.0)
    assert s.lr_at(60) == pytest.approx(0.5) and s.lr_at(110) == pytest.approx(0.0, abs=1e-12)
    w = hg.ones(4, requires_grad=True)
    w.grad = hg.full((4,), 3.0)
    total = hg.optim.clip_grad_norm_([w], 1.0)
    assert total == pytest.approx(6.0)
    np.testing.assert_allclose(w.grad.numpy(), [0.5] * 4, rtol=1e-5)


def test_save_and_load_round_trip(work_dir):
    m = hg.nn.GPT(vocab_size=7, max_len=6, d_model=8, nhead=2, num_layers=1)
    path = os.path.join(work_dir, "gpt.npz")
    hg.save(m, path)
    with np.load(path) as f:
        assert "lm_head.weight" in f.files
    other = hg.nn.GPT(vocab_size=7, max_len=6, d_model=8, nhead=2, num_layers=1, generator=hg.Generator(4))
    hg.load(other, path)
    tokens = hg.randint(0, 7, (3, 6))
    np.testing.assert_array_equal(m(tokens).detach().numpy(), other(tokens).detach().numpy())
    with pytest.raises(hg.IOError, match="missing.npz"):
        hg.load(other, os.path.join(work_dir, "missing.npz"))
    with pytest.raises(OSError):
        hg.load(other, os.path.join(work_dir, "missing.npz"))


def test_headwise_attention_equals_the_fused_layer():
    fused = hg.nn.MultiheadAttention(12, 3, batch_first=True)
    headwise = hg.nn.HeadwiseMultiheadAttention.from_fused(fused)
    assert len(headwise.heads) == 3
    x = hg.randn(2, 4, 12)
    a, _ = fused(x, x, x)
    b, _ = headwise(x, x, x)
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-5, atol=1e-6)
    w = fused.head_weights(1)
    assert w["w_q"].shape == (4, 12) and w["w_o"].shape == (12, 4)


def test_deepcopy_of_modules_is_independent_and_identical(torch):
    import copy
    task = hg.train.make_task("associative_recall", seed=0, length=4)
    model = hg.nn.GPT(vocab_size=task.vocab_size, max_len=task.max_len, d_model=16, nhead=2,
                      num_layers=2, generator=hg.Generator(0))
    batch = task.batch("validation", 0, 8)
    model(batch.tokens).sum().backward()
    model.eval()
    twin = copy.deepcopy(model)
    assert type(twin) is hg.nn.GPT and not twin.training
    np.testing.assert_array_equal(twin(batch.tokens).detach().numpy(), model(batch.tokens).detach().numpy())
    for (n, p), (m, q) in zip(model.named_parameters(), twin.named_parameters()):
        assert n == m and q.grad is not None  # torch's deepcopy keeps .grad too
    # The copy trains on its own; the original keeps its values.
    before = model.state_dict()
    twin.train()
    opt = hg.optim.AdamW(twin.parameters(), lr=1e-2)
    hg.train.Trainer(twin, task, opt, steps=3, batch_size=8, eval_every=0, progress=False).fit()
    after = model.state_dict()
    assert all(np.array_equal(before[k], after[k]) for k in before)
    assert any(not np.array_equal(before[k], twin.state_dict()[k]) for k in before)
    # Patching the copy of an unchanged model gives the same grid.
    prompts = hg.inspect.corrupt_recall_query(task, batch)
    metric = hg.inspect.LogitDifference(prompts["position"], prompts["answer"], prompts["wrong"])
    grid = lambda m: hg.inspect.Patching(m, prompts["clean"], prompts["corrupted"], metric).by_head("z").values  # noqa: E731
    np.testing.assert_array_equal(grid(copy.deepcopy(model)), grid(model))
    # torch behaves the same way: a deep copy owns its parameters.
    lin = torch.nn.Linear(2, 2)
    assert copy.deepcopy(lin).weight.data_ptr() != lin.weight.data_ptr()


def test_deepcopy_of_a_module_written_in_python():
    import copy

    class Probe(hg.nn.Module):
        def __init__(self):
            super().__init__()
            self.attn = hg.nn.MultiheadAttention(8, 2, batch_first=True)
            self.scale = hg.nn.Parameter(hg.ones(8))
            self.head = hg.nn.Sequential(hg.nn.Linear(8, 8), hg.nn.ReLU(), hg.nn.Linear(8, 3))
            self.register_buffer("offset", hg.full((8,), 0.5))
            self.note = {"made_by": "test"}

        def forward(self, x):
            out, _ = self.attn(x * self.scale + self.offset, x, x, need_weights=False)
            return self.head(out)

    p = Probe()
    p.head.eval()
    q = copy.deepcopy(p)
    assert type(q) is Probe and q.training and not q.head.training
    assert [n for n, _ in q.named_parameters()] == [n for n, _ in p.named_parameters()]
    assert [n for n, _ in q.named_buffers()] == [n for n, _ in p.named_buffers()]
    x = hg.randn(2, 5, 8, generator=hg.Generator(3))
    p.eval()
    q.eval()
    np.testing.assert_array_equal(q(x).detach().numpy(), p(x).detach().numpy())
    q.scale.detach().numpy()[:] = 2.0
    assert p.scale.detach().numpy()[0] == 1.0 and isinstance(q.scale, hg.nn.Parameter)
    assert q.note == p.note and q.note is not p.note
    assert q.head[0] is not p.head[0] and q.head[0] is q.head._items[0]
