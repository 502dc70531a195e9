"""Inspection from Python: Capture as a context manager giving NumPy arrays and gradients,
hooks written in Python that change the forward, run_with_cache, patching, ablation,
attribution, importance and the recall protocol."""
import numpy as np
import pytest

import headgrad as hg


def small_gpt(seed=0, nhead=2):
    return hg.nn.GPT(vocab_size=12, max_len=10, d_model=16, nhead=nhead, num_layers=2,
                     generator=hg.Generator(seed))


def test_capture_gives_numpy_patterns_and_gradients():
    model = small_gpt()
    tokens = hg.randint(0, 12, (3, 10), generator=hg.Generator(1))
    with hg.inspect.Capture(model, ["pattern", "z"]) as cap:
        logits = model(tokens)
        logits.sum().backward()
    names = cap.names()
    assert "layers.0.self_attn.pattern" in names and "layers.1.self_attn.z" in names
    p = cap["layers.0.self_attn.pattern"]
    assert isinstance(p, np.ndarray) and p.shape == (3, 2, 10, 10)
    np.testing.assert_allclose(p.sum(-1), 1.0, rtol=1e-5)
    assert np.allclose(np.triu(p[0, 0], 1), 0)  # causal
    dz = cap.grad("layers.1.self_attn.z")
    assert dz.shape == (3, 2, 10, 8) and np.abs(dz).sum() > 0
    # Outside the with-block nothing is recorded.
    cap.clear()
    model(tokens)
    assert cap.names() == []


