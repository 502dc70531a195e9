"""headgrad.cuda: the GPU, under torch.cuda's names.

    hg.cuda.is_available(), hg.cuda.device_count(), hg.cuda.get_device_name(0)
    hg.cuda.synchronize()                 # wait for the queued kernels (before a timer)
    hg.cuda.memory_allocated(), hg.cuda.memory_reserved(), hg.cuda.max_memory_allocated()
    hg.cuda.reset_peak_memory_stats(), hg.cuda.empty_cache()
    hg.cuda.set_allow_tf32(True)          # torch.backends.cuda.matmul.allow_tf32 = True

Every function is safe to call without a GPU; `unavailable_reason()` says what is missing
(the backend library, a CUDA library, the driver or a device). See docs/cuda.md.
"""
from ._headgrad import cuda as _c

built = _c.built
is_available = _c.is_available
device_count = _c.device_count
unavailable_reason = _c.unavailable_reason
set_allow_tf32 = _c.set_allow_tf32
allow_tf32 = _c.allow_tf32
empty_cache = _c.empty_cache


def _index(device):
    """A GPU number from None, an int, 'cuda:N' or a headgrad.Device."""
    if device is None:
        return 0
    if isinstance(device, int):
        return device
    from . import Device
    d = device if isinstance(device, Device) else Device(str(device))
    if d.type != "cuda":
        raise ValueError(f"headgrad.cuda: {d} is not a GPU; expected None, N, 'cuda' or 'cuda:N'")
    return d.index or 0


def get_device_name(device=None):
    return _c.device_name(_index(device))


def synchronize(device=None):
    _c.synchronize(_index(device))


def memory_stats(device=None):
    """allocated_bytes, reserved_bytes, peak_allocated_bytes and cuda_malloc_calls."""
    return _c.memory_stats(_index(device))


def memory_allocated(device=None):
    return memory_stats(device)["allocated_bytes"]


def memory_reserved(device=None):
    return memory_stats(device)["reserved_bytes"]


def max_memory_allocated(device=None):
    return memory_stats(device)["peak_allocated_bytes"]


def reset_peak_memory_stats(device=None):
    _c.reset_peak_memory(_index(device))
