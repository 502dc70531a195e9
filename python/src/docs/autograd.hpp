// The docstrings of autograd.cpp's bindings: grad mode, tensor hooks and headgrad.autograd.
#pragma once

namespace headgrad::python::docs {

constexpr const char* is_grad_enabled =
    R"doc(Whether ops record the autograd graph on this thread (torch.is_grad_enabled).

headgrad.no_grad() turns it off.

Returns:
    bool.)doc";

constexpr const char* removable_handle =
    R"doc(What Tensor.register_hook returns (torch's RemovableHandle).

remove() unregisters the hook.)doc";

constexpr const char* removable_handle_remove =
    R"doc(Unregisters the hook; a second call does nothing.

Returns:
    None.)doc";

constexpr const char* removable_handle_id = R"doc(The hook's number on its tensor.

Returns:
    int.)doc";

constexpr const char* register_hook =
    R"doc(Registers a hook on this tensor's gradient (torch.Tensor.register_hook).

The hook runs during backward, when the gradient flowing into this tensor is known.

Args:
    hook (callable): hook(grad) -> Tensor or None; grad is the gradient flowing into this
        tensor (its shape and dtype); a returned Tensor of the same shape and dtype replaces
        it, None keeps it.

Returns:
    RemovableHandle.)doc";

constexpr const char* register_post_accumulate_grad_hook =
    R"doc(Registers a hook run after backward accumulates into this leaf's .grad.

As torch.Tensor.register_post_accumulate_grad_hook.

Args:
    hook (callable): hook(tensor) -> None; it receives this leaf (read tensor.grad).

Returns:
    RemovableHandle.)doc";

constexpr const char* autograd_grad =
    R"doc(The gradients of outputs with respect to inputs (torch.autograd.grad).

They are returned, not accumulated into .grad. Runs without the GIL.

Args:
    outputs (Tensor or sequence of Tensor).
    inputs (Tensor or sequence of Tensor): tensors the outputs depend on.
    grad_outputs (Tensor or sequence of Tensor, optional): the gradient of each output,
        of its shape; None (or a None entry) for a one-element output. Default None.
    retain_graph (bool): keep the graph for another backward. Default False.
    allow_unused (bool): give None for an input the outputs do not depend on instead of
        raising AutogradError. Default False.

Returns:
    tuple of Tensor (or None), one per input, each of that input's shape.)doc";

constexpr const char* autograd_backward =
    R"doc(Backpropagates from several tensors at once (torch.autograd.backward).

The gradients accumulate into the leaves' .grad. Runs without the GIL.

Args:
    tensors (Tensor or sequence of Tensor): the roots.
    grad_tensors (Tensor or sequence of Tensor, optional): the gradient of each root, of
        its shape; None (or a None entry) for a one-element root. Default None.
    retain_graph (bool): keep the graph for another backward. Default False.

Returns:
    None.)doc";

constexpr const char* gradcheck =
    R"doc(Checks backward against central differences (torch.autograd.gradcheck).

Args:
    func (callable): func(*inputs) -> Tensor.
    inputs (sequence of Tensor): float64 tensors; those that require grad are checked.
    eps (float, keyword): the finite-difference step. Default 1e-6.
    atol (float, keyword): default 1e-5.
    rtol (float, keyword): default 1e-3.

Returns:
    True; a failure raises AutogradError naming the worst element.)doc";

}  // namespace headgrad::python::docs
