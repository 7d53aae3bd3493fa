"""Numerical checks shared by the snippet tests: a module against PyTorch's own."""

from __future__ import annotations

import torch
from torch import nn


def copy_random_params(ours: nn.Module, ref: nn.Module, seed: int = 1) -> None:
    """Give ``ours`` non-trivial parameters (uniform in [-2, 2]) and copy them into ``ref``."""
    torch.manual_seed(seed)
    with torch.no_grad():
        for p in ours.parameters():
            p.uniform_(-2, 2)
    ref.load_state_dict(ours.state_dict())


def assert_same_forward_backward(ours, ref, x, atol=1e-6, rtol=1e-5, grad_atol=1e-5):
    """Same output, same input gradient and same parameter gradients for the same input."""
    x = x.detach().clone().requires_grad_()
    x_ref = x.detach().clone().requires_grad_()
    y, y_ref = ours(x), ref(x_ref)
    torch.testing.assert_close(y, y_ref, atol=atol, rtol=rtol)
    grad_out = torch.randn_like(y)
    y.backward(grad_out)
    y_ref.backward(grad_out)
    torch.testing.assert_close(x.grad, x_ref.grad, atol=grad_atol, rtol=rtol)
    for (name, p), p_ref in zip(ours.named_parameters(), ref.parameters(), strict=True):
        torch.testing.assert_close(p.grad, p_ref.grad, atol=grad_atol, rtol=rtol, msg=name)
    return y


def assert_gradcheck(module: nn.Module, x: torch.Tensor) -> None:
    """First and second derivatives, with respect to the input and every parameter (fp64)."""
    names = [name for name, _ in module.named_parameters()]
    inputs = (x.detach().requires_grad_(), *module.parameters())

    def f(x, *params):
        return torch.func.functional_call(module, dict(zip(names, params, strict=True)), (x,))

    assert torch.autograd.gradcheck(f, inputs)
    assert torch.autograd.gradgradcheck(f, inputs)
