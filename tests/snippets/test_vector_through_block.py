"""snippets/vector_through_block.py: each stage, and the last stage against Residual."""

from __future__ import annotations

import json

import matplotlib

matplotlib.use("Agg")

import pytest
import torch
from torch import nn

from snippets.resnorm import FeedForward, Residual
from snippets.vector_through_block import (
    PLACEMENTS,
    WIDGET_PLACEMENTS,
    connection_stages,
    mean_std,
    plot_stages,
    stages,
    stream_stds,
    table,
    widget_weights,
)

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


# --- The interactive page's reference: widget_weights, connection_stages, stream_stds ------

WIDGET_DIMS = (2, 3, 8, 16)
TIGHT = {"rtol": 1e-12, "atol": 1e-12}  # float64 against float64: only the order of sums differs


@pytest.fixture(scope="module")
def exported():
    return widget_weights()


def x64(d, seed=0):
    torch.manual_seed(seed)
    return (2.0 + 3.0 * torch.randn(d, dtype=torch.float64)).round(decimals=1)


def feedforward64(d):
    """The handbook's FeedForward(d, 4d) after torch.manual_seed(1), widened to float64."""
    torch.manual_seed(1)
    return FeedForward(d, 4 * d).double()


def test_widget_weights_are_the_handbooks_feedforward_under_seed_1(exported):
    assert exported["seed"] == 1 and exported["activation"] == "gelu"
    assert sorted(int(d) for d in exported["ffn"]) == list(range(2, 17))
    for d in range(2, 17):
        torch.manual_seed(1)
        ffn = FeedForward(d, 4 * d)
        entry = exported["ffn"][str(d)]
        assert (entry["d_model"], entry["d_ff"]) == (d, 4 * d)
        for name, param in ffn.named_parameters():
            values = torch.tensor(entry[name], dtype=torch.float32).view(param.shape)
            assert torch.equal(values, param.detach()), f"d={d} {name}"


def test_widget_weights_are_short_and_exact_in_json(exported):
    """Each value is written with the fewest digits that name its float32: none shorter would."""
    assert json.loads(json.dumps(exported)) == exported
    values = [
        v for entry in exported["ffn"].values() for k, vs in entry.items() if "." in k for v in vs
    ]
    assert len(values) == sum(8 * d * d + 5 * d for d in range(2, 17))
    for v in values[::7]:
        f32 = torch.tensor(v, dtype=torch.float32).item()
        digits = next(n for n in range(1, 18) if float(f"{v:.{n}g}") == v)
        assert digits <= 9, v
        if digits > 6:  # one digit fewer names another float32
            shorter = float(f"{f32:.{digits - 1}g}")
            assert torch.tensor(shorter, dtype=torch.float32).item() != f32, v


def test_widget_weights_keep_the_callers_random_state():
    torch.manual_seed(5)
    expected = torch.rand(3)
    torch.manual_seed(5)
    widget_weights([2, 3])
    assert torch.equal(torch.rand(3), expected)


@pytest.mark.parametrize("norm", ["layernorm", "rmsnorm"])
@pytest.mark.parametrize("placement", ["post", "pre", "sandwich", "output"])
def test_connection_output_is_what_residual_computes(exported, placement, norm):
    for d in WIDGET_DIMS:
        x, f = x64(d, seed=d), feedforward64(d)
        for eps in (1e-5, 0.3):
            out = connection_stages(x, exported, placement, norm, eps)
            r = Residual(f, d, norm_position=placement, norm=norm, eps=eps).double()
            with torch.no_grad():
                expected = r(x.view(1, 1, d)).view(d)
            torch.testing.assert_close(list(out.values())[-1], expected, **TIGHT)


def test_no_norm_is_rezero_with_alpha_s(exported):
    d, s = 8, -1.7
    x, f = x64(d), feedforward64(d)
    r = Residual(f, d, norm_position="rezero").double()
    with torch.no_grad():
        r.alpha.fill_(s)  # x + alpha * F(x)
        expected = r(x.view(1, 1, d)).view(d)
    out = connection_stages(x, exported, "none", scale=s)
    assert list(out) == ["x", "F(x)", "s·F(x)", "x + s·F(x)"]
    torch.testing.assert_close(out["x + s·F(x)"], expected, **TIGHT)


