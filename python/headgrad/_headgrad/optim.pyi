"""Type stubs of headgrad._headgrad.optim (written by scripts/make_python_stubs.py from the module's
own signatures; do not edit by hand)."""
import builtins
import os
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple, Union, overload

import numpy

import headgrad._headgrad as _hg


class Adam:
    """Adam (torch.optim.Adam's arithmetic): weight decay is L2 added to the gradient."""
    def __init__(self: Adam, params: object, lr: builtins.float = ..., betas: Tuple[builtins.float, builtins.float] = ..., eps: builtins.float = ..., weight_decay: Optional[builtins.float] = ..., amsgrad: builtins.bool = ...) -> None: """An Adam optimizer (torch.optim.Adam)."""

class AdamW:
    """AdamW, with torch.optim.AdamW's arithmetic."""
    def __init__(self: AdamW, params: object, lr: builtins.float = ..., betas: Tuple[builtins.float, builtins.float] = ..., eps: builtins.float = ..., weight_decay: Optional[builtins.float] = ..., amsgrad: builtins.bool = ...) -> None: """An AdamW optimizer (torch.optim.AdamW)."""

class LRSchedule:
    """Warmup then constant, linear or cosine decay"""
    def apply(self: LRSchedule, optimizer: Optimizer, step: int) -> builtins.float: """Sets the optimizer's lr to lr_at(step)."""
    @staticmethod
    def constant(lr: builtins.float, warmup_steps: int = ...) -> LRSchedule: """A constant learning rate after an optional linear warm-up."""
    @staticmethod
    def cosine(lr: builtins.float, warmup_steps: int, total_steps: int, min_lr: builtins.float = ...) -> LRSchedule: """Linear warm-up, then half a cosine from lr (at step W) down to min_lr (at total_steps)."""
    @staticmethod
    def linear(lr: builtins.float, warmup_steps: int, total_steps: int, min_lr: builtins.float = ...) -> LRSchedule: """Linear warm-up, then linear decay from lr (at step W) to min_lr (at total_steps)."""
    def lr_at(self: LRSchedule, step: int) -> builtins.float: """The learning rate of a step: a pure function of it."""

class Optimizer:
    """The base of the optimizers (torch.optim.Optimizer)"""
    def load_state_dict(self: Optimizer, state_dict: dict) -> None: """Restores a state from state_dict(), hyperparameters included (as torch.optim)."""
    @property
    def lr(self) -> builtins.float: ...
    @property
    def params(self) -> List[_hg.Tensor]: ...
    def state_dict(self: Optimizer) -> dict: """The optimizer's state, for checkpoints."""
    def step(self: Optimizer) -> None: """One update of every parameter that has a gradient (torch.optim's step)."""
    @property
    def type_name(self) -> str: ...
    def zero_grad(self: Optimizer, set_to_none: builtins.bool = ...) -> None: """Sets every parameter's .grad to None (torch.optim's zero_grad)."""

class SGD(Optimizer):
    """Stochastic gradient descent in torch.optim.SGD's exact update order."""
    def __init__(self: SGD, params: object, lr: builtins.float = ..., momentum: builtins.float = ..., dampening: builtins.float = ..., weight_decay: builtins.float = ..., nesterov: builtins.bool = ...) -> None: """An SGD optimizer (torch.optim.SGD)."""

def clip_grad_norm_(parameters: object, max_norm: builtins.float, norm_type: builtins.float = ..., error_if_nonfinite: builtins.bool = ...) -> builtins.float: """Scales the gradients so that their total norm is at most max_norm, in place."""

def grad_norm(parameters: object, norm_type: builtins.float = ...) -> builtins.float: """The total gradient norm clip_grad_norm_ would compute, changing nothing."""
