"""snippets/rms_norm.py against torch.nn.RMSNorm and torch.nn.functional.rms_norm."""

from __future__ import annotations

import itertools

import pytest
import torch
from torch import nn
from torch.nn import functional as F

from snippets.rms_norm import EPS_PLACEMENTS, RMSNorm, rms_norm_eps
from tests import norm_contract
from tests.checks import assert_gradcheck, copy_random_params

SHAPES = [5, (5,), (3, 5), [2, 3, 5]]
SETTINGS = list(itertools.product(SHAPES, [None, 1e-6, 1e-2], [True, False]))


def trailing(normalized_shape) -> tuple[int, ...]:
    return (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)


def pair(normalized_shape, eps, elementwise_affine, device, dtype=torch.float32):
    """Our module and PyTorch's, with the same (random, non-trivial) weight."""
    kwargs = dict(eps=eps, elementwise_affine=elementwise_affine, device=device, dtype=dtype)
    ours, ref = RMSNorm(normalized_shape, **kwargs), nn.RMSNorm(normalized_shape, **kwargs)
    copy_random_params(ours, ref)
    return ours, ref


@pytest.mark.parametrize(("normalized_shape", "eps", "elementwise_affine"), SETTINGS)
def test_forward_and_backward_match_pytorch(normalized_shape, eps, elementwise_affine, device):
    ours, ref = pair(normalized_shape, eps, elementwise_affine, device)
    torch.manual_seed(0)
    x = (3 * torch.randn(4, 2, *trailing(normalized_shape), device=device) + 1).requires_grad_()
    x_ref = x.detach().clone().requires_grad_()
    x_fn = x.detach().clone().requires_grad_()
    w_fn = None if ref.weight is None else ref.weight.detach().clone().requires_grad_()

    y, y_ref = ours(x), ref(x_ref)
    y_fn = F.rms_norm(x_fn, trailing(normalized_shape), w_fn, eps)
    torch.testing.assert_close(y, y_ref, atol=1e-6, rtol=1e-5)
    torch.testing.assert_close(y, y_fn, atol=1e-6, rtol=1e-5)

    grad_out = torch.randn_like(y)
    y.backward(grad_out)
    y_ref.backward(grad_out)
    y_fn.backward(grad_out)
    torch.testing.assert_close(x.grad, x_ref.grad, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(x.grad, x_fn.grad, atol=1e-5, rtol=1e-5)
    if elementwise_affine:
        torch.testing.assert_close(ours.weight.grad, ref.weight.grad, atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(ours.weight.grad, w_fn.grad, atol=1e-5, rtol=1e-5)
    else:
        assert ours.weight is None and ref.weight is None


@pytest.mark.parametrize("elementwise_affine", [True, False])
def test_gradcheck_fp64(elementwise_affine, device):
    if device.type == "mps":
        pytest.skip("MPS has no float64")
    ours, _ = pair((3, 4), None, elementwise_affine, device, dtype=torch.float64)
    assert_gradcheck(ours, torch.randn(2, 3, 4, dtype=torch.float64, device=device))


def test_parameters_and_defaults_match_pytorch():
    ours, ref = RMSNorm(7), nn.RMSNorm(7)
    assert ours.eps is None and ref.eps is None
    assert ours.normalized_shape == ref.normalized_shape == (7,)
    assert {n: p.shape for n, p in ours.named_parameters()} == {
        n: p.shape for n, p in ref.named_parameters()
    }
    torch.testing.assert_close(ours.weight, torch.ones(7))
    assert RMSNorm(7, elementwise_affine=False).weight is None
    assert ours.state_dict().keys() == ref.state_dict().keys()  # checkpoints load both ways
    assert repr(ours) == repr(ref) == "RMSNorm((7,), eps=None, elementwise_affine=True)"
    assert repr(RMSNorm((2, 3), eps=1e-6, elementwise_affine=False)) == repr(
        nn.RMSNorm((2, 3), eps=1e-6, elementwise_affine=False)
    )


def test_factory_kwargs_place_the_weight(device):
    ours = RMSNorm(4, device=device, dtype=torch.float16)
    assert ours.weight.device.type == device.type and ours.weight.dtype == torch.float16


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_low_precision_is_computed_in_fp32(dtype, device):
    # 300 * N(0, 1): many squares exceed fp16's max 65504
    torch.manual_seed(0)
    x = (300 * torch.randn(4, 1024, device=device)).to(dtype)
    ours, ref = pair(1024, None, True, device, dtype=dtype)
    y = ours(x)
    assert y.dtype == dtype and torch.isfinite(y).all()
    torch.testing.assert_close(y, ref(x), atol=2e-2, rtol=1e-2)
    expected = F.rms_norm(x.float(), (1024,), ours.weight.float()).to(dtype)
    torch.testing.assert_close(y, expected, atol=2e-2, rtol=1e-2)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_default_eps_is_that_of_the_fp32_compute_type(dtype, device):
    # RMS 1e-2: eps = finfo(fp16).eps ~ 1e-3 inside the root would shrink the output
    # to ~0.3; PyTorch (and this module) use finfo(float32).eps for fp16/bf16 input.
    x = torch.full((3, 64), 1e-2, device=device).to(dtype)
    y = RMSNorm(64, device=device, dtype=dtype)(x)
    torch.testing.assert_close(y, F.rms_norm(x, (64,)), atol=1e-2, rtol=1e-2)
    torch.testing.assert_close(y.float(), torch.ones(3, 64, device=device), atol=2e-2, rtol=0)


def test_zero_input_gives_zero_not_nan(device):
    x = torch.zeros(2, 6, device=device, requires_grad=True)
    y = RMSNorm(6, device=device)(x)
    y.sum().backward()
    assert torch.equal(y, torch.zeros_like(y)) and torch.isfinite(x.grad).all()


def test_bad_input_is_named():
    norm_contract.check_input_errors(RMSNorm)
    with pytest.raises(TypeError, match=r"floating-point tensor, got torch\.bool"):
        RMSNorm(3)(torch.ones(2, 3, dtype=torch.bool))


def test_bad_normalized_shape():
    norm_contract.check_constructor_errors(RMSNorm)


def test_bad_eps():
    with pytest.raises(ValueError, match="eps must be None or >= 0, got -1"):
        RMSNorm(3, eps=-1)


# --- the three eps placements ---------------------------------------------------------------


def test_eps_inside_is_pytorch(device):
    torch.manual_seed(0)
    x = torch.randn(4, 16, device=device) * 1e-3  # small RMS: eps matters here
    for eps in (1e-6, 1e-5):
        torch.testing.assert_close(rms_norm_eps(x, eps, "inside"), F.rms_norm(x, (16,), eps=eps))


def test_eps_outside_is_the_authors_pytorch_code(device):
    # bzhangGo/rmsnorm rmsnorm_torch.py: rms = ||x||_2 * d**-0.5; x / (rms + eps)
    torch.manual_seed(0)
    x = torch.randn(4, 16, device=device) * 1e-3
    eps = 1e-8
    rms = x.norm(2, dim=-1, keepdim=True) * 16**-0.5
    torch.testing.assert_close(rms_norm_eps(x, eps, "outside"), x / (rms + eps))


def test_eps_none_is_the_paper_and_breaks_on_zero(device):
    torch.manual_seed(0)
    x = torch.randn(4, 16, device=device)
    expected = x / x.pow(2).mean(-1, keepdim=True).sqrt()
    torch.testing.assert_close(rms_norm_eps(x, 1e-6, "none"), expected)
    zero = torch.zeros(1, 16, device=device)
    assert torch.isnan(rms_norm_eps(zero, 1e-6, "none")).all()
    for placement in ("outside", "inside"):
        assert torch.equal(rms_norm_eps(zero, 1e-6, placement), zero)


def test_placements_agree_at_unit_scale_and_differ_at_small_scale():
    torch.manual_seed(0)
    x = torch.randn(8, 512, dtype=torch.float64)
    outs = [rms_norm_eps(x, 1e-6, p) for p in EPS_PLACEMENTS]
    for out in outs[1:]:
        torch.testing.assert_close(out, outs[0], atol=1e-5, rtol=0)
    small = [rms_norm_eps(x * 1e-3, 1e-6, p) for p in EPS_PLACEMENTS]
    rms = [s.pow(2).mean(-1).sqrt().mean().item() for s in small]
    assert rms[0] == pytest.approx(1.0) and rms[1] == pytest.approx(1.0, abs=1e-2)
    assert rms[2] == pytest.approx(2**-0.5, abs=1e-2)  # inside: 1e-3 / sqrt(1e-6 + 1e-6)


def test_eps_placement_errors():
    with pytest.raises(
        ValueError, match=r"placement must be one of \('none', 'outside', 'inside'\)"
    ):
        rms_norm_eps(torch.randn(2, 3), 1e-6, "under")
    with pytest.raises(TypeError, match=r"floating-point tensor, got torch\.int64"):
        rms_norm_eps(torch.ones(2, 3, dtype=torch.long), 1e-6, "inside")
