"""snippets/rms_norm.py against torch.nn.RMSNorm and torch.nn.functional.rms_norm."""

from __future__ import annotations

import itertools

import pytest
import torch
from torch import nn
from torch.nn import functional as F

from snippets.rms_norm import EPS_PLACEMENTS, RMSNorm, rms_norm_eps
from tests import norm_contract
from tests.checks import (
    assert_gradcheck,
    assert_matches_module_db,
    assert_matches_op_samples,
    copy_random_params,
    op_info,
)

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
    with pytest.raises(ValueError, match="eps must be None or a finite number >= 0, got -1"):
        RMSNorm(3, eps=-1)


# --- extreme values ----------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("scale", [2e19, 1e20, 1e38])
def test_a_mean_of_squares_that_overflows_gives_nan_not_zeros(scale, dtype, device):
    # squares above fp32's max (~3.4e38) make the mean inf, and x * rsqrt(inf) = 0: a
    # plausible-looking row of zeros, which is what nn.RMSNorm and F.rms_norm return
    row = torch.tensor([1.0, -1.0, 3.0, 0.0], device=device)
    x = torch.stack([row * scale, row]).to(dtype)
    ours, ref = pair(4, None, True, device, dtype=dtype)
    y, y_ref = ours(x), ref(x)
    assert torch.isnan(y[0]).all()
    if device.type == "cpu":  # PyTorch's silent zeros (other backends' kernels may differ)
        assert torch.equal(y_ref[0], torch.zeros_like(y_ref[0]))
    torch.testing.assert_close(y[1], y_ref[1])  # the other row is untouched
    if device.type != "mps":  # in float64 the same values are ordinary: the right answer
        ours64, ref64 = pair(4, None, True, device, dtype=torch.float64)
        x64 = x.to(torch.float64)
        torch.testing.assert_close(ours64(x64), ref64(x64))
        assert torch.isfinite(ours64(x64)).all()


@pytest.mark.parametrize("bad", [float("inf"), float("-inf"), float("nan")])
def test_inf_and_nan_give_a_nan_row(bad, device):
    # PyTorch: NaN where x is inf or NaN, and 0 (x / inf) at the finite values of the row
    # (all NaN for a NaN); ours: NaN everywhere in that row, as LayerNorm gives
    x = torch.tensor([[bad, 1.0, 2.0, 3.0], [1.0, -1.0, 3.0, 0.0]], device=device)
    ours, ref = pair(4, None, True, device)
    y, y_ref = ours(x), ref(x)
    assert torch.isnan(y[0]).all() and torch.isnan(y_ref[0, 0])
    torch.testing.assert_close(y[1], y_ref[1])


def test_tiny_values_are_not_flushed(device):
    x = torch.tensor([[1e-30, -1e-30, 3e-30, 0.0]], device=device)  # far below sqrt(eps)
    ours, ref = pair(4, None, False, device)
    y = ours(x)
    assert (y[0, :3] != 0).all()  # about 1e-27: small, but not 0
    torch.testing.assert_close(y, ref(x), rtol=1e-5, atol=0)


@pytest.mark.parametrize("shape", [(0, 5), (3, 0, 5)])
def test_empty_input_matches_pytorch(shape, device):
    ours, ref = pair(5, None, True, device)
    x = torch.randn(*shape, device=device, requires_grad=True)
    y, y_ref = ours(x), ref(x)
    assert y.shape == y_ref.shape == shape
    y.sum().backward()
    assert torch.equal(ours.weight.grad, torch.zeros(5, device=device))


# --- PyTorch's own test inputs -----------------------------------------------------------------


def rms_norm_module(sample):
    """F.rms_norm(x, normalized_shape, weight, eps) as a module, or why it is not one."""
    assert set(sample.kwargs) <= {"eps"}, f"a new argument in PyTorch's samples: {sample.kwargs}"
    normalized_shape, weight = (*sample.args, None)[:2]
    eps = sample.kwargs.get("eps")
    if eps is not None and eps < 0:
        return "eps < 0: F.rms_norm takes it, RMSNorm refuses it (norm_contract)"
    kwargs = dict(normalized_shape=normalized_shape, eps=eps, elementwise_affine=weight is not None)
    return kwargs, {} if weight is None else {"weight": weight}, True


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_pytorch_op_db_samples(dtype, device, one_thread):
    if device.type == "mps" and dtype == torch.float64:
        pytest.skip("MPS has no float64")
    name = "nn.functional.rms_norm"
    assert_matches_op_samples(RMSNorm, nn.RMSNorm, name, rms_norm_module, device, dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_pytorch_module_db_inputs(dtype, device, one_thread):
    if device.type == "mps" and dtype == torch.float64:
        pytest.skip("MPS has no float64")
    assert assert_matches_module_db(RMSNorm, nn.RMSNorm, device, dtype) >= 10


def test_what_pytorch_refuses_ours_refuses():
    # the error inputs of F.rms_norm's OpInfo, as module calls
    checked = 0
    for error in op_info("nn.functional.rms_norm").error_inputs("cpu"):
        sample = error.sample_input
        normalized_shape, weight = sample.args[:2]
        if weight is not None:
            continue  # a weight of the wrong shape: F.rms_norm only, the module makes its own
        with pytest.raises(ValueError, match=r"normalized_shape|expects input"):
            RMSNorm(normalized_shape, elementwise_affine=False)(sample.input)
        checked += 1
    assert checked >= 2


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


@pytest.mark.parametrize("placement", EPS_PLACEMENTS)
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_eps_placements_compute_half_precision_in_fp32(placement, dtype, device):
    # 300² = 90000 overflows fp16 (max 65504): in fp16 the mean of squares would be inf
    # and every output 0
    x = torch.tensor([[300.0, 1.0, -2.0, 0.5], [1.0, -1.0, 3.0, 0.0]], device=device).to(dtype)
    y = rms_norm_eps(x, 1e-6, placement)
    assert y.dtype == dtype
    expected = rms_norm_eps(x.to(torch.float32), 1e-6, placement).to(dtype)
    torch.testing.assert_close(y, expected, atol=0, rtol=0)
    assert y[0, 0].item() == pytest.approx(2.0, rel=1e-2)  # 300 / sqrt(90005.25 / 4)
    if placement == "inside":
        torch.testing.assert_close(y, F.rms_norm(x, (4,), eps=1e-6))


@pytest.mark.parametrize("placement", EPS_PLACEMENTS)
def test_eps_placements_give_nan_when_the_mean_of_squares_overflows(placement, device):
    x = torch.tensor([[1e20, -1e20, 3e20, 0.0]], device=device)  # squares > fp32's max
    assert torch.isnan(rms_norm_eps(x, 1e-6, placement)).all()


def test_eps_placement_refuses_a_bad_eps():
    for bad in (-1e-6, float("nan"), float("inf"), "1e-6", None, True):
        with pytest.raises(ValueError, match=r"eps must be a finite number >= 0, got"):
            rms_norm_eps(torch.randn(2, 3), bad, "inside")
