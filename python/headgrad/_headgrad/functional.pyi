"""Type stubs of headgrad._headgrad.functional (written by scripts/make_python_stubs.py from the module's
own signatures; do not edit by hand)."""
import builtins
import os
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple, Union, overload

import numpy

import headgrad._headgrad as _hg


def cross_entropy(input: _hg.Tensor, target: _hg.Tensor, *, reduction: str = ..., ignore_index: int = ..., label_smoothing: builtins.float = ...) -> _hg.Tensor: """Cross-entropy of logits against class indices (torch.nn.functional.cross_entropy)."""

def dropout(input: _hg.Tensor, p: builtins.float = ..., training: builtins.bool = ..., *, generator: _hg.Generator = ...) -> _hg.Tensor: """Inverted dropout (torch.nn.functional.dropout)."""

def embedding(input: _hg.Tensor, weight: _hg.Tensor, padding_idx: Optional[int] = ...) -> _hg.Tensor: """Rows of a table looked up by index (torch.nn.functional.embedding)."""

def gelu(input: _hg.Tensor, *, approximate: str = ...) -> _hg.Tensor: """GELU, elementwise (torch.nn.functional.gelu)."""

def layer_norm(input: _hg.Tensor, normalized_shape: object, weight: Optional[_hg.Tensor] = ..., bias: Optional[_hg.Tensor] = ..., eps: builtins.float = ...) -> _hg.Tensor: """Layer normalization over the trailing dimensions (torch.nn.functional.layer_norm)."""

def linear(input: _hg.Tensor, weight: _hg.Tensor, bias: Optional[_hg.Tensor] = ...) -> _hg.Tensor: """input @ weight^T + bias (torch.nn.functional.linear)."""

def log_softmax(input: _hg.Tensor, dim: int, *, safe: builtins.bool = ...) -> _hg.Tensor: """log(softmax(input, dim)), computed stably (torch.nn.functional.log_softmax)."""

def mse_loss(input: _hg.Tensor, target: _hg.Tensor, *, reduction: str = ...) -> _hg.Tensor: """The squared error (input - target)^2 (torch.nn.functional.mse_loss)."""

def one_hot(input: _hg.Tensor, num_classes: int = ..., *, dtype: object = ...) -> _hg.Tensor: """One-hot encoding (torch.nn.functional.one_hot)."""

def relu(input: _hg.Tensor) -> _hg.Tensor: """max(input, 0), elementwise (torch.nn.functional.relu)."""

def sigmoid(input: _hg.Tensor) -> _hg.Tensor: """1 / (1 + exp(-input)), elementwise (torch.nn.functional.sigmoid)."""

def softmax(input: _hg.Tensor, dim: int, *, safe: builtins.bool = ...) -> _hg.Tensor: """Softmax along a dimension (torch.nn.functional.softmax)."""

def tanh(input: _hg.Tensor) -> _hg.Tensor: """The hyperbolic tangent, elementwise (torch.nn.functional.tanh)."""
