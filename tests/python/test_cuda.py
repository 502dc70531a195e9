"""The GPU from Python: headgrad.cuda's functions, tensors and modules moved with
.cuda() / .to('cuda:0'), autograd, MultiheadAttention against torch (float64 on the CPU,
the oracle), an AdamW training loop against the same loop on the CPU and against itself
(bitwise), the Trainer, captures and hooks on a GPU model. Skipped without a GPU, except
the first test, which checks what headgrad.cuda says then."""
import numpy as np
import pytest

import headgrad as hg

gpu = pytest.mark.skipif(not hg.cuda.is_available(),
                         reason="no CUDA GPU: " + hg.cuda.unavailable_reason())


def test_cuda_module_answers_with_or_without_a_gpu():
    count = hg.cuda.device_count()
    assert hg.cuda.is_available() == (count > 0) == hg.cuda_is_available()
    if count == 0:
        assert hg.cuda.unavailable_reason() != ""
        with pytest.raises(hg.DeviceError):
            hg.zeros(3, device="cuda")
        return
    assert hg.cuda.built() and hg.cuda.unavailable_reason() == ""
    assert hg.cuda.get_device_name() == hg.cuda.get_device_name("cuda:0") != ""
    with pytest.raises(ValueError, match="not a GPU"):
        hg.cuda.synchronize("cpu")


@gpu
def test_tensors_move_and_report_their_device():
    a = hg.arange(12, dtype=hg.float64).reshape(3, 4)
    g = a.cuda()
    assert g.is_cuda and g.device.type == "cuda" and g.device.index == 0 and str(g.device) == "cuda:0"
    assert a.to("cuda:0").device == g.device == hg.device("cuda")
    np.testing.assert_array_equal(g.cpu().numpy(), a.numpy())
    assert g.tolist() == a.tolist()
    with pytest.raises(hg.DeviceError, match=r"t.cpu\(\).numpy\(\)"):
        g.numpy()
    with pytest.raises(hg.DeviceError, match="different devices"):
        a + g
    z = hg.zeros(2, 3, device="cuda:0", requires_grad=True)
    assert z.is_cuda and z.requires_grad
    # A seed gives the same values on every device (drawn on the CPU, then copied).
    np.testing.assert_array_equal(hg.randn(5, generator=hg.Generator(3), device="cuda").cpu().numpy(),
                                  hg.randn(5, generator=hg.Generator(3)).numpy())


@gpu
def test_ops_and_their_gradients_on_the_gpu_equal_the_cpu_in_float64():
    rng = np.random.default_rng(0)
    x_np, w_np = rng.standard_normal((4, 6, 8)), rng.standard_normal((8, 5))

    def run(device):
        x = hg.tensor(x_np, device=device, requires_grad=True)
        w = hg.tensor(w_np, device=device, requires_grad=True)
        h = hg.nn.functional.layer_norm(x, (8,))
        y = hg.softmax(h @ w, dim=-1) * hg.tanh(h[..., :5]) + hg.relu(h[:, 1:2, 3:]).mean()
        loss = (y.pow(2).sum(-1).sqrt() + hg.log_softmax(y, -1).amax(-1)).sum()
        loss.backward()
        return loss.item(), x.grad.cpu().numpy(), w.grad.cpu().numpy()

    cpu, cuda = run("cpu"), run("cuda")
    np.testing.assert_allclose(cuda[0], cpu[0], rtol=1e-12)
    for mine, ref in zip(cuda[1:], cpu[1:]):
        np.testing.assert_allclose(mine, ref, rtol=1e-10, atol=1e-12)


