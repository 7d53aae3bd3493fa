"""snippets/residual_gradients.py: the identity path keeps the gradient alive."""

from __future__ import annotations

import itertools

import pytest
import torch
from torch import nn

from snippets.residual_gradients import DeepMLP, first_layer_grad_norm, grad_norms

SEEDS = [0, 1, 2, 3, 4]


@pytest.mark.parametrize("seed", SEEDS)
def test_residual_keeps_orders_of_magnitude_more_gradient(seed, device):
    plain = first_layer_grad_norm(residual=False, seed=seed, device=device)
    resid = first_layer_grad_norm(residual=True, seed=seed, device=device)
    assert plain > 0 and torch.isfinite(torch.tensor(resid))
    assert resid >= 100 * plain, f"seed {seed}: residual {resid:.3e} vs plain {plain:.3e}"


def test_plain_gradient_shrinks_by_about_one_over_sqrt3_per_layer(device):
    # default init: Var(w) = 1/(3 fan_in), so ||W^T g|| ~ ||g|| / sqrt(3); tanh' ~ 1 near 0
    norms = grad_norms(residual=False, seed=0, device=device)
    factor = (norms[10] / norms[49]) ** (1 / 39)
    assert 0.5 < factor < 0.6
    assert all(a < b for a, b in itertools.pairwise(norms[10:]))  # strictly decays downwards


def test_residual_first_layer_gets_at_least_the_last_layers_gradient(device):
    norms = grad_norms(residual=True, seed=0, device=device)
    assert norms[0] >= norms[-1]  # nothing vanished on the way down (it even grew)


def test_flag_changes_nothing_but_the_skip():
    torch.manual_seed(0)
    a = DeepMLP(4, 8, residual=False)
    torch.manual_seed(0)
    b = DeepMLP(4, 8, residual=True)
    for (name, p), q in zip(a.state_dict().items(), b.state_dict().values(), strict=True):
        torch.testing.assert_close(p, q, msg=name)


def test_plain_matches_nn_sequential_forward_and_backward(device):
    torch.manual_seed(0)
    ours = DeepMLP(6, 16, residual=False).to(device)
    ref = nn.Sequential(*itertools.chain.from_iterable((lin, nn.Tanh()) for lin in ours.layers))
    x = torch.randn(5, 16, device=device, requires_grad=True)
    x_ref = x.detach().clone().requires_grad_()
    y, y_ref = ours(x), ref(x_ref)
    torch.testing.assert_close(y, y_ref)
    g = torch.randn_like(y)
    y.backward(g)
    y_ref.backward(g)
    torch.testing.assert_close(x.grad, x_ref.grad)


def test_residual_forward_is_x_plus_f_of_x(device):
    torch.manual_seed(0)
    model = DeepMLP(3, 8, residual=True).to(device)
    x = torch.randn(4, 8, device=device)
    expected = x
    for layer in model.layers:
        expected = expected + torch.tanh(layer(expected))
    torch.testing.assert_close(model(x), expected)


def test_jacobian_of_a_residual_stack_is_the_product_of_identity_plus_jacobians(device):
    if device.type == "mps":
        pytest.skip("MPS has no float64")
    torch.manual_seed(0)
    model = DeepMLP(3, 5, residual=True).to(device=device, dtype=torch.float64)
    x = torch.randn(5, device=device, dtype=torch.float64)
    eye = torch.eye(5, device=device, dtype=torch.float64)
    product, h = eye, x
    for i, layer in enumerate(model.layers):
        j_f = torch.autograd.functional.jacobian(lambda v, lin=layer: torch.tanh(lin(v)), h)
        product = (eye + j_f) @ product
        h = model.block(i, h)
    full = torch.autograd.functional.jacobian(model, x)
    torch.testing.assert_close(full, product)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (dict(depth=0), "depth must be a positive int, got 0"),
        (dict(width=-3), "width must be a positive int, got -3"),
        (dict(depth=2.5), "depth must be a positive int, got 2.5"),
        (dict(width=True), "width must be a positive int, got True"),
    ],
)
def test_bad_sizes_are_named(kwargs, match):
    with pytest.raises(ValueError, match=match):
        DeepMLP(**kwargs)


def test_wrong_width_names_expected_and_actual():
    with pytest.raises(ValueError, match=r"input of shape \(\.\.\., 64\), got \(2, 63\)"):
        DeepMLP()(torch.randn(2, 63))


def test_wrong_dtype_is_named():
    with pytest.raises(TypeError, match=r"floating-point tensor, got torch\.int64"):
        DeepMLP(2, 3)(torch.ones(2, 3, dtype=torch.long))
    with pytest.raises(TypeError, match="floating-point tensor, got list"):
        DeepMLP(2, 3)([1.0, 2.0, 3.0])


@pytest.mark.parametrize("residual", ["False", "no", 0, None])
def test_residual_must_be_a_bool(residual):
    # "False" and "no" are true: read as a flag they would silently build the residual net
    with pytest.raises(TypeError, match=f"residual must be True or False, got {residual!r}"):
        DeepMLP(2, 3, residual=residual)
    with pytest.raises(TypeError, match="residual must be True or False"):
        grad_norms(residual, depth=2, width=3)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        (dict(batch_size=0), ValueError, "batch_size must be a positive int, got 0"),
        (dict(batch_size=-1), ValueError, "batch_size must be a positive int, got -1"),
        (dict(batch_size=2.5), ValueError, r"batch_size must be a positive int, got 2\.5"),
        (dict(seed=1.5), TypeError, r"seed must be an int, got 1\.5"),
        (dict(seed="a"), TypeError, "seed must be an int, got 'a'"),
    ],
)
def test_bad_grad_norms_arguments_are_named(kwargs, error, match):
    # batch_size=0 used to return 0.0 for every layer, and seed=1.5 to run seed 1
    with pytest.raises(error, match=match):
        grad_norms(False, **{"depth": 2, "width": 3, **kwargs})


def test_small_gradients_keep_their_norm_in_float32(one_thread):
    # past ~150 plain layers the first layers' gradients are below 1e-19: their squares
    # underflow float32, and a float32 norm would read 0; the norm is taken in float64
    norms = grad_norms(residual=False, seed=0, depth=150)
    assert 0.0 < min(norms) < 1e-30
    norms64 = grad_norms(residual=False, seed=0, depth=150, dtype=torch.float64)
    assert norms[0] == pytest.approx(norms64[0], rel=1e-2)


@pytest.mark.parametrize(("dtype", "depth"), [(torch.float16, 50), (torch.float32, 300)])
def test_a_gradient_that_underflows_is_refused_not_reported_as_0(dtype, depth, one_thread):
    # float16's smallest number is 2**-24 and float32's 2**-149: below it, the gradient is 0
    match = rf"a layer's gradient underflowed to 0 in {dtype}; use torch\.float64"
    with pytest.raises(ValueError, match=match):
        grad_norms(residual=False, seed=0, depth=depth, dtype=dtype)
    assert min(grad_norms(residual=True, seed=0, depth=depth, dtype=dtype)) > 0  # no underflow


def test_half_precision_works_where_nothing_underflows(one_thread):
    norms16 = grad_norms(residual=False, seed=0, depth=5, dtype=torch.float16)
    norms32 = grad_norms(residual=False, seed=0, depth=5)
    assert norms16 == pytest.approx(norms32, rel=1e-2)
