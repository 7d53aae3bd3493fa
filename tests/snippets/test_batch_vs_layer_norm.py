"""snippets/batch_vs_layer_norm.py against torch.nn.BatchNorm1d and torch.nn.LayerNorm."""

from __future__ import annotations

import inspect
import itertools

import numpy as np
import pytest
import torch
from torch import nn

from snippets.batch_vs_layer_norm import (
    BatchNorm1d,
    normalize_tokens,
    output_in_batch,
    pad,
    sees_the_future,
    train_eval_gap,
)
from tests.checks import (
    assert_matches_module_db,
    assert_matches_op_samples,
    assert_same_forward_backward,
    copy_random_params,
    module_info,
)

SETTINGS = list(itertools.product([0.1, 0.5, None], [True, False], [True, False]))
HAS_BIAS_ARG = "bias" in inspect.signature(nn.BatchNorm1d.__init__).parameters


def pair(c, momentum, affine, track_running_stats, device, dtype=torch.float32, bias=True):
    kwargs = dict(
        momentum=momentum,
        affine=affine,
        track_running_stats=track_running_stats,
        device=device,
        dtype=dtype,
    )
    if not bias:
        kwargs["bias"] = False
    ours, ref = BatchNorm1d(c, **kwargs), nn.BatchNorm1d(c, **kwargs)
    copy_random_params(ours, ref)
    return ours, ref


@pytest.mark.parametrize(("momentum", "affine", "track_running_stats"), SETTINGS)
@pytest.mark.parametrize("shape", [(6, 5), (3, 5, 4)])
def test_matches_nn_batchnorm1d_train_then_eval(
    momentum, affine, track_running_stats, shape, device
):
    ours, ref = pair(5, momentum, affine, track_running_stats, device)
    torch.manual_seed(0)
    for step in range(3):  # several batches: the running statistics accumulate
        x = 3 * torch.randn(*shape, device=device) + step
        assert_same_forward_backward(ours, ref, x, atol=1e-5)
    for (name, b), b_ref in zip(ours.named_buffers(), ref.buffers(), strict=True):
        torch.testing.assert_close(b, b_ref, atol=1e-6, rtol=1e-5, msg=name)
    ours.eval(), ref.eval()
    x = torch.randn(*shape, device=device)
    torch.testing.assert_close(ours(x), ref(x), atol=1e-5, rtol=1e-5)


def test_defaults_and_state_dict_match_pytorch():
    ours, ref = BatchNorm1d(7), nn.BatchNorm1d(7)
    assert (ours.eps, ours.momentum) == (ref.eps, ref.momentum) == (1e-5, 0.1)
    assert ours.state_dict().keys() == ref.state_dict().keys()
    for key, value in ref.state_dict().items():
        torch.testing.assert_close(ours.state_dict()[key], value, msg=key)
    assert BatchNorm1d(7, affine=False).weight is None
    assert BatchNorm1d(7, track_running_stats=False).running_mean is None
    assert BatchNorm1d(7, bias=False).bias is None
    assert repr(BatchNorm1d(3, bias=False)) == (
        "BatchNorm1d(3, eps=1e-05, momentum=0.1, affine=True, bias=False, track_running_stats=True)"
    )
    if HAS_BIAS_ARG:  # recent PyTorch: the same repr and a keyword-only bias
        for kwargs in (dict(), dict(affine=False), dict(bias=False)):
            assert repr(BatchNorm1d(3, **kwargs)) == repr(nn.BatchNorm1d(3, **kwargs))


@pytest.mark.skipif(not HAS_BIAS_ARG, reason="this PyTorch has no BatchNorm1d(bias=...)")
def test_bias_false_matches_pytorch(device):
    ours, ref = pair(4, 0.1, True, True, device, bias=False)
    x = torch.randn(5, 4, 3, device=device)
    torch.testing.assert_close(ours(x), ref(x), atol=1e-5, rtol=1e-5)
    assert ours.state_dict().keys() == ref.state_dict().keys()


def test_gradcheck_fp64(device):
    if device.type == "mps":
        pytest.skip("MPS has no float64")
    ours, _ = pair(3, 0.1, True, True, device, dtype=torch.float64)
    x = torch.randn(4, 3, 2, dtype=torch.float64, device=device, requires_grad=True)
    assert torch.autograd.gradcheck(lambda x: ours(x), (x,))


# --- (a) a sample's output and the rest of the batch ---------------------------------------


