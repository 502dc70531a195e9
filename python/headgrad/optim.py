"""headgrad.optim: SGD, Adam, AdamW (torch.optim's keywords), LRSchedule and clipping.

    opt = headgrad.optim.AdamW(model.parameters(), lr=3e-3)
    schedule = headgrad.optim.LRSchedule.cosine(3e-3, warmup_steps=100, total_steps=2000)
    schedule.apply(opt, step)
"""
from ._headgrad.optim import (  # noqa: F401
    SGD, Adam, AdamW, LRSchedule, Optimizer, clip_grad_norm_, grad_norm,
)