def test_python_hooks_change_the_forward():
    model = small_gpt().eval()
    tokens = hg.randint(0, 12, (2, 10), generator=hg.Generator(2))
    clean = model(tokens).detach().numpy()
    contexts = []

    def zero(value, ctx):
        contexts.append((ctx.name, ctx.head, value.shape))
        return value * 0

    with hg.inspect.Hooks(model) as hooks:
        hooks.add("layers.1.self_attn.z", zero, head=1)
        ablated = model(tokens).detach().numpy()
    assert contexts == [("layers.1.self_attn.z", 1, (2, 10, 8))]
    assert not np.allclose(clean, ablated)
    # The same ablation through the head gates (an independent path) gives the same logits.
    with hg.inspect.HeadAblation(model, [(1, 1)]):
        gated = model(tokens).detach().numpy()
    np.testing.assert_allclose(ablated, gated, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(model(tokens).detach().numpy(), clean, rtol=1e-6)  # hooks gone
    once = hg.inspect.run_with_hooks(model, tokens, [("layers.1.self_attn.z", lambda v, c: v * 0, 1)])
    np.testing.assert_allclose(once.detach().numpy(), ablated, rtol=1e-6, atol=1e-7)
    # A hook that leaves the value alone (returns None) changes nothing.
    with hg.inspect.Hooks(model) as hooks:
        hooks.add("layers.0.resid_post", lambda v, ctx: None)
        np.testing.assert_allclose(model(tokens).detach().numpy(), clean, rtol=1e-5, atol=1e-6)
    with hg.inspect.Hooks(model) as hooks:
        hooks.add("layers.0.resid_post", lambda v, ctx: hg.zeros(1))
        with pytest.raises(hg.ShapeError, match="resid_post"):
            model(tokens)
    with pytest.raises(hg.IndexError, match="no hook point 'layers.9.nothing'"):
        hg.inspect.Hooks(model).add("layers.9.nothing", lambda v, c: v)


def counting_hook(calls, key):
    def hook(value, ctx):
        calls[key] = calls.get(key, 0) + 1
    return hook


def test_a_hook_that_clears_or_adds_hooks_mid_forward_is_safe():
    model = small_gpt().eval()
    tokens = hg.randint(0, 12, (2, 10), generator=hg.Generator(5))
    calls = {}
    with hg.inspect.Hooks(model) as h:
        h.add("layers.0.self_attn.z", lambda v, c: h.clear())
        h.add("layers.0.self_attn.z", counting_hook(calls, "second"))
        h.add("layers.1.self_attn.z", counting_hook(calls, "later"))
        model(tokens)
        # The point the forward was in finished its hooks; the later point had none left.
        assert calls == {"second": 1}
        model(tokens)
        assert calls == {"second": 1}
        h.add("logits", lambda v, c: h.add("logits", counting_hook(calls, "added")))
        model(tokens)
        assert "added" not in calls  # added while its point ran: from the next forward on
        model(tokens)
        assert calls["added"] == 1


def test_hooks_blocks_ended_out_of_order_raise_and_change_nothing():
    model = small_gpt().eval()
    tokens = hg.randint(0, 12, (2, 10), generator=hg.Generator(6))
    calls = {}
    a, b = hg.inspect.Hooks(model), hg.inspect.Hooks(model)
    a.__enter__()
    a.add("logits", counting_hook(calls, "a"))
    b.__enter__()
    b.add("logits", counting_hook(calls, "b"))
    with pytest.raises(hg.Error, match="scopes end innermost first"):
        a.__exit__(None, None, None)
    model(tokens)
    assert calls == {"a": 1, "b": 1}  # both blocks open: every active Hooks runs
    b.__exit__(None, None, None)
    model(tokens)
    assert calls == {"a": 2, "b": 1}
    a.__exit__(None, None, None)
    model(tokens)
    assert calls == {"a": 2, "b": 1}
    # A block left open when its Hooks goes away ends with it.
    c = hg.inspect.Hooks(model)
    c.__enter__()
    c.add("logits", counting_hook(calls, "c"))
    del c
    import gc
    gc.collect()
    model(tokens)
    assert "c" not in calls


def test_captures_ended_out_of_order_raise_and_change_nothing():
    model = small_gpt().eval()
    tokens = hg.randint(0, 12, (2, 10), generator=hg.Generator(7))
    a, b = hg.inspect.Capture(model, ["pattern"]), hg.inspect.Capture(model, ["z"])
    a.__enter__()
    b.__enter__()
    with pytest.raises(hg.Error, match="inspect::Capture: scopes end innermost first"):
        a.__exit__(None, None, None)
    model(tokens)
    assert b.names() and a.names()  # both active: every active handler records
    b.__exit__(None, None, None)
    a.__exit__(None, None, None)
    a.clear()
    model(tokens)
    assert not a.names()


def test_a_hooks_block_ends_only_on_its_own_thread():
    import threading
    model = small_gpt().eval()
    tokens = hg.randint(0, 12, (2, 10), generator=hg.Generator(8))
    calls = {}
    hooks = hg.inspect.Hooks(model)
    hooks.__enter__()
    hooks.add("logits", counting_hook(calls, "main"))
    errors = []

    def end_elsewhere():
        try:
            hooks.__exit__(None, None, None)
        except hg.Error as e:
            errors.append(str(e))
        model(tokens)  # this thread has no active hooks

    worker = threading.Thread(target=end_elsewhere)
    worker.start()
    worker.join()
    assert len(errors) == 1 and "activated on another thread" in errors[0]
    assert calls == {}
    model(tokens)
    assert calls == {"main": 1}  # still active on the thread that opened it
    hooks.__exit__(None, None, None)
    model(tokens)
    assert calls == {"main": 1}


def test_adding_hooks_outside_a_with_block_warns_once():
    model = small_gpt()
    hooks = hg.inspect.Hooks(model)
    with pytest.warns(UserWarning, match=r"Hooks.add\('logits'\): this Hooks is not active"):
        hooks.add("logits", lambda v, c: None)
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        hooks.add("embed", lambda v, c: None)  # once per Hooks
        with hooks:
            hooks.add("ln_final", lambda v, c: None)  # inside a block: no warning


def test_hook_errors_name_the_hook_point_and_the_head():
    model = small_gpt().eval()
    tokens = hg.randint(0, 12, (2, 10), generator=hg.Generator(9))
    with hg.inspect.Hooks(model) as hooks:
        hooks.add("layers.0.self_attn.z", lambda v, c: v.to(hg.float64), head=0)
        with pytest.raises(hg.DTypeError, match=r"hook at layers\.0\.self_attn\.z \(head 0\)"):
            model(tokens)
    with hg.inspect.Hooks(model) as hooks:
        hooks.add("layers.1.self_attn.z", lambda v, c: v[:, 0])
        with pytest.raises(hg.ShapeError, match=r"hook at layers\.1\.self_attn\.z: "):
            model(tokens)


def test_run_with_cache_matches_capture():
    model = small_gpt(3).eval()
    tokens = hg.randint(0, 12, (2, 10), generator=hg.Generator(4))
    logits, cache = hg.inspect.run_with_cache(model, tokens)
    assert "layers.0.self_attn.pattern" in cache.names() and "logits" in cache
    np.testing.assert_allclose(cache["logits"].numpy(), logits.detach().numpy())
    with hg.inspect.Capture(model, ["pattern"]) as cap:
        model(tokens)
    np.testing.assert_allclose(cache["layers.1.self_attn.pattern"].numpy(),
                               cap["layers.1.self_attn.pattern"], rtol=1e-5, atol=1e-7)


def trained_recall_model():
    task = hg.train.make_task("associative_recall", seed=0, length=4)
    model = hg.nn.GPT(vocab_size=task.vocab_size, max_len=task.max_len, d_model=32, nhead=2,
                      num_layers=2, generator=hg.Generator(0))
    opt = hg.optim.AdamW(model.parameters(), lr=3e-3)
    hg.train.Trainer(model, task, opt, steps=60, batch_size=32, eval_every=0, progress=False).fit()
    return task, model.eval()


def test_patching_normalises_between_corrupted_and_clean():
    task, model = trained_recall_model()
    prompts = hg.inspect.corrupt_recall_query(task, task.batch("validation", 0, 32))
    metric = hg.inspect.LogitDifference(prompts["position"], prompts["answer"], prompts["wrong"])
    p = hg.inspect.Patching(model, prompts["clean"], prompts["corrupted"], metric)
    assert p.clean_metric != p.corrupted_metric
    # 'kept' names each prompt's row of the batch.
    tokens = task.batch("validation", 0, 32).tokens.numpy()
    np.testing.assert_array_equal(tokens[prompts["kept"].numpy()], prompts["clean"].numpy())
    assert prompts["kept"].shape[0] + prompts["dropped"] == 32
    # Patching every layer's input restores the clean run exactly; nothing restores nothing.
    assert p.patch("layers.0.resid_pre") == pytest.approx(1.0, abs=1e-4)
    grid = p.by_head("z")
    assert grid.values.shape == (2, 2) and grid.dims == ["layer", "head"]
    # A Python metric gives the same numbers as the native one.
    py_metric = lambda logits: hg.inspect.logit_difference(  # noqa: E731
        logits, prompts["position"], prompts["answer"], prompts["wrong"])
    q = hg.inspect.Patching(model, prompts["clean"], prompts["corrupted"], py_metric)
    np.testing.assert_allclose(q.by_head("z").values, grid.values, rtol=1e-6, atol=1e-9)
    attribution = p.attribution_by_head()
    assert attribution.values.shape == (2, 2) and np.isfinite(attribution.values).all()
    table = hg.inspect.ablate_heads(model, prompts["clean"], prompts["corrupted"], metric, kind="mean")
    assert table["metric"].values.shape == (2, 2)
    dla = hg.inspect.direct_logit_attribution(model, prompts["clean"], prompts["position"],
                                              prompts["answer"], prompts["wrong"])
    assert dla["sum"] == pytest.approx(dla["logit_difference"], rel=1e-4, abs=1e-4)
    lens = hg.inspect.logit_lens(model, prompts["clean"])
    np.testing.assert_allclose(list(lens.values())[-1].detach().numpy(),
                               model(prompts["clean"]).detach().numpy(), rtol=1e-4, atol=1e-5)
    restoring = p.fewest_heads_restoring(0.5)
    assert restoring["heads"] and all(len(h) == 2 for h in restoring["heads"])


def test_importance_pruning_and_mechanism_scores():
    task, model = trained_recall_model()
    importance = hg.inspect.head_importance(model, task, batches=2, batch_size=16)
    assert len(importance.raw) == 2 and len(importance.raw[0]) == 2
    order = hg.inspect.importance_order(importance)
    assert sorted(order) == [(0, 0), (0, 1), (1, 0), (1, 1)]
    curve = hg.inspect.pruning_curve(model, task, order, batches=2, batch_size=16)
    assert [c["removed"] for c in curve] == [0, 1, 2, 3, 4]
    band = hg.inspect.random_pruning_band(model, task, orders=3, seed=1, batches=2, batch_size=16)
    assert band["removed"] == [0, 1, 2, 3, 4] and band["orders"] == 3
    # No heads removed and all removed are the same sets for every order: a zero-width band.
    assert band["low_loss"][0] == band["high_loss"][0] == pytest.approx(curve[0]["loss"])
    assert band["low_loss"][4] == pytest.approx(curve[4]["loss"])
    scores = hg.inspect.mechanism_scores(model, task, batches=2, batch_size=16)
    assert len(scores.induction) == 2 and scores.positions_induction > 0
    # d = 16, E = 32: W_q, W_k, W_v rows (3 d E), their biases (3 d), W_o columns (E d).
    assert hg.inspect.head_parameter_counts(model) == [3 * 16 * 32 + 3 * 16 + 32 * 16] * 4


def test_analysis_results_are_described_in_their_docstrings():
    dla = hg.inspect.direct_logit_attribution.__doc__
    for key in ("'labels'", "'values'", "'heads'", "'logit_difference'", "'sum'", "mean over"):
        assert key in dla, key
    assert "{stage: Tensor}" in hg.inspect.logit_lens.__doc__
    assert "mean over the batch" in hg.inspect.LogitDifference.__doc__
