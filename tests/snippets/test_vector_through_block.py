"""snippets/vector_through_block.py: each stage, and the last stage against Residual."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import pytest
import torch
from torch import nn

from snippets.transformer import FeedForward, Residual
from snippets.vector_through_block import PLACEMENTS, mean_std, plot_stages, stages, table

D = 8


def vector(device, seed=0):
    torch.manual_seed(seed)
    return (2.0 + 3.0 * torch.randn(D)).to(device)  # (d,), off-centre and wide


def sublayer(device):
    torch.manual_seed(1)
    return FeedForward(D, 4 * D).to(device)


def randomize(*modules):
    """Non-trivial affine parameters, so a test cannot pass by weight = 1, bias = 0 alone."""
    torch.manual_seed(2)
    with torch.no_grad():
        for m in modules:
            for p in m.parameters():
                p.uniform_(0.5, 1.5)


@pytest.mark.parametrize("norm", ["layernorm", "rmsnorm"])
@pytest.mark.parametrize("placement", PLACEMENTS)
def test_last_stage_is_what_residual_computes(placement, norm, device):
    x, f = vector(device), sublayer(device)
    r = Residual(f, D, norm_position=placement, norm=norm).to(device)
    randomize(*(m for m in (r.norm_in, r.norm_branch, r.norm_out) if m is not None))
    n = r.norm_out if placement == "post" else r.norm_in
    out = stages(x, f, placement, norm=n, norm_branch=r.norm_branch)
    expected = r(x.view(1, 1, D)).view(D)  # Residual wants (batch, seq_len, d_model)
    torch.testing.assert_close(list(out.values())[-1], expected)


def test_every_stage_follows_its_formula(device):
    x, f = vector(device), sublayer(device)
    ln = nn.LayerNorm(D).to(device)
    with torch.no_grad():
        post = stages(x, f, "post")
        assert list(post) == ["x", "F(x)", "x + F(x)", "LN(x + F(x))"]
        torch.testing.assert_close(post["F(x)"], f(x))
        torch.testing.assert_close(post["x + F(x)"], x + f(x))
        torch.testing.assert_close(post["LN(x + F(x))"], ln(x + f(x)))

        pre = stages(x, f, "pre")
        assert list(pre) == ["x", "LN(x)", "F(LN(x))", "x + F(LN(x))"]
        torch.testing.assert_close(pre["LN(x)"], ln(x))
        torch.testing.assert_close(pre["F(LN(x))"], f(ln(x)))
        torch.testing.assert_close(pre["x + F(LN(x))"], x + f(ln(x)))

        sandwich = stages(x, f, "sandwich")
        assert list(sandwich)[-1] == "x + LN2(F(LN1(x)))"
        torch.testing.assert_close(sandwich["LN2(F(LN1(x)))"], ln(f(ln(x))))
    torch.testing.assert_close(pre["x"], x)


def test_norm_stages_have_mean_0_and_std_1_and_pre_ln_keeps_the_scale_of_x(device):
    x, f = vector(device), sublayer(device)
    pre, post = stages(x, f, "pre"), stages(x, f, "post")
    for v in (pre["LN(x)"], post["LN(x + F(x))"]):
        mean, std = mean_std(v)
        assert abs(mean) < 1e-5 and abs(std - 1) < 1e-3
    x_std = mean_std(x)[1]
    assert x_std > 3  # the input is wide ...
    assert abs(mean_std(pre["x + F(LN(x))"])[1] / x_std - 1) < 0.2  # ... and Pre-LN keeps it


def test_mean_std_is_biased_like_layer_norm():
    v = torch.tensor([1.0, 2.0, 3.0, 4.0])
    mean, std = mean_std(v)
    assert mean == pytest.approx(2.5)
    assert std == pytest.approx(torch.var(v, unbiased=False).sqrt().item())
    assert std == pytest.approx(1.118034, abs=1e-6)  # sqrt(1.25), not sqrt(5/3)


def test_gradients_are_not_tracked():
    x = vector("cpu").requires_grad_()
    out = stages(x, sublayer("cpu"), "pre")
    assert not any(v.requires_grad for label, v in out.items() if label != "x")


def test_table_prints_rounded_values_and_no_negative_zero():
    text = table({"x": torch.tensor([1.234, -0.0001, 2.0])})
    assert text == "x: [  1.23   0.00   2.00]  mean   1.08  std  0.82"


def test_plot_has_one_panel_per_placement_and_one_bar_per_feature_and_stage():
    x, f = vector("cpu"), sublayer("cpu")
    results = {p: stages(x, f, p) for p in PLACEMENTS}
    fig = plot_stages(results)
    assert [ax.get_title() for ax in fig.axes] == ["Post-LN", "Pre-LN", "Sandwich / Peri-LN"]
    for ax, vectors in zip(fig.axes, results.values(), strict=True):
        assert len(ax.patches) == D * len(vectors)
        assert [t.get_text() for t in ax.get_legend().get_texts()] == list(vectors)
        assert ax.get_xlabel() == "feature"
    assert fig.axes[0].get_ylabel() == "value"


def test_bad_input_is_refused_with_what_was_expected():
    f = sublayer("cpu")
    with pytest.raises(ValueError, match=r"one vector of shape \(d,\), d >= 1, got shape \(1, 8\)"):
        stages(torch.randn(1, D), f)
    with pytest.raises(TypeError, match=r"floating-point tensor, got torch\.int64"):
        stages(torch.ones(D, dtype=torch.long), f)
    with pytest.raises(TypeError, match="floating-point tensor, got list"):
        stages([1.0] * D, f)
    with pytest.raises(ValueError, match=r"norm_position must be one of .*, got 'middle'"):
        stages(torch.randn(D), f, "middle")
    with pytest.raises(ValueError, match=r"map shape \(8,\) to itself, got \(4,\)"):
        stages(torch.randn(D), nn.Linear(D, 4))


def test_empty_and_malformed_input_is_refused_by_name():
    f = sublayer("cpu")
    with pytest.raises(ValueError, match=r"one vector of shape \(d,\), d >= 1, got shape \(0,\)"):
        stages(torch.randn(0), f)  # used to return four empty "stages"
    with pytest.raises(ValueError, match="table expects one or more vectors, got an empty dict"):
        table({})  # used to fail in max() of nothing
    with pytest.raises(ValueError, match=r"table expects vectors \(d,\), d >= 1; 'x' is \(2, 3\)"):
        table({"x": torch.randn(2, 3)})
    with pytest.raises(ValueError, match=r"'x' is \(0,\)"):
        table({"x": torch.randn(0)})
    for decimals in (-1, 2.5, True):
        with pytest.raises(ValueError, match=f"decimals must be an int >= 0, got {decimals}"):
            table({"x": torch.randn(3)}, decimals=decimals)
    with pytest.raises(
        ValueError, match=r"one or more placements with stages, got stage counts \{\}"
    ):
        plot_stages({})
    with pytest.raises(ValueError, match=r"got stage counts \{'pre': 0\}"):
        plot_stages({"pre": {}})  # used to raise a bare StopIteration


def test_table_with_zero_decimals_and_non_finite_values():
    assert (
        table({"x": torch.tensor([1.6, -0.4])}, decimals=0)
        == "x: [   2    0]  mean   0.60  std  1.00"  # -0.4 rounds to 0, not -0
    )
    assert (
        table({"x": torch.tensor([float("nan"), 1.0])})
        == "x: [   nan   1.00]  mean    nan  std   nan"
    )