def test_layer_norm_output_ignores_the_rest_of_the_batch(device):
    torch.manual_seed(0)
    sample = torch.randn(6, 8, device=device)
    rest_a, rest_b = torch.randn(3, 6, 8, device=device), 5 + torch.randn(7, 6, 8, device=device)
    ln = nn.LayerNorm(8, device=device)
    torch.testing.assert_close(output_in_batch(ln, sample, rest_a), ln(sample))
    torch.testing.assert_close(output_in_batch(ln, sample, rest_b), ln(sample))


@pytest.mark.parametrize("cls", [nn.BatchNorm1d, BatchNorm1d])
def test_batch_norm_output_depends_on_the_rest_in_training_only(cls, device):
    torch.manual_seed(0)
    sample = torch.randn(6, 8, device=device)
    rest_a, rest_b = torch.randn(3, 6, 8, device=device), 5 + torch.randn(7, 6, 8, device=device)
    bn = cls(8, device=device)
    diff = output_in_batch(bn, sample, rest_a) - output_in_batch(bn, sample, rest_b)
    assert diff.abs().mean() > 0.5
    bn.eval()  # running statistics: a fixed per-channel affine map, batch-independent
    torch.testing.assert_close(
        output_in_batch(bn, sample, rest_a), output_in_batch(bn, sample, rest_b)
    )


# --- (b) train vs eval ------------------------------------------------------------------------


def test_train_eval_gap(device):
    torch.manual_seed(0)
    batches = [3 + 2 * torch.randn(16, 10, 8, device=device) for _ in range(100)]
    bn, ln = nn.BatchNorm1d(8, device=device), nn.LayerNorm(8, device=device)
    assert train_eval_gap(ln, batches[:1]) == 0.0
    one, many = train_eval_gap(bn, batches[:1]), train_eval_gap(bn, batches)
    assert one > 1.0  # running stats after one step: 0.9 * (0, 1) + 0.1 * batch statistics
    # momentum 0.1: the estimates converge to the data's statistics, but a batch's own
    # statistics still differ from them by sampling noise, so the gap never reaches 0
    assert 0.0 < many < 0.2
    assert bn.num_batches_tracked.item() == 0  # the function leaves its argument alone
    assert train_eval_gap(BatchNorm1d(8, device=device), batches[:1]) == pytest.approx(one)


# --- (c) batch size 1 ------------------------------------------------------------------------


@pytest.mark.parametrize("cls", [nn.BatchNorm1d, BatchNorm1d])
def test_one_value_per_channel_is_refused_in_training(cls, device):
    bn = cls(8, device=device)
    message = r"Expected more than 1 value per channel when training, got input size"
    with pytest.raises(ValueError, match=message + r" torch\.Size\(\[1, 8\]\)"):
        bn(torch.randn(1, 8, device=device))
    with pytest.raises(ValueError, match=message + r" torch\.Size\(\[1, 8, 1\]\)"):
        bn(torch.randn(1, 8, 1, device=device))
    assert bn(torch.randn(1, 8, 3, device=device)).shape == (1, 8, 3)  # 3 values per channel
    assert bn.eval()(torch.randn(1, 8, device=device)).shape == (1, 8)  # eval: running stats
    assert nn.LayerNorm(8, device=device)(torch.randn(1, 8, device=device)).shape == (1, 8)


# --- (d) padding -----------------------------------------------------------------------------


def test_padding_moves_batch_norm_but_not_layer_norm(device):
    torch.manual_seed(0)
    seqs = [3 + torch.randn(n, 8, device=device) for n in (5, 3, 4)]
    short, mask_short = pad(seqs, 5)
    long, mask_long = pad(seqs, 20)
    assert mask_short.sum() == mask_long.sum() == 12
    ln = nn.LayerNorm(8, device=device)
    torch.testing.assert_close(ln(short)[mask_short], ln(long)[mask_long])
    for bn in (nn.BatchNorm1d(8, device=device), BatchNorm1d(8, device=device)):
        real_short = normalize_tokens(bn, short)[mask_short]
        real_long = normalize_tokens(bn, long)[mask_long]
        # more zeros in the batch: the channel means fall towards 0, so the real tokens
        # (mean 3) come out further above 0
        assert real_long.mean() > real_short.mean() + 0.5
        assert (real_long - real_short).abs().mean() > 0.5


