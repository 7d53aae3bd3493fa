"""Numerical checks shared by the snippet tests: a module against PyTorch's own."""

from __future__ import annotations

import functools

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


# --- PyTorch's own test inputs ------------------------------------------------------------


@functools.cache
def _pytorch_test_db():
    """(op_db, module_db) of torch.testing._internal, imported once: the import takes seconds."""
    # the import calls torch.backends.disable_global_flags() for the whole process; the
    # context restores the setting on exit, so other tests may still set backend flags
    with torch.backends.__allow_nonbracketed_mutation():
        from torch.testing._internal.common_methods_invocations import op_db
        from torch.testing._internal.common_modules import module_db
    return op_db, module_db


def op_info(name: str):
    """PyTorch's OpInfo for ``name``, e.g. "nn.functional.layer_norm" (its default variant)."""
    (info,) = [o for o in _pytorch_test_db()[0] if o.name == name and not o.variant_test_name]
    return info


def module_info(module_cls: type[nn.Module]):
    """PyTorch's ModuleInfo for ``module_cls``, e.g. nn.LayerNorm."""
    (info,) = [m for m in _pytorch_test_db()[1] if m.module_cls is module_cls]
    return info


def _tolerances(dtype: torch.dtype) -> dict[str, float]:
    if dtype == torch.float64:
        return dict(atol=1e-10, rtol=1e-7, grad_atol=1e-8)
    # fp32: PyTorch's LayerNorm backward recomputes x - mean, and for a single feature
    # (x - mean = 0 exactly, weight gradient 0) returns rounding noise of up to ~1e-4
    return dict(atol=1e-5, rtol=1e-5, grad_atol=2e-4)


def _detached(value):
    return value.detach().clone() if torch.is_tensor(value) else value


def assert_matches_op_samples(ours_cls, ref_cls, op_name, to_module, device, dtype) -> list[str]:
    """Every sample of PyTorch's OpInfo ``op_name``, through ``ours_cls`` and ``ref_cls``.

    ``to_module(sample)`` turns a functional call into a module: (constructor kwargs, state
    dict, training), or a string saying why the sample is out of the module's contract.
    For each other sample, ours and the reference module get the same state and must give
    the same output, gradients and buffers, and the output must equal the functional call's.
    Returns the reasons of the samples left out; fails if no sample was compared.
    """
    info, left_out, compared = op_info(op_name), [], 0
    for sample in info.reference_inputs(device, dtype, requires_grad=False):
        spec = to_module(sample)
        if isinstance(spec, str):
            left_out.append(spec)
            continue
        kwargs, state, training = spec
        ours = ours_cls(**kwargs, device=device, dtype=dtype).train(training)
        ref = ref_cls(**kwargs, device=device, dtype=dtype).train(training)
        ours.load_state_dict(state)
        ref.load_state_dict(state)
        args = [_detached(a) for a in sample.args]  # F.batch_norm updates its running stats
        expected = info.op(sample.input, *args, **sample.kwargs)
        y = assert_same_forward_backward(ours, ref, sample.input, **_tolerances(dtype))
        torch.testing.assert_close(y.detach(), expected, atol=1e-5, rtol=1e-5)
        for (name, b), b_ref in zip(ours.named_buffers(), ref.buffers(), strict=True):
            torch.testing.assert_close(b, b_ref, atol=1e-6, rtol=1e-5, msg=name)
        compared += 1
    assert compared > 0, f"no sample of {op_name} was compared; left out: {left_out}"
    return left_out


def assert_matches_module_db(ours_cls, ref_cls, device, dtype) -> int:
    """Every input of PyTorch's ModuleInfo for ``ref_cls``, in training and in eval mode.

    Ours is built with the same constructor arguments and given the reference's (randomized)
    state; output, gradients and buffers must match. Returns the number of inputs compared.
    """
    info, compared = module_info(ref_cls), 0
    for training in (True, False):
        inputs = info.module_inputs_func(
            info, device=device, dtype=dtype, requires_grad=False, training=training
        )
        for module_input in inputs:
            c, f = module_input.constructor_input, module_input.forward_input
            ours = ours_cls(*c.args, **c.kwargs).to(device=device, dtype=dtype).train(training)
            ref = ref_cls(*c.args, **c.kwargs).to(device=device, dtype=dtype).train(training)
            copy_random_params(ours, ref)
            assert not f.kwargs, f"{module_input.desc}: forward kwargs {f.kwargs}"
            (x,) = f.args
            assert_same_forward_backward(ours, ref, x, **_tolerances(dtype))
            for (name, b), b_ref in zip(ours.named_buffers(), ref.buffers(), strict=True):
                torch.testing.assert_close(b, b_ref, atol=1e-6, rtol=1e-5, msg=name)
            compared += 1
    assert compared > 0, f"ModuleInfo of {ref_cls.__name__} gave no input"
    return compared
