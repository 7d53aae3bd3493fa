"""snippets/grad_norms.py: the W^{2,l} gradient probe, the sweep, the power-law fit."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from snippets.grad_norms import (
    final_norm_of,
    grad_norm_sweep,
    handbook_w2,
    linear_loss,
    mse_loss,
    power_law_fit,
    w2_grad_norms,
)
from snippets.lm_experiment import xavier_init_
from snippets.resnorm import Stack, from_torch_encoder_layer

D, H, FF = 16, 4, 64
QKV = "per_projection"  # the init of Xiong et al.'s analysis


pytestmark = pytest.mark.usefixtures("one_thread")


def torch_layers(
    n_layers: int, norm_first: bool, seed: int = 0
) -> list[nn.TransformerEncoderLayer]:
    torch.manual_seed(seed)
    return [
        nn.TransformerEncoderLayer(
            D, H, FF, dropout=0.0, activation="relu", batch_first=True, norm_first=norm_first
        )
        for _ in range(n_layers)
    ]


# --- the probe against PyTorch's own layers --------------------------------------------


@pytest.mark.parametrize("norm_first", [False, True])
def test_w2_grad_norms_match_pytorch_encoder_layers(norm_first, device):
    """Same weights in the handbook's Stack and in nn.TransformerEncoderLayer: same gradients."""
    ref_layers = [xavier_init_(layer, qkv=QKV) for layer in torch_layers(3, norm_first)]
    ref_norm = nn.LayerNorm(D) if norm_first else None
    stack = Stack(3, D, H, FF, norm_position="pre" if norm_first else "post", activation="relu")
    stack.layers = nn.ModuleList(from_torch_encoder_layer(layer) for layer in ref_layers)
    if ref_norm is not None:
        stack.norm_f.load_state_dict(ref_norm.state_dict())
        ref_norm.to(device)
    stack.to(device)
    for layer in ref_layers:
        layer.to(device)

    g = torch.Generator().manual_seed(1)
    x = torch.randn(2, 5, D, generator=g).to(device)
    target = torch.randn(2, 5, D, generator=g).to(device)
    readout = torch.randn(D, D, generator=g).to(device) / 4
    probe = w2_grad_norms(stack, x, {"mse": mse_loss(readout, target)})

    h = x
    for layer in ref_layers:
        h = layer(h)
    out = ref_norm(h) if ref_norm is not None else h
    F.mse_loss(out @ readout, target).backward()
    expected = [layer.linear2.weight.grad.norm().item() for layer in ref_layers]
    assert probe.w2["mse"] == pytest.approx(expected, rel=1e-4)
    assert probe.top_rms == pytest.approx(h.pow(2).mean().sqrt().item(), rel=1e-5)


def test_w2_grad_norms_computes_every_loss_from_one_forward_pass(device):
    torch.manual_seed(0)
    stack = xavier_init_(Stack(2, D, H, FF, norm_position="pre"), qkv=QKV).to(device)
    x = torch.randn(3, 4, D, device=device)
    y = torch.randn(3, 4, D, device=device)
    probe = w2_grad_norms(
        stack, x, {"linear": linear_loss(y), "mse": mse_loss(torch.eye(D, device=device), y)}
    )
    assert all(p.grad is None for p in stack.parameters())  # the probe leaves .grad alone
    for name, loss_fn in (
        ("linear", linear_loss(y)),
        ("mse", mse_loss(torch.eye(D, device=device), y)),
    ):
        stack.zero_grad()
        loss_fn(stack(x)).backward()
        expected = [handbook_w2(layer).grad.norm().item() for layer in stack.layers]
        assert probe.w2[name] == pytest.approx(expected, rel=1e-5)


def test_linear_loss_sends_the_targets_back_whatever_the_output():
    y = torch.randn(2, 3, 4)
    for scale in (0.1, 10.0):
        out = (scale * torch.randn(2, 3, 4)).requires_grad_()
        linear_loss(y)(out).backward()
        torch.testing.assert_close(out.grad, y / 6)  # mean over 2 x 3 tokens


class OneIdentityLayer(nn.Module):
    """A stack whose only layer passes x through: the probe then sees x as x_L."""

    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Identity()])
        self.norm_f = None


@pytest.mark.parametrize(("tokens_alike", "expected"), [(True, 1.0), (False, 0.0)])
def test_top_cos_measures_how_alike_the_tokens_are(tokens_alike, expected):
    torch.manual_seed(0)
    w = torch.eye(256, requires_grad=True)  # stands in for W^2 so that the loss depends on it
    base = torch.randn(2, 1 if tokens_alike else 64, 256).expand(2, 64, 256)
    x = base @ w  # (2, 64, 256)
    loss = {"linear": linear_loss(torch.randn(2, 64, 256))}
    probe = w2_grad_norms(OneIdentityLayer(), x, loss, w2=lambda _: w)
    assert probe.top_cos == pytest.approx(expected, abs=0.02)
    assert probe.top_rms == pytest.approx(x.pow(2).mean().sqrt().item())