def test_pad_too_short_is_refused():
    with pytest.raises(ValueError, match="pad length 2 is shorter than a sequence of 3"):
        pad([torch.zeros(3, 4)], 2)
    with pytest.raises(ValueError, match="pad length 2 is shorter than a sequence of 4"):
        pad([torch.zeros(1, 4), torch.zeros(4, 4)], 2)


@pytest.mark.parametrize(
    ("seqs", "length", "error", "match"),
    [
        ([], 5, ValueError, r"seqs to be one or more \(T_i, C\) tensors .*, got \[\]"),
        ([torch.zeros(3), torch.zeros(2)], 5, ValueError, r"got \[\(3,\), \(2,\)\]"),
        (
            [torch.zeros(3, 4), torch.zeros(2, 5)],
            5,
            ValueError,
            r"with the same C, got \[\(3, 4\), ",
        ),
        ([torch.zeros(2, 3, 4)], 5, ValueError, r"got \[\(2, 3, 4\)\]"),
        ([torch.zeros(2, 4)], 0, ValueError, "pad length must be a positive int, got 0"),
        ([torch.zeros(0, 4)], -1, ValueError, "pad length must be a positive int, got -1"),
        ([torch.zeros(2, 4)], 2.5, ValueError, "pad length must be a positive int, got 2.5"),
        ([torch.zeros(2, 4)], True, ValueError, "pad length must be a positive int, got True"),
        ([[1.0, 2.0]], 5, TypeError, r"a list of \(T_i, C\) tensors, got \['list'\]"),
        (torch.zeros(2, 3, 4), 5, TypeError, "a list of .* tensors, got Tensor"),
    ],
)
def test_pad_refuses_bad_input_by_name(seqs, length, error, match):
    with pytest.raises(error, match=match):
        pad(seqs, length)


def test_pad_takes_empty_sequences_and_a_tuple():
    batch, mask = pad((torch.ones(0, 3), torch.ones(2, 3)), 4)
    assert batch.shape == (2, 4, 3) and mask.tolist() == [[False] * 4, [True, True, False, False]]
    assert batch.sum() == 6


# --- causality ---------------------------------------------------------------------------------


def test_batch_norm_lets_a_token_see_the_future(device):
    torch.manual_seed(0)
    x = torch.randn(4, 10, 8, device=device)
    assert sees_the_future(nn.BatchNorm1d(8, device=device), x, t=4)
    assert sees_the_future(BatchNorm1d(8, device=device), x, t=4)
    assert not sees_the_future(nn.LayerNorm(8, device=device), x, t=4)
    assert not sees_the_future(nn.BatchNorm1d(8, device=device).eval(), x, t=4)


# --- the axes ----------------------------------------------------------------------------------


