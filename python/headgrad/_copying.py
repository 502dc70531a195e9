"""copy.deepcopy and pickle for tensors, as PyTorch's: a copy holds the values, dtype,
device and requires_grad of the original in storage of its own (a view is copied as a
tensor of its own, as pickle does in torch); deepcopy also copies .grad and, like torch,
takes graph leaves only. Installed on Tensor by headgrad/__init__.py."""
import numpy as _np

from . import _headgrad


def _rebuild_tensor(values, device, requires_grad):
    """The inverse of Tensor.__reduce_ex__: a tensor of `values` (a NumPy array) on `device`."""
    t = _headgrad.tensor(_np.array(values, copy=True))
    if device != "cpu":
        t = t.to(device)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _host_values(t):
    """t's values as a NumPy array of its own (from a copy on the CPU for a GPU tensor)."""
    d = t.detach()
    if str(d.device) != "cpu":
        d = d.to("cpu")
    return _np.array(d.numpy(), copy=True)


def _reduce_ex(self, protocol):
    return (_rebuild_tensor, (_host_values(self), str(self.device), self.requires_grad))


def _deepcopy(self, memo):
    if id(self) in memo:
        return memo[id(self)]
    if not self.is_leaf:
        raise _headgrad.AutogradError(
            "Tensor.__deepcopy__: only tensors created by the user (graph leaves) can be "
            "deep-copied, as in PyTorch; deep-copy t.detach() for the values of a result")
    new = _rebuild_tensor(_host_values(self), str(self.device), self.requires_grad)
    memo[id(self)] = new
    if self.grad is not None:
        new.grad = _deepcopy(self.grad, memo)
    return new


def install(tensor_class):
    tensor_class.__reduce_ex__ = _reduce_ex
    tensor_class.__deepcopy__ = _deepcopy
    tensor_class.__copy__ = lambda self: _rebuild_tensor(_host_values(self), str(self.device),
                                                        self.requires_grad)
