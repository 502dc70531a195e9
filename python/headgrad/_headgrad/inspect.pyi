"""Type stubs of headgrad._headgrad.inspect (written by scripts/make_python_stubs.py from the module's
own signatures; do not edit by hand)."""
import builtins
import os
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple, Union, overload

import numpy

import headgrad._headgrad as _hg


class ActivationCache:
    """One run's activations by hook-point name"""
    def __getitem__(self: ActivationCache, arg0: str) -> _hg.Tensor: ...
    def __len__(self: ActivationCache) -> int: ...
    def get(self: ActivationCache, name: str) -> _hg.Tensor: """The cached tensor of a point; cache[name] is the same."""
    def grad(self: ActivationCache, name: str) -> _hg.Tensor: """The gradient of a cached point after a backward from the run's output."""
    def keys(self: ActivationCache) -> List[str]: """The cached names (as a dict's keys)."""
    def names(self: ActivationCache) -> List[str]: """The cached names."""

class Capture:
    """with Capture(model, points) as cap: ... records the model's hook points (by default the attention layers' q, k, v, scores, pattern, z and result) as '<module path>.<point>'; points: own names ('pattern') or full names ('layers.0.self_attn.pattern'), [] for every point"""
    def __getitem__(self: Capture, arg0: str) -> numpy.ndarray: ...
    def __init__(self: Capture, model: _hg.nn.Module, points: Optional[List[str]] = ..., retain_grads: builtins.bool = ...) -> None: """A capture of a model's hook points, recording while its with-block is open."""
    def clear(self: Capture) -> None: """Drops every recorded tensor."""
    def get(self: Capture, name: str) -> numpy.ndarray: """The recorded values of one point, detached; cap[name] is the same."""
    def grad(self: Capture, name: str) -> numpy.ndarray: """The gradient of a recorded point after backward."""
    def layer_names(self: Capture) -> List[str]: """The modules with a chosen point, in model order."""
    def names(self: Capture) -> List[str]: """The full names recorded so far."""
    def tensor(self: Capture, name: str) -> _hg.Tensor: """The recorded tensor itself, part of the graph (differentiable)."""

class HeadAblation:
    """with HeadAblation(model, [(layer, head), ...]): those heads' gates are 0"""
    def __init__(self: HeadAblation, model: _hg.nn.Module, heads: object) -> None: """A with-block that sets the gates of some heads to 0 (the rest 1)."""

class HeadImportance:
    """Head importance scores (Michel et al. 2019): head_importance's result."""
    @property
    def examples(self) -> int: ...
    @property
    def layers(self) -> List[str]: ...
    @property
    def normalized(self) -> List[List[builtins.float]]: ...
    @property
    def raw(self) -> List[List[builtins.float]]: ...