def test_axes_batch_norm_over_b_and_t_layer_norm_over_c(device):
    torch.manual_seed(0)
    x = 2 * torch.randn(4, 6, 8, device=device) + 1  # (B, T, C)
    by_hand_bn = (x - x.mean((0, 1))) / torch.sqrt(x.var((0, 1), unbiased=False) + 1e-5)
    mean, var = x.mean(-1, keepdim=True), x.var(-1, unbiased=False, keepdim=True)
    by_hand_ln = (x - mean) / torch.sqrt(var + 1e-5)
    bn, ln = nn.BatchNorm1d(8, device=device), nn.LayerNorm(8, device=device)
    torch.testing.assert_close(normalize_tokens(bn, x), by_hand_bn, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(normalize_tokens(ln, x), by_hand_ln, atol=1e-5, rtol=1e-5)


def test_untransposed_input_is_refused_or_silently_wrong(device):
    x = torch.randn(4, 6, 8, device=device)  # (B, T, C) handed over as it is
    with pytest.raises(ValueError, match=r"expects input \(N, 8\) or \(N, 8, L\), got \(4, 6, 8\)"):
        BatchNorm1d(8, device=device)(x)
    with pytest.raises(RuntimeError, match="running_mean should contain 6 elements not 8"):
        nn.BatchNorm1d(8, device=device)(x)
    square = torch.randn(4, 8, 8, device=device)  # T == C: PyTorch cannot tell, and normalizes T
    wrong = nn.BatchNorm1d(8, device=device)(square)
    right = normalize_tokens(nn.BatchNorm1d(8, device=device), square)
    assert not torch.allclose(wrong, right, atol=1e-3)


# --- errors ------------------------------------------------------------------------------------


def test_errors_name_expected_and_actual():
    with pytest.raises(ValueError, match=r"expects input \(N, 4\) or \(N, 4, L\), got \(2, 3\)"):
        BatchNorm1d(4)(torch.randn(2, 3))
    with pytest.raises(ValueError, match=r"got \(2, 4, 3, 3\)"):
        BatchNorm1d(4)(torch.randn(2, 4, 3, 3))
    with pytest.raises(TypeError, match=r"floating-point tensor, got torch\.int64"):
        BatchNorm1d(4)(torch.ones(2, 4, dtype=torch.long))
    with pytest.raises(ValueError, match="num_features must be a positive int, got 0"):
        BatchNorm1d(0)
    with pytest.raises(ValueError, match="eps must be a finite number > 0, got 0"):
        BatchNorm1d(4, eps=0)
    with pytest.raises(ValueError, match=r"expects a \(B, T, C\) tensor, got \(2, 3\)"):
        normalize_tokens(nn.LayerNorm(3), torch.randn(2, 3))
    with pytest.raises(ValueError, match=r"got \(6, 8\) and \(3, 6, 7\)"):
        output_in_batch(nn.LayerNorm(8), torch.randn(6, 8), torch.randn(3, 6, 7))
    with pytest.raises(ValueError, match="at least one batch, got an empty list"):
        train_eval_gap(nn.LayerNorm(8), [])
    with pytest.raises(ValueError, match=r"0 <= t < T - 1, got shape \(2, 5, 8\) and t=4"):
        sees_the_future(nn.LayerNorm(8), torch.randn(2, 5, 8), t=4)


# --- half precision ----------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize(("scale", "shift"), [(1.0, 0.0), (3.0, 40.0), (100.0, 0.0)])
def test_half_precision_is_as_accurate_as_pytorch(scale, shift, dtype, device):
    # the statistics are taken in fp32, as nn.BatchNorm1d does: against a float64
    # reference, ours errs no more than PyTorch's (10 % margin), output and running stats
    torch.manual_seed(0)
    x = (scale * torch.randn(16, 8, 64, device=device) + shift).to(dtype)
    exact = nn.BatchNorm1d(8, device=device, dtype=torch.float64)
    y_exact = exact(x.to(torch.float64))
    errors = {}
    for cls in (BatchNorm1d, nn.BatchNorm1d):
        bn = cls(8, device=device, dtype=dtype)
        y = bn(x)
        assert y.dtype == bn.running_mean.dtype == bn.running_var.dtype == dtype
        errors[cls] = [
            (a.to(torch.float64) - b).abs().max().item()
            for a, b in [
                (y, y_exact),
                (bn.running_mean, exact.running_mean),
                (bn.running_var, exact.running_var),
            ]
        ]
    for ours, theirs in zip(errors[BatchNorm1d], errors[nn.BatchNorm1d], strict=True):
        assert ours <= 1.1 * theirs + 1e-6, errors


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_fp32_module_on_half_input_keeps_fp32_buffers_as_pytorch_does(dtype, device):
    ours, ref = pair(4, 0.1, True, True, device)
    torch.manual_seed(0)
    x = (3 * torch.randn(8, 4, 5, device=device) + 1).to(dtype)
    y, y_ref = ours(x), ref(x)
    assert y.dtype == y_ref.dtype == dtype
    torch.testing.assert_close(y, y_ref, atol=2e-2, rtol=2e-2)
    for name in ("running_mean", "running_var"):
        b, b_ref = getattr(ours, name), getattr(ref, name)
        assert b.dtype == b_ref.dtype == torch.float32
        torch.testing.assert_close(b, b_ref, atol=1e-5, rtol=1e-5)


# --- empty batches -----------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(0, 4), (0, 4, 3), (2, 4, 0)])
@pytest.mark.parametrize(
    ("momentum", "track_running_stats"), [(0.1, True), (None, True), (0.1, False)]
)
def test_empty_batch_is_counted_but_changes_no_statistics_as_in_pytorch(
    shape, momentum, track_running_stats, device
):
    ours, ref = pair(4, momentum, True, track_running_stats, device)
    torch.manual_seed(0)
    first = 3 * torch.randn(5, 4, device=device) + 1
    assert_same_forward_backward(ours, ref, first, atol=1e-5)
    before = {name: b.clone() for name, b in ours.named_buffers()}
    y = assert_same_forward_backward(ours, ref, torch.randn(*shape, device=device))
    assert y.shape == shape
    for (name, b), b_ref in zip(ours.named_buffers(), ref.buffers(), strict=True):
        torch.testing.assert_close(b, b_ref, msg=name)
        if name == "num_batches_tracked":
            assert b.item() == 2  # the empty batch is counted (momentum=None divides by it) ...
        else:
            assert torch.equal(b, before[name])  # ... but its NaN statistics are not stored
    third = 3 * torch.randn(5, 4, device=device) - 1
    assert_same_forward_backward(ours, ref, third, atol=1e-5)
    for (name, b), b_ref in zip(ours.named_buffers(), ref.buffers(), strict=True):
        torch.testing.assert_close(b, b_ref, msg=name)
    ours.eval(), ref.eval()
    torch.testing.assert_close(
        ours(torch.randn(*shape, device=device)), torch.empty(shape, device=device)
    )


# --- extreme values ----------------------------------------------------------------------------


def test_a_variance_that_overflows_gives_nan_not_the_bias(device):
    # channel 0 holds values near 1e20: its squared deviations overflow fp32, and
    # nn.BatchNorm1d returns 0 (rsqrt(inf)) for it; ours returns NaN
    x = torch.tensor([[1e20, 1.0], [-1e20, 2.0], [3e20, 0.0]], device=device)
    ours, ref = pair(2, 0.1, False, True, device)
    y, y_ref = ours(x), ref(x)
    assert torch.isnan(y[:, 0]).all()
    if device.type == "cpu":  # PyTorch's CPU kernel (other backends may differ)
        assert torch.equal(y_ref[:, 0], torch.zeros(3))
    torch.testing.assert_close(y[:, 1], y_ref[:, 1])  # the other channel is untouched
    if device.type != "mps":  # in float64 the same values are ordinary: the right answer
        ours64, ref64 = pair(2, 0.1, False, True, device, dtype=torch.float64)
        y64 = ours64(x.to(torch.float64))
        torch.testing.assert_close(y64, ref64(x.to(torch.float64)))
        assert torch.isfinite(y64).all()


@pytest.mark.parametrize("bad", [float("inf"), float("nan")])
def test_inf_and_nan_give_a_nan_channel_as_pytorch_does(bad, device):
    x = torch.tensor([[bad, 1.0], [-1.0, 2.0], [3.0, 0.0]], device=device)
    ours, ref = pair(2, 0.1, True, True, device)
    y, y_ref = ours(x), ref(x)
    assert torch.isnan(y[:, 0]).all() and torch.isnan(y_ref[:, 0]).all()
    torch.testing.assert_close(y[:, 1], y_ref[:, 1])


# --- bad arguments -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        (dict(num_features=2.0), TypeError, "num_features must be an int, got float 2.0"),
        (dict(num_features="4"), TypeError, "num_features must be an int, got str '4'"),
        (dict(num_features=True), TypeError, "num_features must be an int, got bool True"),
        (dict(num_features=-1), ValueError, "num_features must be a positive int, got -1"),
        (dict(num_features=4, eps="1e-5"), TypeError, "eps must be a number, got str '1e-5'"),
        (dict(num_features=4, eps=-1.0), ValueError, r"eps must be a finite number > 0, got -1\.0"),
        (dict(num_features=4, eps=float("nan")), ValueError, "finite number > 0, got nan"),
        (dict(num_features=4, eps=float("inf")), ValueError, "finite number > 0, got inf"),
        (dict(num_features=4, momentum="0.1"), TypeError, "momentum must be a number, got str"),
    ],
)
def test_bad_constructor_arguments_are_named(kwargs, error, match):
    with pytest.raises(error, match=match):
        BatchNorm1d(**kwargs)


