"""snippets/layer_norm.py against torch.nn.LayerNorm."""

from __future__ import annotations

import itertools

import pytest
import torch
from torch import nn

from snippets.layer_norm import LayerNorm
from tests import norm_contract
from tests.checks import assert_gradcheck, assert_same_forward_backward, copy_random_params

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
    with pytest.raises(ValueError, match="eps must be >= 0, got -1"):
        LayerNorm(3, eps=-1)


def test_repr_names_the_settings():
    assert (
        repr(LayerNorm(4, bias=False))
        == "LayerNorm((4,), eps=1e-05, elementwise_affine=True, bias=False)"
    )
