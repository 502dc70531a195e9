"""A module written in Python declares its own hook points (self.hook_x = HookPoint()) and
Hooks, Capture, run_with_cache, patching and ablation treat them as the built-in layers'
points; each result is checked against the same quantity computed by hand in NumPy."""
import copy

import numpy as np
import pytest

import headgrad as hg

V, E, H, N, L = 7, 8, 2, 3, 5


class Probe(hg.nn.Module):
    """embedding -> attention -> residual (hook_mixed) -> per-head view (hook_heads) -> logits."""

    def __init__(self, seed=0):
        super().__init__()
        g = hg.Generator(seed)
        self.embed = hg.nn.Embedding(V, E, generator=g)
        self.attn = hg.nn.MultiheadAttention(E, H, batch_first=True, generator=g)
        self.hook_mixed = hg.nn.HookPoint()
        self.hook_heads = hg.nn.HookPoint(per_head=True)
        self.unembed = hg.nn.Linear(E, V, generator=g)

    def forward(self, tokens):
        x = self.embed(tokens)
        x = self.hook_mixed(x + self.attn(x, x, x, need_weights=False)[0])
        n, l, e = x.shape
        heads = self.hook_heads(x.reshape(n, l, H, e // H).permute(0, 2, 1, 3))  # (N, H, L, d)
        return self.unembed(heads.permute(0, 2, 1, 3).reshape(n, l, e))


def model_and_prompts():
    model = Probe().to(hg.float64).eval()
    clean = hg.randint(0, V, (N, L), generator=hg.Generator(1))
    corrupted = hg.randint(0, V, (N, L), generator=hg.Generator(2))
    metric = hg.inspect.LogitDifference(hg.full((N,), L - 1, dtype=hg.int64),
                                        hg.tensor([1, 2, 3]), hg.tensor([4, 5, 6]))
    return model, clean, corrupted, metric


def logit_difference(mixed, model):
    """The metric by hand from hook_mixed's value (N, L, E): the heads' view is a reshape."""
    w = model.unembed.weight.detach().numpy()
    b = model.unembed.bias.detach().numpy()
    logits = mixed[:, -1, :] @ w.T + b  # (N, V)
    return float(np.mean(logits[np.arange(N), [1, 2, 3]] - logits[np.arange(N), [4, 5, 6]]))


def test_points_are_named_by_their_attribute_and_listed_in_model_order():
    model, clean, _, _ = model_and_prompts()
    names = [n for n, _ in model.named_hook_points()]
    assert names[:2] == ["hook_mixed", "hook_heads"]
    assert names[2:] == ["attn." + p for p in hg.inspect.head_points()]
    assert model.hook_heads.name == "hook_heads" and model.hook_heads.per_head
    hooks = hg.inspect.Hooks(model)
    assert hooks.names() == names
    assert hooks.names_at("hook_heads") == ["hook_heads"]
    with pytest.raises(hg.ValueError, match="already registered"):
        model.add_hook_point("hook_mixed", hg.nn.HookPoint())


def test_cache_capture_and_hooks_see_and_edit_a_python_point():
    model, clean, _, _ = model_and_prompts()
    out, cache = hg.inspect.run_with_cache(model, clean)
    with hg.no_grad():
        x = model.embed(clean)
        expected = (x + model.attn(x, x, x, need_weights=False)[0]).numpy()
    # Caching every point sends the attention down its composed path: rounding differs.
    np.testing.assert_allclose(cache["hook_mixed"].numpy(), expected, rtol=0, atol=1e-12)
    assert cache["hook_heads"].shape == (N, H, L, E // H)
    with hg.inspect.Capture(model, ["hook_heads"]) as cap:
        model(clean)
    expected_heads = expected.reshape(N, L, H, E // H).transpose(0, 2, 1, 3)
    np.testing.assert_array_equal(cap["hook_heads"], expected_heads)  # fused path here
    # A head hook zeroes head 1 of the per-head point; the logits follow by hand.
    with hg.inspect.Hooks(model) as hooks:
        hooks.add("hook_heads", lambda v, ctx: v * 0, head=1)
        edited = model(clean).detach().numpy()
    mixed = expected.copy()
    mixed[:, :, E // H:] = 0
    w, b = model.unembed.weight.detach().numpy(), model.unembed.bias.detach().numpy()
    np.testing.assert_allclose(edited, mixed @ w.T + b, rtol=0, atol=1e-12)


def test_patching_and_ablation_of_a_python_point_match_the_hand_computation():
    model, clean, corrupted, metric = model_and_prompts()
    _, clean_cache = hg.inspect.run_with_cache(model, clean)
    _, corrupted_cache = hg.inspect.run_with_cache(model, corrupted)
    c, k = clean_cache["hook_mixed"].numpy(), corrupted_cache["hook_mixed"].numpy()
    m_clean, m_corrupted = logit_difference(c, model), logit_difference(k, model)
    patching = hg.inspect.Patching(model, clean, corrupted, metric)
    assert patching.by_layer("hook_mixed").values.tolist() == pytest.approx([1.0], abs=1e-12)
    grid = patching.by_head("hook_heads").values  # (1, H)
    d = E // H
    for h in range(H):
        spliced = k.copy()
        spliced[:, :, h * d:(h + 1) * d] = c[:, :, h * d:(h + 1) * d]
        expected = (logit_difference(spliced, model) - m_corrupted) / (m_clean - m_corrupted)
        assert grid[0, h] == pytest.approx(expected, abs=1e-12)
    table = hg.inspect.ablate_heads(model, clean, clean, metric, "zero", "hook_heads")
    assert table["baseline"] == pytest.approx(m_clean, abs=1e-12)
    for h in range(H):
        zeroed = c.copy()
        zeroed[:, :, h * d:(h + 1) * d] = 0
        assert table["metric"].values[0, h] == pytest.approx(logit_difference(zeroed, model),
                                                            abs=1e-12)


def test_a_deep_copy_has_points_of_its_own_and_patches_identically():
    model, clean, corrupted, metric = model_and_prompts()
    twin = copy.deepcopy(model)
    assert twin.hook_mixed is not model.hook_mixed
    assert [n for n, _ in twin.named_hook_points()] == [n for n, _ in model.named_hook_points()]
    calls = []
    with hg.inspect.Hooks(model) as hooks:
        hooks.add("hook_mixed", lambda v, ctx: calls.append(ctx.name))
        twin(clean)
        assert calls == []  # hooks know the original's points, not the copy's
        model(clean)
        assert calls == ["hook_mixed"]
    a = hg.inspect.Patching(model, clean, corrupted, metric).by_head("hook_heads").values
    b = hg.inspect.Patching(twin, clean, corrupted, metric).by_head("hook_heads").values
    np.testing.assert_array_equal(a, b)