def test_numpy_ints_and_any_momentum_are_taken_as_pytorch_takes_them():
    assert BatchNorm1d(np.int64(3)).num_features == 3 == nn.BatchNorm1d(np.int64(3)).num_features
    assert type(BatchNorm1d(np.int64(3)).num_features) is int
    ours, ref = pair(3, -1.2, True, True, "cpu")  # PyTorch's own samples use such momenta
    assert_same_forward_backward(ours, ref, torch.randn(4, 3), atol=1e-5)
    torch.testing.assert_close(ours.running_var, ref.running_var)


def test_demo_functions_refuse_bad_input_by_name():
    ln, x = nn.LayerNorm(3), torch.randn(2, 5, 3)
    with pytest.raises(TypeError, match="x must be a floating-point tensor, got list"):
        normalize_tokens(ln, [[[1.0, 2.0, 3.0]]])
    with pytest.raises(TypeError, match="sample must be a floating-point tensor, got list"):
        output_in_batch(ln, [[1.0, 2.0, 3.0]], x)
    with pytest.raises(TypeError, match=r"rest must be a floating-point tensor, got torch\.int64"):
        output_in_batch(ln, x[0], torch.ones(2, 5, 3, dtype=torch.long))
    with pytest.raises(
        TypeError, match=r"an nn\.Module and a list of batches, got LayerNorm and Tensor"
    ):
        train_eval_gap(ln, x)  # a tensor is not a list of batches
    with pytest.raises(TypeError, match="got function and list"):
        train_eval_gap(lambda x: x, [x])
    for t in (2.5, True, -1):
        with pytest.raises(
            ValueError, match=rf"an int 0 <= t < T - 1, got shape \(2, 5, 3\) and t={t}"
        ):
            sees_the_future(ln, x, t)
    with pytest.raises(TypeError, match=r"x must be a floating-point tensor, got torch\.int64"):
        sees_the_future(ln, torch.ones(2, 5, 3, dtype=torch.long), 1)