@pytest.mark.parametrize("placement", ["post", "pre", "sandwich"])
def test_with_s_1_the_stages_are_those_of_stages(exported, placement):
    """The notebook's `stages` (LayerNorm, eps 1e-5) shows the same vectors, less s·F."""
    d = 8
    x, f = x64(d), feedforward64(d)
    ours = connection_stages(x, exported, placement)
    ours = {k.replace("s·", ""): v for k, v in ours.items() if not k.startswith("s·")}
    theirs = stages(x, f, placement)
    assert list(ours) == list(theirs)
    for label in theirs:
        torch.testing.assert_close(ours[label], theirs[label], **TIGHT)


@pytest.mark.parametrize("norm", ["layernorm", "rmsnorm"])
def test_every_stage_follows_its_formula_with_a_scale(exported, norm):
    d, s, eps = 5, 2.5, 1e-3
    x, f = x64(d), feedforward64(d)
    make = {"layernorm": nn.LayerNorm, "rmsnorm": nn.RMSNorm}[norm]
    n = make(d, eps=eps, dtype=torch.float64)
    name = {"layernorm": "LN", "rmsnorm": "RMSNorm"}[norm]
    with torch.no_grad():
        expected = {
            "post": {
                "x": x,
                "F(x)": f(x),
                "s·F(x)": s * f(x),
                "x + s·F(x)": x + s * f(x),
                f"{name}(x + s·F(x))": n(x + s * f(x)),
            },
            "pre": {
                "x": x,
                f"{name}(x)": n(x),
                f"F({name}(x))": f(n(x)),
                f"s·F({name}(x))": s * f(n(x)),
                f"x + s·F({name}(x))": x + s * f(n(x)),
            },
            "sandwich": {
                "x": x,
                f"{name}1(x)": n(x),
                f"F({name}1(x))": f(n(x)),
                f"s·F({name}1(x))": s * f(n(x)),
                f"{name}2(s·F({name}1(x)))": n(s * f(n(x))),
                f"x + {name}2(s·F({name}1(x)))": x + n(s * f(n(x))),
            },
            "output": {
                "x": x,
                "F(x)": f(x),
                "s·F(x)": s * f(x),
                f"{name}(s·F(x))": n(s * f(x)),
                f"x + {name}(s·F(x))": x + n(s * f(x)),
            },
        }
    for placement, vectors in expected.items():
        out = connection_stages(x, exported, placement, norm, eps, s)
        assert list(out) == list(vectors), placement
        for label, v in vectors.items():
            assert out[label].dtype == torch.float64
            torch.testing.assert_close(out[label], v, **TIGHT)


def test_gelu_is_exact_erf_gelu(exported):
    d = 4
    x = torch.linspace(-6, 6, d, dtype=torch.float64)
    w1, b1, w2, b2 = (
        torch.tensor(exported["ffn"]["4"][k])
        for k in ("fc.weight", "fc.bias", "proj.weight", "proj.bias")
    )
    out = connection_stages(x, exported, "none")["F(x)"]
    h = nn.GELU()(w1.view(16, 4).float().double() @ x + b1.float().double())
    torch.testing.assert_close(
        out, w2.float().double().view(4, 16) @ h + b2.float().double(), **TIGHT
    )


@pytest.mark.parametrize("placement", WIDGET_PLACEMENTS)
def test_stream_stds_follow_a_stack_of_identical_connections(exported, placement):
    d, depth, s = 6, 9, 0.8
    x = x64(d)
    stds = stream_stds(x, exported, placement, "rmsnorm", 1e-4, s, depth)
    assert len(stds) == depth + 1 and all(isinstance(t, float) for t in stds)
    v = x
    for layer in range(depth + 1):
        assert stds[layer] == pytest.approx(v.var(unbiased=False).sqrt().item(), rel=1e-12)
        v = list(connection_stages(v, exported, placement, "rmsnorm", 1e-4, s).values())[-1]
    if placement == "post":
        # every layer ends in RMSNorm: mean² + std² = ms / (ms + eps) < 1, whatever x was
        assert stds[0] > 2 and all(0 < t < 1 for t in stds[1:])


