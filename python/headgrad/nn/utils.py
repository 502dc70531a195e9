"""headgrad.nn.utils: torch.nn.utils's gradient clipping (the same function as
headgrad.optim.clip_grad_norm_, which returns the total norm before clipping)."""
from .._headgrad.optim import clip_grad_norm_  # noqa: F401
