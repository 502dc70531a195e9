"""Type stubs of headgrad._headgrad.train (written by scripts/make_python_stubs.py from the module's
own signatures; do not edit by hand)."""
import builtins
import os
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple, Union, overload

import numpy

import headgrad._headgrad as _hg


class Batch:
    """One batch of a task: tokens, targets and masks (None where absent)"""
    def __init__(self: Batch, *, tokens: Optional[_hg.Tensor] = ..., targets: Optional[_hg.Tensor] = ..., key_padding_mask: Optional[_hg.Tensor] = ..., features: Optional[_hg.Tensor] = ..., inputs: Optional[_hg.Tensor] = ..., target_mask: Optional[_hg.Tensor] = ...) -> None: """A batch built by hand (every field optional, keyword only)."""
    def __len__(self: Batch) -> int: ...
    @property
    def features(self) -> Optional[_hg.Tensor]: ...
    @property
    def inputs(self) -> Optional[_hg.Tensor]: ...
    @property
    def key_padding_mask(self) -> Optional[_hg.Tensor]: ...
    @property
    def target_mask(self) -> Optional[_hg.Tensor]: ...
    @property
    def targets(self) -> Optional[_hg.Tensor]: ...
    def to(self: Batch, device: object) -> Batch: """The batch on a device (the Trainer does this for every batch)."""
    @property
    def tokens(self) -> Optional[_hg.Tensor]: ...
IGNORE_INDEX: Any

class Task:
    """A synthetic task (make_task)"""
    def baselines(self: Task, split: str, batches: int, batch_size: int) -> list: """Reference predictors scored on the batches evaluate sees."""
    def batch(self: Task, split: str, index: int, batch_size: int) -> Batch: """Batch number `index` of a split, built on the CPU."""
    @property
    def input_dim(self) -> int: ...
    @property
    def kind(self) -> str: ...
    @property
    def max_len(self) -> int: ...
    @property
    def name(self) -> str: ...
    @property
    def num_classes(self) -> int: ...
    @property
    def num_features(self) -> int: ...
    def token_labels(self: Task, tokens: List[int]) -> list: """A name and a role for each token of one example, for viewers."""
    @property
    def vocab_size(self) -> int: ...

class Trainer:
    """The training loop (train::Trainer)."""
    def __init__(self: Trainer, model: _hg.nn.Module, task: Task, optimizer: object, *, steps: int = ..., batch_size: int = ..., eval_every: int = ..., eval_batches: int = ..., checkpoint_every: int = ..., log_every: int = ..., clip_grad_norm: builtins.float = ..., out_dir: str = ..., device: object = ..., resume: builtins.bool = ..., progress: builtins.bool = ..., schedule: Optional[_hg.optim.LRSchedule] = ..., forward: object = ..., on_evaluate: object = ..., after_backward: object = ...) -> None: """A trainer for a model on a task."""
    @property
    def device(self) -> _hg.Device: ...
    def evaluate(self: Trainer) -> dict: """Mean loss and accuracy over eval_batches validation batches."""
    def fit(self: Trainer) -> dict: """Trains the model (without the GIL: other Python threads run meanwhile)."""

def evaluate(model: _hg.nn.Module, task: Task, split: str = ..., batches: int = ..., batch_size: int = ..., forward: object = ...) -> dict: """Mean loss and accuracy of a model over batches 0 .. batches-1 of a split."""

def evaluate_logits(logits: _hg.Tensor, batch: Batch, kind: str = ...) -> dict: """Loss and accuracy of logits against a batch (no graph)."""

def induction_probe(task: Task, half: int, batch_size: int, seed: int = ...) -> Batch: """Olsson et al.'s induction probe: random sequences, each repeated once."""

def load(module: _hg.nn.Module, path: str, warn_on_attention_mismatch: builtins.bool = ...) -> None: """Reads an .npz file written by save (or a trainer checkpoint) into a module."""

def make_task(name: str, *, seed: int = ..., length: int = ..., min_length: int = ..., alphabet: int = ..., validation_fraction: builtins.float = ..., test_fraction: builtins.float = ..., modulus: int = ..., num_features: int = ..., context: int = ..., dim: int = ..., corpus: str = ...) -> Task: """A synthetic task by name (headgrad/train/tasks.hpp describes each)."""

def save(module: _hg.nn.Module, path: str) -> None: """Writes a module's state dict to an .npz file, atomically."""

def task_loss(logits: _hg.Tensor, batch: Batch, kind: str = ...) -> _hg.Tensor: """The training loss of logits against a batch, differentiable."""

def task_names() -> List[str]: """The tasks make_task knows."""