def test_final_norm_is_found_in_both_layouts():
    stack = Stack(1, D, H, FF, norm_position="pre")
    assert final_norm_of(stack) is stack.norm_f
    assert final_norm_of(Stack(1, D, H, FF, norm_position="post")) is None
    encoder = nn.TransformerEncoder(
        torch_layers(1, True)[0], 2, norm=nn.LayerNorm(D), enable_nested_tensor=False
    )
    assert final_norm_of(encoder) is encoder.norm


# --- the sweep -------------------------------------------------------------------------


def make_pre(n_layers):
    return xavier_init_(Stack(n_layers, D, H, FF, norm_position="pre", activation="relu"), qkv=QKV)


def test_sweep_shapes_and_determinism():
    a = grad_norm_sweep(make_pre, [1, 3], seeds=[0, 1], batch_size=2, seq_len=4)
    b = grad_norm_sweep(make_pre, [1, 3], seeds=[0, 1], batch_size=2, seq_len=4)
    assert a[3]["linear"].shape == (2, 3) and a[3]["mse"].shape == (2, 3)
    assert a[1]["top_rms"].shape == (2,) and a[1]["top_cos"].shape == (2,)
    for n in (1, 3):
        for key in a[n]:
            assert torch.equal(a[n][key], b[n][key]), (n, key)
    assert not torch.equal(a[3]["linear"][0], a[3]["linear"][1])  # seeds differ


def test_pre_ln_last_layer_gradient_shrinks_with_depth_as_the_stream_grows():
    """Theorem 1's direction and Lemma 3's mechanism, at a small size (CPU, fixed seeds)."""
    sweep = grad_norm_sweep(make_pre, [2, 16], seeds=range(4), batch_size=4, seq_len=8)
    shallow, deep = (sweep[n]["linear"][:, -1].mean() for n in (2, 16))
    rms_shallow, rms_deep = (sweep[n]["top_rms"].mean() for n in (2, 16))
    assert deep < 0.75 * shallow
    assert rms_deep > 1.5 * rms_shallow


def test_post_ln_last_layer_output_has_unit_rms():
    make_post = lambda n: xavier_init_(Stack(n, D, H, FF, norm_position="post"), qkv=QKV)  # noqa: E731
    sweep = grad_norm_sweep(make_post, [3], seeds=[0], batch_size=2, seq_len=4)
    assert sweep[3]["top_rms"].item() == pytest.approx(1.0, abs=1e-3)


def test_sweep_runs_on_the_device(device):
    sweep = grad_norm_sweep(make_pre, [2], seeds=[0], batch_size=2, seq_len=4, device=device)
    assert torch.isfinite(sweep[2]["linear"]).all()


# --- the power-law fit -------------------------------------------------------------------


def test_power_law_fit_recovers_the_exponent():
    depths = [6, 12, 18, 24]
    values = torch.tensor([[3.0 * n**-0.5 for n in depths]] * 5, dtype=torch.float64)
    slope, lo, hi = power_law_fit(depths, values)
    assert slope == pytest.approx(-0.5, abs=1e-9)
    assert lo == pytest.approx(-0.5, abs=1e-9) and hi == pytest.approx(-0.5, abs=1e-9)


def test_power_law_fit_interval_contains_the_slope_for_noisy_data():
    g = torch.Generator().manual_seed(0)
    depths = [6, 12, 18, 24]
    values = torch.tensor([float(n) ** 0.25 for n in depths]) * torch.exp(
        0.1 * torch.randn(10, 4, generator=g)
    )
    slope, lo, hi = power_law_fit(depths, values)
    assert lo < slope < hi
    assert lo < 0.25 < hi


@pytest.mark.parametrize(
    ("values", "match"),
    [
        (torch.ones(3), r"shape \(n_seeds, 2\) for 2 depths \(>= 2\), got \(3,\)"),
        (torch.ones(3, 3), r"shape \(n_seeds, 2\) for 2 depths \(>= 2\), got \(3, 3\)"),
        (torch.zeros(3, 2), "values must be positive"),
    ],
)
def test_power_law_fit_errors(values, match):
    with pytest.raises(ValueError, match=match):
        power_law_fit([4, 8], values)


# --- bad input ---------------------------------------------------------------------------


def test_probe_names_what_it_expected():
    stack = Stack(1, D, H, FF)
    loss = {"linear": linear_loss(torch.zeros(2, 3, D))}
    with pytest.raises(ValueError, match=r"shape \(batch, seq_len, d_model\), got \(3, 16\)"):
        w2_grad_norms(stack, torch.randn(3, D), loss)
    with pytest.raises(TypeError, match=r"floating-point tensor, got torch\.int64"):
        w2_grad_norms(stack, torch.ones(2, 3, D, dtype=torch.long), loss)
    with pytest.raises(TypeError, match=r"a \.layers list .* got Linear"):
        w2_grad_norms(nn.Linear(D, D), torch.randn(2, 3, D), loss)
    with pytest.raises(ValueError, match="at least one loss"):
        w2_grad_norms(stack, torch.randn(2, 3, D), {})
    with pytest.raises(ValueError, match="at least one depth and one seed"):
        grad_norm_sweep(make_pre, [], seeds=[0])
