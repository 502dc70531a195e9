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
    """The GPU's name, e.g. 'NVIDIA H100 80GB HBM3' (torch.cuda.get_device_name).

    Args:
        device (int, str or Device, optional): None (GPU 0), N, 'cuda' or 'cuda:N'.

    Returns:
        str; headgrad.DeviceError when there is no such GPU.
    """
    return _c.device_name(_index(device))


def synchronize(device=None):
    """Waits until every kernel queued on the GPU has finished (torch.cuda.synchronize).

    Call it before reading a timer.

    Args:
        device (int, str or Device, optional): None (GPU 0), N, 'cuda' or 'cuda:N'.

    Returns:
        None; headgrad.DeviceError when there is no such GPU.
    """
    _c.synchronize(_index(device))


def memory_stats(device=None):
    """The caching allocator's counters for one GPU (torch.cuda.memory_stats, fewer keys).

    Args:
        device (int, str or Device, optional): None (GPU 0), N, 'cuda' or 'cuda:N'.

    Returns:
        dict {'allocated_bytes': int (held by live tensors), 'reserved_bytes': int
        (allocated plus cached), 'peak_allocated_bytes': int (since the last reset),
        'cuda_malloc_calls': int}; all 0 without that GPU.
    """
    return _c.memory_stats(_index(device))


def memory_allocated(device=None):
    """Bytes of GPU memory held by live tensors (torch.cuda.memory_allocated).

    Args:
        device (int, str or Device, optional): None (GPU 0), N, 'cuda' or 'cuda:N'.

    Returns:
        int: 0 without that GPU.
    """
    return memory_stats(device)["allocated_bytes"]


def memory_reserved(device=None):
    """Bytes of GPU memory held by the caching allocator (torch.cuda.memory_reserved).

    Allocated plus cached.

    Args:
        device (int, str or Device, optional): None (GPU 0), N, 'cuda' or 'cuda:N'.

    Returns:
        int: 0 without that GPU.
    """
    return memory_stats(device)["reserved_bytes"]


def max_memory_allocated(device=None):
    """The peak of memory_allocated since the last reset (torch.cuda.max_memory_allocated).

    Args:
        device (int, str or Device, optional): None (GPU 0), N, 'cuda' or 'cuda:N'.

    Returns:
        int: bytes; 0 without that GPU.
    """
    return memory_stats(device)["peak_allocated_bytes"]


def reset_peak_memory_stats(device=None):
    """Resets max_memory_allocated to the memory allocated now (torch.cuda.reset_peak_memory_stats).

    Args:
        device (int, str or Device, optional): None (GPU 0), N, 'cuda' or 'cuda:N'.

    Returns:
        None.
    """
    _c.reset_peak_memory(_index(device))