class HookContext:
    """Where a hook runs: name, module, point, layer, head"""
    @property
    def head(self) -> int: ...
    @property
    def layer(self) -> int: ...
    @property
    def module(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def per_head(self) -> builtins.bool: ...
    @property
    def point(self) -> str: ...

class Hooks:
    """with Hooks(model) as hooks: hooks.add('layers.0.self_attn.z', fn, head=3); fn(value, context) -> replacement or None"""
    def __init__(self: Hooks, model: _hg.nn.Module) -> None: """Hooks on a model's hook points, run while the with-block is open on this thread."""
    def add(self: Hooks, name: str, hook: function, head: Optional[int] = ...) -> None: """Adds a hook at a point (hooks at one point run in the order added)."""
    def clear(self: Hooks) -> None: """Removes every hook."""
    def names(self: Hooks) -> List[str]: """Every hook point of the model, in model order."""
    def names_at(self: Hooks, point: str) -> List[str]: """The full names of the points with one own name."""
    def point_names(self: Hooks) -> List[str]: """The distinct own names of the model's points."""

class LogitDifference:
    def __call__(self: LogitDifference, logits: _hg.Tensor) -> _hg.Tensor: ...
    def __init__(self: LogitDifference, position: _hg.Tensor, answer: _hg.Tensor, wrong: _hg.Tensor) -> None: """The metric: the mean logit difference between answer and wrong tokens."""

class MechanismScores:
    """Previous-token and induction scores, [layer][head]"""
    @property
    def induction(self) -> List[List[builtins.float]]: ...
    @property
    def induction_scored(self) -> List[List[builtins.float]]: ...
    @property
    def layers(self) -> List[str]: ...
    @property
    def positions_induction(self) -> int: ...
    @property
    def positions_induction_scored(self) -> int: ...
    @property
    def positions_previous(self) -> int: ...
    @property
    def previous_token(self) -> List[List[builtins.float]]: ...

class Patching:
    """Activation patching: clean and corrupted inputs, a metric of the logits (LogitDifference or any function logits -> scalar tensor)"""
    def __init__(self: Patching, model: object, clean: _hg.Tensor, corrupted: _hg.Tensor, metric: object, *, run: object = ...) -> None: """Activation patching between a clean and a corrupted input."""
    def attribution_by_head(self: Patching, point: str = ...) -> PatchingGrid: """Attribution patching per head (Nanda 2023): by_head's first-order estimate."""
    def attribution_by_head_position(self: Patching, point: str = ...) -> PatchingGrid: """Attribution patching per head and position: by_head_position's first-order estimate."""
    def by_head(self: Patching, point: str = ...) -> PatchingGrid: """Each head's slice of a per-head point patched in turn."""
    def by_head_position(self: Patching, point: str = ...) -> PatchingGrid: """Each head at each position patched in turn (query positions; key positions for k and v)."""
    def by_layer(self: Patching, point: str = ...) -> PatchingGrid: """Each layer's point patched in turn (whole tensor)."""
    def by_position(self: Patching, point: str = ...) -> PatchingGrid: """Each layer's point at each position patched in turn (dim 1 of a residual point)."""
    @property
    def clean_cache(self) -> ActivationCache: ...
    @property
    def clean_metric(self) -> builtins.float: ...
    @property
    def corrupted_cache(self) -> ActivationCache: ...
    @property
    def corrupted_metric(self) -> builtins.float: ...
    def fewest_heads_restoring(self: Patching, fraction: builtins.float = ...) -> dict: """The fewest heads whose joint z patching restores at least `fraction`."""
    def normalise(self: Patching, metric: builtins.float) -> builtins.float: """A metric normalised: 1 restores the clean behaviour, 0 does nothing."""
    def patch(self: Patching, patches: object) -> builtins.float: """The corrupted run with some activations set to their clean values."""
    def path_patch(self: Patching, sender: object, receiver: object, via: str = ...) -> builtins.float: """Path patching (Wang et al. 2022) from one sender head to one receiver head."""
    def path_patching(self: Patching, receiver: object, via: str = ...) -> PatchingGrid: """path_patch from every sender head to one receiver."""

class PatchingGrid:
    """A grid of normalised metrics: values shaped `shape`"""
    def at(self: PatchingGrid, i: int, j: int = ..., k: int = ...) -> builtins.float: """One value."""
    @property
    def dims(self) -> List[str]: ...
    def numpy(self: PatchingGrid) -> numpy.ndarray: """The values as an array (as .values)."""
    @property
    def point(self) -> str: ...
    @property
    def rows(self) -> List[str]: ...
    @property
    def shape(self) -> tuple: ...
    def tensor(self: PatchingGrid) -> _hg.Tensor: """The values as a tensor."""
    @property
    def values(self) -> numpy.ndarray: ...

def ablate_heads(model: object, input: _hg.Tensor, reference: _hg.Tensor, metric: object, kind: str = ..., point: str = ..., seed: int = ..., *, run: object = ...) -> dict: """Each head's point ablated in turn on `input`, the metric measured."""

def attention_layers(model: _hg.nn.Module) -> list: """Every attention layer of a model, itself included, in model order."""

def attention_parameter_count(model: _hg.nn.Module) -> int: """The number of parameters of every attention layer, out_proj.bias included."""

def attention_view_html(title: str, note: str, groups: list) -> str: """The attention view's page (use headgrad.inspect.AttentionView)"""

def attention_view_labels(labels: object, examples: int, length: int, where: str) -> list: """The attention view's token labels as (text, role) pairs, checked: one list of `length` labels per example, each a str or a (text, role) pair of str that UTF-8 can write"""

def corrupt_recall(task: _hg.train.Task, batch: _hg.train.Batch, corruption: str = ...) -> dict: """Clean and corrupted prompts of a recall task, for patching."""

def corrupt_recall_query(task: _hg.train.Task, batch: _hg.train.Batch) -> dict: """corrupt_recall(task, batch, 'query')."""

def direct_logit_attribution(model: _hg.nn.GPT, input: _hg.Tensor, position: _hg.Tensor, answer: _hg.Tensor, wrong: _hg.Tensor) -> dict: """Each residual component's direct contribution to the mean logit difference."""

def greedy_order(model: _hg.nn.Module, task: _hg.train.Task, split: str = ..., batches: int = ..., batch_size: int = ..., forward: object = ...) -> list: """The greedy ablation order of every head."""

def head_grad_norms(model: _hg.nn.Module, capture: Capture = ...) -> list: """Per-head gradient norms left by the last backward."""

def head_importance(model: _hg.nn.Module, task: _hg.train.Task, split: str = ..., batches: int = ..., batch_size: int = ..., forward: object = ...) -> HeadImportance: """Every head's importance (Michel, Levy and Neubig 2019)."""

def head_parameter_counts(model: _hg.nn.Module) -> List[int]: """The number of parameters of each head."""

def head_points() -> List[str]: """The own names of the attention layers' per-head hook points."""

def importance_order(importance: HeadImportance, ranking: str = ...) -> list: """Every head, least important first (ties: model order)."""

def logit_difference(logits: _hg.Tensor, position: _hg.Tensor, answer: _hg.Tensor, wrong: _hg.Tensor) -> _hg.Tensor: """The mean logit difference between answer and wrong tokens."""

def logit_lens(model: _hg.nn.GPT, input: _hg.Tensor) -> dict: """The logit lens: the residual stream after each layer, decoded into logits."""

def mechanism_scores(model: _hg.nn.Module, task: _hg.train.Task, split: str = ..., batches: int = ..., batch_size: int = ..., forward: object = ...) -> MechanismScores: """Previous-token and induction scores of every head (Olsson et al. 2022)."""

def mechanism_scores_of_patterns(patterns: List[_hg.Tensor], tokens: _hg.Tensor, key_padding_mask: Optional[_hg.Tensor] = ..., scored: Optional[_hg.Tensor] = ...) -> MechanismScores: """Previous-token and induction scores from patterns already captured."""

def pruning_curve(model: _hg.nn.Module, task: _hg.train.Task, order: object, split: str = ..., batches: int = ..., batch_size: int = ..., forward: object = ...) -> list: """Loss and accuracy with the first k heads of an order ablated, k = 0 .. len(order)."""

def random_order(model: _hg.nn.Module, seed: int) -> list: """Every head of a model in a random order."""

def random_pruning_band(model: _hg.nn.Module, task: _hg.train.Task, orders: int, seed: int = ..., coverage: builtins.float = ..., split: str = ..., batches: int = ..., batch_size: int = ..., forward: object = ...) -> dict: """The pruning curves of `orders` random orders: their mean and central band."""

def run_with_cache(model: object, input: object, names: Optional[List[str]] = ..., with_grads: builtins.bool = ..., hooks: Hooks = ...) -> tuple: """One run with every requested hook point cached (TransformerLens's run_with_cache)."""

def write_attention_view(path: str, title: str, note: str, groups: list) -> None: """Writes the attention view's page atomically (use headgrad.inspect.AttentionView)"""