def test_sees_the_future_leaves_the_norm_untouched(device):
    bn = nn.BatchNorm1d(8, device=device)
    assert sees_the_future(bn, torch.randn(4, 10, 8, device=device), t=4)
    assert bn.num_batches_tracked.item() == 0
    torch.testing.assert_close(bn.running_mean, torch.zeros(8, device=device))


# --- PyTorch's own test inputs -----------------------------------------------------------------


def batch_norm_module(sample):
    """F.batch_norm(x, running_mean, running_var, weight, bias, training, momentum, eps) as a
    module, or why it is not one."""
    assert set(sample.kwargs) <= {"training", "momentum", "eps"}, sample.kwargs
    running_mean, running_var, weight, bias = sample.args
    training = sample.kwargs.get("training", False)
    if sample.input.dim() not in (2, 3):
        return (
            f"{sample.input.dim()}-D input: BatchNorm1d takes (N, C) or (N, C, L), F.batch_norm any"
        )
    if (weight is None) != (bias is None):
        return "only one of weight and bias: F.batch_norm only (affine=True makes both)"
    if (running_mean is None) != (running_var is None):
        return "only one running statistic: F.batch_norm only"
    if running_mean is None and not training:
        return "training=False without running statistics: F.batch_norm only"
    kwargs = dict(
        num_features=sample.input.shape[1],
        eps=sample.kwargs.get("eps", 1e-5),
        momentum=sample.kwargs.get("momentum", 0.1),
        affine=weight is not None,
        track_running_stats=running_mean is not None,
    )
    state = dict(weight=weight, bias=bias, running_mean=running_mean, running_var=running_var)
    state = {name: t for name, t in state.items() if t is not None}
    if running_mean is not None:
        state["num_batches_tracked"] = torch.tensor(0)
    return kwargs, state, training


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_pytorch_op_db_samples(dtype, device, one_thread):
    if device.type == "mps" and dtype == torch.float64:
        pytest.skip("MPS has no float64")
    name = "nn.functional.batch_norm"
    left_out = assert_matches_op_samples(
        BatchNorm1d, nn.BatchNorm1d, name, batch_norm_module, device, dtype
    )
    assert all("-D input" in reason for reason in left_out), left_out


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_pytorch_module_db_inputs(dtype, device, one_thread):
    if device.type == "mps" and dtype == torch.float64:
        pytest.skip("MPS has no float64")
    assert assert_matches_module_db(BatchNorm1d, nn.BatchNorm1d, device, dtype) >= 10


def test_what_pytorch_refuses_ours_refuses():
    # nn.BatchNorm1d refuses eps <= 0 on the first call; ours as it is built
    info = module_info(nn.BatchNorm1d)
    errors = info.module_error_inputs_func(
        info, device="cpu", dtype=torch.float32, requires_grad=False, training=True
    )
    for error in errors:
        c, f = error.module_error_input.constructor_input, error.module_error_input.forward_input
        with pytest.raises(error.error_type, match="eps must be"):
            BatchNorm1d(*c.args, **c.kwargs)(*f.args)
    assert len(errors) >= 2
