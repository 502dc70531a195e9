"""headgrad.nn.functional: torch.nn.functional's names (softmax(safe=True) gives zeros for a
row that is all -inf, instead of NaN)."""
from .._headgrad.functional import (  # noqa: F401
    cross_entropy, dropout, embedding, gelu, layer_norm, linear, log_softmax, mse_loss, one_hot,
    relu, sigmoid, softmax, tanh,
)
