"""Named results of the C++ functions (as PyTorch's torch.return_types)."""
from collections import namedtuple

max = namedtuple("max", ["values", "indices"])  # noqa: A001
load = namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])
