"""Type stubs of headgrad._headgrad.autograd (written by scripts/make_python_stubs.py from the module's
own signatures; do not edit by hand)."""
import builtins
import os
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple, Union, overload

import numpy

import headgrad._headgrad as _hg


def backward(tensors: object, grad_tensors: object = ..., retain_graph: builtins.bool = ...) -> None: """Backpropagates from several tensors at once (torch.autograd.backward)."""

def grad(outputs: object, inputs: object, grad_outputs: object = ..., retain_graph: builtins.bool = ..., allow_unused: builtins.bool = ...) -> tuple: """The gradients of outputs with respect to inputs (torch.autograd.grad)."""

def gradcheck(func: function, inputs: List[_hg.Tensor], *, eps: builtins.float = ..., atol: builtins.float = ..., rtol: builtins.float = ...) -> builtins.bool: """Checks backward against central differences (torch.autograd.gradcheck)."""
