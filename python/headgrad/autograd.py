"""headgrad.autograd: grad, backward and gradcheck (torch.autograd's names)."""
from ._headgrad.autograd import backward, grad, gradcheck  # noqa: F401