def test_pre_ln_stream_of_the_stack_is_residual_applied_again_and_again(exported):
    d, depth = 8, 5
    x, f = x64(d), feedforward64(d)
    r = Residual(f, d, norm_position="pre").double()
    v, expected = x.view(1, 1, d), [x.var(unbiased=False).sqrt().item()]
    with torch.no_grad():
        for _ in range(depth):
            v = r(v)
            expected.append(v.var(unbiased=False).sqrt().item())
    assert stream_stds(x, exported, "pre", depth=depth) == pytest.approx(expected, rel=1e-12)


def test_reference_runs_in_float64_on_the_cpu_from_any_device(exported, device):
    x = x64(8)
    expected = connection_stages(x, exported, "sandwich", "layernorm", 1e-5, 0.5)
    moved = x.to(device) if device.type != "mps" else x.float().to(device)  # MPS: no float64
    out = connection_stages(moved, exported, "sandwich", "layernorm", 1e-5, 0.5)
    for label, v in expected.items():
        assert out[label].device.type == "cpu" and out[label].dtype == torch.float64
        tol = TIGHT if device.type != "mps" else {"rtol": 1e-6, "atol": 1e-6}
        torch.testing.assert_close(out[label], v, **tol)


def test_widget_bad_input_is_refused_by_name(exported):
    x = x64(8)
    with pytest.raises(
        ValueError, match=r"placement must be one of \('post', .*'none'\), got 'middle'"
    ):
        connection_stages(x, exported, "middle")
    with pytest.raises(
        ValueError, match=r"norm must be one of \('layernorm', 'rmsnorm'\), got 'dyt'"
    ):
        connection_stages(x, exported, norm="dyt")
    for eps in (0.0, -1e-5):
        with pytest.raises(ValueError, match=f"eps must be > 0 .*, got {eps}"):
            connection_stages(x, exported, eps=eps)
    with pytest.raises(ValueError, match="eps must be finite, got nan"):
        connection_stages(x, exported, eps=float("nan"))
    with pytest.raises(TypeError, match="eps must be a float, got str"):
        connection_stages(x, exported, eps="1e-5")
    with pytest.raises(TypeError, match="eps must be a float, got bool"):
        connection_stages(x, exported, eps=True)
    with pytest.raises(ValueError, match="scale must be finite, got inf"):
        connection_stages(x, exported, scale=float("inf"))
    with pytest.raises(TypeError, match="scale must be a float, got NoneType"):
        connection_stages(x, exported, scale=None)
    with pytest.raises(TypeError, match=r"floating-point tensor, got torch\.int64"):
        connection_stages(torch.ones(8, dtype=torch.long), exported)
    with pytest.raises(TypeError, match="floating-point tensor, got list"):
        connection_stages([1.0] * 8, exported)
    with pytest.raises(ValueError, match=r"one vector of shape \(d,\), d >= 1, got shape \(2, 4\)"):
        connection_stages(torch.randn(2, 4), exported)
    with pytest.raises(ValueError, match=r"got shape \(0,\)"):
        connection_stages(torch.randn(0), exported)
    with pytest.raises(ValueError, match=r"no sublayer for d = 20; they have d in \[2, 3, .*16\]"):
        connection_stages(torch.randn(20), exported)
    with pytest.raises(
        TypeError, match=r"weights must be the dict widget_weights returns .*got list"
    ):
        connection_stages(x, [exported])
    broken = {"ffn": {"8": {**exported["ffn"]["8"], "fc.bias": [0.0] * 31}}}
    with pytest.raises(ValueError, match=r"fc\.bias for d = 8 must be 32 numbers, got 31"):
        connection_stages(x, broken)
    for depth in (0, 1.5, True, "3"):
        with pytest.raises(ValueError, match=f"depth must be an int >= 1, got {depth!r}"):
            stream_stds(x, exported, depth=depth)
    with pytest.raises(ValueError, match="placement must be one of"):
        stream_stds(x, exported, "middle")


def test_widget_weights_refuse_bad_dims_and_seeds():
    for dims in ([], [0], [2, 2], [2.0], [True], "8"):
        with pytest.raises(ValueError, match="dims must"):
            widget_weights(dims)
    for seed in (-1, 1.5, True):
        with pytest.raises(ValueError, match=f"seed must be an int >= 0, got {seed!r}"):
            widget_weights([2], seed=seed)
