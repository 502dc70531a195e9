"""Type stubs of headgrad._headgrad.cuda (written by scripts/make_python_stubs.py from the module's
own signatures; do not edit by hand)."""
import builtins
import os
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple, Union, overload

import numpy

import headgrad._headgrad as _hg


def allow_tf32() -> builtins.bool: """Whether float32 matmuls on the GPU may use TF32."""

def built() -> builtins.bool: """Whether the CUDA backend library loads; says nothing of a driver or a GPU."""

def device_count() -> int: """The number of usable GPUs (headgrad.cuda.device_count)."""

def device_name(index: int = ...) -> str: """The GPU's name, e.g. 'NVIDIA H100 80GB HBM3'."""

def empty_cache() -> None: """Returns every cached (free) block of GPU memory to the driver (torch.cuda.empty_cache)."""

def is_available() -> builtins.bool: """Whether a GPU can be used (the CUDA backend loads and a device is there)."""

def memory_stats(index: int = ...) -> dict: """The caching allocator's counters for one GPU."""

def reset_peak_memory(index: int = ...) -> None: """Resets peak_allocated_bytes to the memory allocated now (nothing without that GPU)."""

def set_allow_tf32(allow: builtins.bool) -> None: """Lets float32 matmuls on the GPU use TF32 tensor cores; off by default."""

def synchronize(index: int = ...) -> None: """Waits until every kernel queued on the GPU has finished (before reading a timer)."""

def unavailable_reason() -> str: """Why no GPU can be used."""
