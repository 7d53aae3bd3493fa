"""snippets/batch_vs_layer_norm.py against torch.nn.BatchNorm1d and torch.nn.LayerNorm."""

from __future__ import annotations

import inspect
import itertools

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
from tests.checks import assert_same_forward_backward, copy_random_params

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
    with pytest.raises(ValueError, match="eps must be > 0, got 0"):
        BatchNorm1d(4, eps=0)
    with pytest.raises(ValueError, match=r"expects a \(B, T, C\) tensor, got \(2, 3\)"):
        normalize_tokens(nn.LayerNorm(3), torch.randn(2, 3))
    with pytest.raises(ValueError, match=r"got \(6, 8\) and \(3, 6, 7\)"):
        output_in_batch(nn.LayerNorm(8), torch.randn(6, 8), torch.randn(3, 6, 7))
    with pytest.raises(ValueError, match="at least one batch, got an empty list"):
        train_eval_gap(nn.LayerNorm(8), [])
    with pytest.raises(ValueError, match=r"0 <= t < T - 1, got shape \(2, 5, 8\) and t=4"):
        sees_the_future(nn.LayerNorm(8), torch.randn(2, 5, 8), t=4)
