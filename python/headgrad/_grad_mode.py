"""no_grad / enable_grad / set_grad_enabled: context managers and decorators, as in PyTorch."""
import functools

from . import _headgrad


class _GradMode:
    mode = True

    def __init__(self):
        self._previous = []

    def __enter__(self):
        self._previous.append(_headgrad.is_grad_enabled())
        _headgrad._set_grad_enabled(self.mode)
        return self

    def __exit__(self, *exc):
        _headgrad._set_grad_enabled(self._previous.pop())
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with type(self)():
                return fn(*args, **kwargs)
        return wrapper


class no_grad(_GradMode):
    """with headgrad.no_grad(): ops record no graph (also a decorator)."""
    mode = False


class enable_grad(_GradMode):
    """with headgrad.enable_grad(): ops record a graph again (also a decorator)."""
    mode = True


class set_grad_enabled:
    """Sets grad mode now (called as a function) and restores it after a with-block."""

    def __init__(self, mode):
        """Sets grad mode to bool(mode) at once (torch.set_grad_enabled).

        Leaving a with-block restores the mode from before.

        Args:
            mode (bool): True records the graph, False does not.
        """
        self._previous = _headgrad.is_grad_enabled()
        _headgrad._set_grad_enabled(bool(mode))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        _headgrad._set_grad_enabled(self._previous)
        return False
