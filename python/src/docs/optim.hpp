// The docstrings of optim.cpp's bindings: the optimizers (torch.optim's keywords and
// arithmetic), LRSchedule and gradient clipping.
#pragma once

namespace headgrad::python::docs {

constexpr const char* optimizer_step =
    R"doc(One update of every parameter that has a gradient (torch.optim's step).

Parameters whose .grad is None are skipped. Runs without the GIL.

Returns:
    None.)doc";

constexpr const char* optimizer_zero_grad =
    R"doc(Sets every parameter's .grad to None (torch.optim's zero_grad).

Args:
    set_to_none (bool): must be True (ValueError otherwise). Default True.

Returns:
    None.)doc";

constexpr const char* optimizer_lr =
    R"doc(The learning rate (torch's param_groups[0]['lr']); settable (>= 0).

Returns:
    float.)doc";

constexpr const char* optimizer_params = R"doc(The parameters the optimizer updates.

Returns:
    list of Tensor (the parameters themselves), in the order given.)doc";

constexpr const char* optimizer_type_name = R"doc(The optimizer's name.

Returns:
    str: 'SGD', 'Adam' or 'AdamW'.)doc";

constexpr const char* optimizer_state_dict = R"doc(The optimizer's state, for checkpoints.

Returns:
    dict {str: numpy.ndarray} (copies): 'num_params' (0-d int64), the hyperparameters ('lr',
    ...: 0-d float64; flags such as 'nesterov', 'amsgrad': 0-d int64), and per parameter i
    that has taken a step its buffers 'state.<i>.<name>' shaped like the parameter
    ('state.3.exp_avg') and counters ('state.3.step', 0-d int64).)doc";

constexpr const char* optimizer_load_state_dict =
    R"doc(Restores a state from state_dict(), hyperparameters included (as torch.optim).

Every entry is checked before anything changes (ValueError listing the problems).

Args:
    state_dict (dict {str: numpy.ndarray or Tensor}).

Returns:
    None.)doc";

constexpr const char* sgd =
    R"doc(Stochastic gradient descent in torch.optim.SGD's exact update order.

With momentum, dampening, weight decay (L2 added to the gradient) and Nesterov momentum.)doc";

constexpr const char* sgd_init = R"doc(An SGD optimizer (torch.optim.SGD).

Args:
    params (iterable of Tensor): floating leaf tensors (model.parameters()); no parameter
        groups.
    lr (float): default 1e-3.
    momentum (float): default 0.0.
    dampening (float): default 0.0.
    weight_decay (float): L2 added to the gradient. Default 0.0.
    nesterov (bool): needs momentum and no dampening. Default False.)doc";

constexpr const char* adam =
    R"doc(Adam (torch.optim.Adam's arithmetic): weight decay is L2 added to the gradient.)doc";

constexpr const char* adam_init = R"doc(An Adam optimizer (torch.optim.Adam).

Args:
    params (iterable of Tensor): floating leaf tensors (model.parameters()); no parameter
        groups.
    lr (float): default 1e-3.
    betas (tuple of float): (beta1, beta2). Default (0.9, 0.999).
    eps (float): default 1e-8.
    weight_decay (float, optional): L2 added to the gradient. Default 0.0.
    amsgrad (bool): default False.)doc";

constexpr const char* adamw = R"doc(AdamW, with torch.optim.AdamW's arithmetic.

Decoupled weight decay: p *= 1 - lr * weight_decay before the moment update.)doc";

constexpr const char* adamw_init = R"doc(An AdamW optimizer (torch.optim.AdamW).

Args:
    params (iterable of Tensor): floating leaf tensors (model.parameters()); no parameter
        groups.
    lr (float): default 1e-3.
    betas (tuple of float): (beta1, beta2). Default (0.9, 0.999).
    eps (float): default 1e-8.
    weight_decay (float, optional): decoupled; None keeps the default. Default 0.01.
    amsgrad (bool): default False.)doc";

constexpr const char* schedule_constant =
    R"doc(A constant learning rate after an optional linear warm-up.

Args:
    lr (float): the rate.
    warmup_steps (int): W; lr_at(step) = lr * (step + 1) / W for step < W. Default 0.

Returns:
    LRSchedule.)doc";

constexpr const char* schedule_linear =
    R"doc(Linear warm-up, then linear decay from lr (at step W) to min_lr (at total_steps).

Args:
    lr (float): the peak rate.
    warmup_steps (int): W.
    total_steps (int): N >= W, N >= 1.
    min_lr (float): the floor, in [0, lr]. Default 0.0.

Returns:
    LRSchedule.)doc";

constexpr const char* schedule_cosine =
    R"doc(Linear warm-up, then half a cosine from lr (at step W) down to min_lr (at total_steps).

Args:
    lr (float): the peak rate.
    warmup_steps (int): W.
    total_steps (int): N >= W, N >= 1.
    min_lr (float): the floor, in [0, lr]. Default 0.0.

Returns:
    LRSchedule.)doc";

constexpr const char* schedule_lr_at = R"doc(The learning rate of a step: a pure function of it.

Args:
    step (int): the 0-based index of the optimizer step about to be taken (>= 0).

Returns:
    float.)doc";

constexpr const char* schedule_apply = R"doc(Sets the optimizer's lr to lr_at(step).

Args:
    optimizer (Optimizer).
    step (int): the 0-based index of the step about to be taken.

Returns:
    float: the rate set.)doc";

constexpr const char* clip_grad_norm_ =
    R"doc(Scales the gradients so that their total norm is at most max_norm, in place.

As torch.nn.utils.clip_grad_norm_: each .grad *= max_norm / (total + 1e-6) when that factor
is below 1. Parameters without a gradient are ignored.

Args:
    parameters (Tensor or iterable of Tensor).
    max_norm (float): >= 0.
    norm_type (float): p > 0, or float('inf') for the largest |g|. Default 2.0.
    error_if_nonfinite (bool): raise ValueError (changing nothing) when the total is inf or
        NaN. Default False.

Returns:
    float: the total norm before clipping (0.0 when no parameter has a gradient).)doc";

constexpr const char* grad_norm =
    R"doc(The total gradient norm clip_grad_norm_ would compute, changing nothing.

Args:
    parameters (Tensor or iterable of Tensor).
    norm_type (float): p > 0, or float('inf'). Default 2.0.

Returns:
    float: the p-norm of the per-parameter norms (0.0 when no parameter has a gradient).)doc";

}  // namespace headgrad::python::docs