@gpu
def test_multihead_attention_on_the_gpu_matches_torch(torch):
    rng = np.random.default_rng(7)
    E, H, L, N = 16, 4, 5, 3
    t_mha = torch.nn.MultiheadAttention(E, H, batch_first=True, dtype=torch.float64)
    mha = hg.nn.MultiheadAttention(E, H, batch_first=True).double()
    mha.load_state_dict(t_mha.state_dict())
    mha.cuda()
    assert all(p.is_cuda for p in mha.parameters())
    x = rng.standard_normal((N, L, E))
    kpm = rng.random((N, L)) < 0.3
    kpm[:, 0] = False
    tx = torch.tensor(x, requires_grad=True)
    hx = hg.tensor(x, device="cuda", requires_grad=True)
    t_out, t_w = t_mha(tx, tx, tx, key_padding_mask=torch.tensor(kpm), average_attn_weights=False)
    out, w = mha(hx, hx, hx, key_padding_mask=hg.tensor(kpm, device="cuda"),
                 average_attn_weights=False)
    assert out.is_cuda and w.is_cuda
    np.testing.assert_allclose(out.detach().cpu().numpy(), t_out.detach().numpy(), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(w.detach().cpu().numpy(), t_w.detach().numpy(), rtol=1e-9, atol=1e-12)
    g = rng.standard_normal(out.shape)
    (t_out * torch.tensor(g)).sum().backward()
    (out * hg.tensor(g, device="cuda")).sum().backward()
    np.testing.assert_allclose(hx.grad.cpu().numpy(), tx.grad.numpy(), rtol=1e-8, atol=1e-12)
    t_params = dict(t_mha.named_parameters())
    for name, p in mha.named_parameters():
        np.testing.assert_allclose(p.grad.cpu().numpy(), t_params[name].grad.numpy(), rtol=1e-8,
                                   atol=1e-12, err_msg=name)


def train_loop(device, steps=30):
    """A Python AdamW loop on a GPT; returns the losses and the final weights."""
    task = hg.train.make_task("associative_recall", seed=2, length=4)
    model = hg.nn.GPT(vocab_size=task.vocab_size, max_len=task.max_len, d_model=32, nhead=4,
                      num_layers=2, generator=hg.Generator(11)).to(device)
    opt = hg.optim.AdamW(model.parameters(), lr=3e-3)
    losses = []
    for step in range(steps):
        batch = task.batch("train", step, 16).to(device)
        loss = hg.train.task_loss(model(batch.tokens, batch.key_padding_mask), batch)
        opt.zero_grad()
        loss.backward()
        hg.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        losses.append(loss.item())
    return losses, {n: p.detach().cpu().numpy() for n, p in model.named_parameters()}


@gpu
def test_a_python_training_loop_on_the_gpu_tracks_the_cpu_and_repeats_bitwise():
    cpu_losses, cpu_weights = train_loop("cpu")
    a_losses, a_weights = train_loop("cuda:0")
    b_losses, b_weights = train_loop("cuda:0")
    assert a_losses == b_losses
    for name in a_weights:
        np.testing.assert_array_equal(a_weights[name], b_weights[name], err_msg=name)
    # float32 on both sides, summed in different orders: close, not bitwise.
    np.testing.assert_allclose(a_losses, cpu_losses, rtol=1e-3)
    for name in a_weights:
        np.testing.assert_allclose(a_weights[name], cpu_weights[name], rtol=1e-2, atol=1e-3,
                                   err_msg=name)


@gpu
def test_trainer_capture_and_hooks_on_a_gpu_model():
    hg.cuda.reset_peak_memory_stats()
    task = hg.train.make_task("copy", seed=0, length=6)
    model = hg.nn.GPT(vocab_size=task.vocab_size, max_len=task.max_len, d_model=32, nhead=2,
                      num_layers=2, generator=hg.Generator(0)).cuda()
    opt = hg.optim.Adam(model.parameters(), lr=3e-3)
    result = hg.train.Trainer(model, task, opt, steps=60, batch_size=32, eval_every=30,
                              eval_batches=2, progress=False).fit()
    assert result["steps_done"] == 60
    assert hg.cuda.max_memory_allocated() > 0 and hg.cuda.memory_reserved() >= hg.cuda.memory_allocated()
    tokens = task.batch("validation", 0, 4).tokens.cuda()
    model.eval()
    with hg.no_grad(), hg.inspect.Capture(model, ["pattern"]) as cap:
        clean = model(tokens)
    p = cap["layers.0.self_attn.pattern"]
    assert isinstance(p, np.ndarray) and p.shape == (4, 2, tokens.shape[1], tokens.shape[1])
    np.testing.assert_allclose(p.sum(-1), 1.0, rtol=1e-5)
    with hg.no_grad():
        with hg.inspect.Hooks(model) as hooks:
            hooks.add("layers.1.self_attn.z", lambda v, ctx: v * 0, head=0)
            ablated = model(tokens)
        with hg.inspect.HeadAblation(model, [(1, 0)]):
            gated = model(tokens)
    assert ablated.is_cuda and not np.allclose(ablated.cpu().numpy(), clean.cpu().numpy())
    np.testing.assert_allclose(ablated.cpu().numpy(), gated.cpu().numpy(), rtol=1e-5, atol=1e-6)
    # A hook that returns a CPU tensor for a GPU activation is refused, by name.
    with hg.inspect.Hooks(model) as hooks:
        hooks.add("layers.0.resid_post", lambda v, ctx: v.cpu())
        with pytest.raises(hg.Error, match="resid_post|device"):
            model(tokens)
    del model, opt, clean, ablated, gated
    hg.cuda.empty_cache()
    hg.cuda.synchronize()
