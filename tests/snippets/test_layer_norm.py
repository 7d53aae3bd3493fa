"""snippets/layer_norm.py against torch.nn.LayerNorm."""

from __future__ import annotations

import itertools

import pytest
import torch
from torch import nn

from snippets.layer_norm import LayerNorm
from tests import norm_contract
from tests.checks import (
    assert_gradcheck,
    assert_matches_module_db,
    assert_matches_op_samples,
    assert_same_forward_backward,
    copy_random_params,
)

SHAPES = [5, (5,), (3, 5), [2, 3, 5]]
SETTINGS = list(itertools.product(SHAPES, [1e-5, 1e-2], [True, False], [True, False]))


def pair(normalized_shape, eps, elementwise_affine, bias, device, dtype=torch.float32):
    """Our module and PyTorch's, with the same (random, non-trivial) parameters."""
    kwargs = dict(
        eps=eps, elementwise_affine=elementwise_affine, bias=bias, device=device, dtype=dtype
    )
    ours, ref = LayerNorm(normalized_shape, **kwargs), nn.LayerNorm(normalized_shape, **kwargs)
    copy_random_params(ours, ref)
    return ours, ref


@pytest.mark.parametrize(("normalized_shape", "eps", "elementwise_affine", "bias"), SETTINGS)
def test_forward_and_backward_match_pytorch(
    normalized_shape, eps, elementwise_affine, bias, device
):
    ours, ref = pair(normalized_shape, eps, elementwise_affine, bias, device)
    trailing = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    torch.manual_seed(0)
    x = 3 * torch.randn(4, 2, *trailing, device=device) + 1
    assert_same_forward_backward(ours, ref, x)


@pytest.mark.parametrize(
    ("elementwise_affine", "bias"), [(True, True), (True, False), (False, False)]
)
def test_gradcheck_fp64(elementwise_affine, bias, device):
    if device.type == "mps":
        pytest.skip("MPS has no float64")
    ours, _ = pair((3, 4), 1e-5, elementwise_affine, bias, device, dtype=torch.float64)
    assert_gradcheck(ours, torch.randn(2, 3, 4, dtype=torch.float64, device=device))


def test_parameters_and_defaults_match_pytorch():
    ours, ref = LayerNorm(7), nn.LayerNorm(7)
    assert ours.eps == ref.eps
    assert ours.normalized_shape == ref.normalized_shape == (7,)
    assert {n: p.shape for n, p in ours.named_parameters()} == {
        n: p.shape for n, p in ref.named_parameters()
    }
    torch.testing.assert_close(ours.weight, torch.ones(7))
    torch.testing.assert_close(ours.bias, torch.zeros(7))
    assert LayerNorm(7, bias=False).bias is None
    assert LayerNorm(7, elementwise_affine=False).weight is None
    assert ours.state_dict().keys() == ref.state_dict().keys()  # checkpoints load both ways


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_low_precision_is_computed_in_fp32(dtype, device):
    # 300 * N(0, 1) over 1024 features: the sum of squares (~1e8) overflows fp16 (max 65504)
    torch.manual_seed(0)
    x = (300 * torch.randn(4, 1024, device=device)).to(dtype)
    ours = LayerNorm(1024, device=device, dtype=dtype)
    y = ours(x)
    assert y.dtype == dtype and torch.isfinite(y).all()
    expected = nn.functional.layer_norm(x.float(), (1024,)).to(dtype)
    torch.testing.assert_close(y, expected, atol=1e-2, rtol=1e-2)


def test_bad_input_is_named():
    norm_contract.check_input_errors(LayerNorm)


def test_bad_normalized_shape():
    norm_contract.check_constructor_errors(LayerNorm)


def test_bad_eps():
    with pytest.raises(ValueError, match="eps must be a finite number >= 0, got -1"):
        LayerNorm(3, eps=-1)


# --- extreme values ----------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("scale", [2e19, 1e20, 1e38])
def test_a_variance_that_overflows_gives_nan_not_the_bias(scale, dtype, device):
    # the squared deviations overflow (fp32 max ~3.4e38): the variance is inf, and
    # rsqrt(inf) = 0 would turn every output into the bias, a plausible-looking number.
    # nn.LayerNorm returns the bias at 2e19 and NaN at 1e20; ours NaN at both.
    row = torch.tensor([1.0, -1.0, 3.0, 0.0], device=device) * scale
    x = torch.stack([row, torch.tensor([1.0, -1.0, 3.0, 0.0], device=device)]).to(dtype)
    ours, ref = pair(4, 1e-5, True, True, device, dtype=dtype)
    y, y_ref = ours(x), ref(x)
    assert torch.isnan(y[0]).all()
    torch.testing.assert_close(y[1], y_ref[1])  # the other row is untouched
    # in float64 the same values are ordinary, and both give the right answer
    ours64, ref64 = pair(4, 1e-5, True, True, device, dtype=torch.float64)
    if device.type != "mps":
        x64 = x.to(torch.float64)
        torch.testing.assert_close(ours64(x64), ref64(x64))
        assert torch.isfinite(ours64(x64)).all()


def test_a_constant_huge_row_is_the_bias_where_pytorch_gives_nan(device):
    # deviations 0: nothing overflows, and the right answer is the bias
    x = torch.full((1, 4), 1e20, device=device)
    ours, ref = pair(4, 1e-5, True, True, device)
    torch.testing.assert_close(ours(x), ours.bias.detach().expand(1, 4))
    if device.type == "cpu":  # PyTorch's CPU kernel (other backends may differ)
        assert torch.isnan(ref(x)).all()


@pytest.mark.parametrize("bad", [float("inf"), float("-inf"), float("nan")])
def test_inf_and_nan_give_a_nan_row_as_pytorch_does(bad, device):
    x = torch.tensor([[bad, 1.0, 2.0, 3.0], [1.0, -1.0, 3.0, 0.0]], device=device)
    ours, ref = pair(4, 1e-5, True, True, device)
    y, y_ref = ours(x), ref(x)
    assert torch.isnan(y[0]).all() and torch.isnan(y_ref[0]).all()
    torch.testing.assert_close(y[1], y_ref[1])


def test_tiny_values_are_not_flushed(device):
    x = torch.tensor([[1e-30, -1e-30, 3e-30, 0.0]], device=device)  # far below sqrt(eps)
    ours, ref = pair(4, 1e-5, False, False, device)
    y = ours(x)
    assert (y != 0).all()  # about 1e-28: small, but not 0
    torch.testing.assert_close(y, ref(x), rtol=1e-5, atol=0)


@pytest.mark.parametrize("shape", [(0, 5), (3, 0, 5)])
def test_empty_input_matches_pytorch(shape, device):
    ours, ref = pair(5, 1e-5, True, True, device)
    y = assert_same_forward_backward(ours, ref, torch.randn(*shape, device=device))
    assert y.shape == shape


# --- PyTorch's own test inputs -----------------------------------------------------------------


def layer_norm_module(sample):
    """F.layer_norm(x, normalized_shape, weight, bias, eps) as a module, or why it is not one."""
    assert set(sample.kwargs) <= {"eps"}, f"a new argument in PyTorch's samples: {sample.kwargs}"
    normalized_shape, weight, bias = (*sample.args, None, None)[:3]
    eps = sample.kwargs.get("eps", 1e-5)
    if eps < 0:
        return "eps < 0: F.layer_norm takes it, LayerNorm refuses it (norm_contract)"
    if weight is None and bias is not None:
        return "a bias without a weight: F.layer_norm only, the module has both or neither"
    kwargs = dict(
        normalized_shape=normalized_shape,
        eps=eps,
        elementwise_affine=weight is not None,
        bias=bias is not None,
    )
    state = {name: p for name, p in (("weight", weight), ("bias", bias)) if p is not None}
    return kwargs, state, True


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_pytorch_op_db_samples(dtype, device, one_thread):
    if device.type == "mps" and dtype == torch.float64:
        pytest.skip("MPS has no float64")
    name = "nn.functional.layer_norm"
    assert_matches_op_samples(LayerNorm, nn.LayerNorm, name, layer_norm_module, device, dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_pytorch_module_db_inputs(dtype, device, one_thread):
    if device.type == "mps" and dtype == torch.float64:
        pytest.skip("MPS has no float64")
    assert assert_matches_module_db(LayerNorm, nn.LayerNorm, device, dtype) >= 10


def test_repr_names_the_settings():
    assert (
        repr(LayerNorm(4, bias=False))
        == "LayerNorm((4,), eps=1e-05, elementwise_affine=True, bias=False)"
    )
