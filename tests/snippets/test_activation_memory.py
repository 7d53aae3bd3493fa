"""snippets/activation_memory.py: saved-for-backward bytes and peak step memory."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from snippets.activation_memory import (
    korthikanti_bytes_per_layer,
    layer_index,
    peak_step_memory,
    saved_for_backward,
    total_bytes,
)
from snippets.resnorm import Stack

B, T, C, H, L = 2, 8, 16, 2, 3


def test_linear_keeps_its_input_but_not_its_weight(device):
    x = torch.randn(B, T, C, device=device)
    records = saved_for_backward(nn.Linear(C, 4 * C).to(device), x)
    assert [(r.module, r.kind) for r in records] == [("", "Linear")]
    assert total_bytes(records) == x.nbytes  # the input, seen as a (B*T, C) view of x


def test_layer_norm_keeps_its_input_mean_and_rstd(device):
    x = torch.randn(B, T, C, device=device, requires_grad=True)
    ln = nn.LayerNorm(C).to(device)
    records = saved_for_backward(ln, x)
    # autograd's own record of what NativeLayerNormBackward0 keeps
    grad_fn = ln(x).grad_fn
    expected = [grad_fn._saved_input, grad_fn._saved_result1, grad_fn._saved_result2]
    assert sorted(r.shape for r in records) == sorted(tuple(t.shape) for t in expected)
    assert total_bytes(records) == 4 * (B * T * C + 2 * B * T)  # float32


class SinPlusCosOfView(nn.Module):
    def forward(self, x):
        return x.sin() + x.view(-1).cos().view_as(x)  # both ops save (a view of) x


def test_a_storage_is_counted_once_however_many_views_are_saved(device):
    x = torch.randn(B, T, C, device=device, requires_grad=True)
    records = saved_for_backward(SinPlusCosOfView(), x)
    assert len(records) == 1 and total_bytes(records) == x.nbytes


def test_a_view_counts_its_whole_storage(device):
    x = torch.randn(4 * B, T, C, device=device, requires_grad=True)
    records = saved_for_backward(SinPlusCosOfView(), x[:B])  # a quarter of x ...
    assert total_bytes(records) == x.nbytes  # ... keeps all of x alive


def test_buffers_and_parameters_are_not_counted(device):
    # batch norm's backward keeps its input, weight, running statistics (buffers) and
    # the batch's mean and inverse std: only the input and the two batch statistics count
    bn = nn.BatchNorm1d(C).to(device)
    x = torch.randn(B, C, device=device, requires_grad=True)
    records = saved_for_backward(bn, x)
    assert sorted(r.shape for r in records) == [(B, C), (C,), (C,)]
    assert total_bytes(records) == 4 * (B * C + 2 * C)


def test_nothing_is_saved_without_grad(device):
    model = Stack(L, C, H, 4 * C, causal=True).to(device)
    with torch.no_grad():
        assert saved_for_backward(model, torch.randn(B, T, C, device=device)) == []


@pytest.mark.parametrize("norm", ["layernorm", "rmsnorm"])
def test_pre_and_post_layers_save_the_same_bytes_and_pre_adds_its_final_norm(norm, device):
    totals, per_layer = {}, {}
    for placement in ("post", "pre"):
        torch.manual_seed(0)
        model = Stack(L, C, H, 4 * C, norm_position=placement, norm=norm, causal=True)
        x = torch.randn(B, T, C, requires_grad=True)  # as if it came from trainable embeddings
        records = saved_for_backward(model.to(device), x.to(device))
        totals[placement] = total_bytes(records)
        per_layer[placement] = [
            total_bytes(records, lambda r, i=i: layer_index(r.module) == i) for i in range(L)
        ]
        outside = [r for r in records if layer_index(r.module) is None]
        assert {r.module for r in outside} == ({"norm_f"} if placement == "pre" else set())
    assert per_layer["pre"] == per_layer["post"]
    final_norm = totals["pre"] - totals["post"]
    assert final_norm >= 4 * B * T * C  # at least the final norm's input
    assert final_norm < 0.1 * totals["post"]


def test_layer_norm_layer_matches_korthikanti_count_plus_small_buffers():
    # float32, no dropout: Eq. 1's tensors, plus LayerNorm's mean and rstd (2 per norm)
    # and the causal mask (T x T booleans), which the paper leaves out as small.
    torch.manual_seed(0)
    model = Stack(L, C, H, 4 * C, norm_position="pre", causal=True)
    records = saved_for_backward(model, torch.randn(B, T, C, requires_grad=True))
    layer = total_bytes(records, lambda r: layer_index(r.module) == 1)
    formula = korthikanti_bytes_per_layer(T, B, C, H, bytes_per_element=4, dropout=False)
    assert layer == formula + 2 * (2 * B * T * 4) + T * T


def test_korthikanti_eq1():
    s, b, h, a = 2048, 1, 12288, 96  # GPT-3's values in the paper's §5
    assert korthikanti_bytes_per_layer(s, b, h, a) == s * b * h * (34 + 5 * a * s // h)
    assert korthikanti_bytes_per_layer(2, 3, 4, 5, 4, dropout=False) == 4 * (
        16 * 2 * 3 * 4 + 5 * 2 * 2 * 3
    )


def test_hooks_are_removed_and_the_output_is_untouched():
    torch.manual_seed(0)
    model = Stack(L, C, H, 4 * C, causal=True)
    x = torch.randn(B, T, C)
    before = model(x)
    saved_for_backward(model, x)
    assert all(not m._forward_hooks and not m._forward_pre_hooks for m in model.modules())
    torch.testing.assert_close(model(x), before)
    with pytest.raises(ValueError, match="expected input of shape"):
        saved_for_backward(model, torch.randn(B, T, C + 1))  # the model's own error
    assert all(not m._forward_hooks and not m._forward_pre_hooks for m in model.modules())


def test_layer_index():
    assert layer_index("stack.layers.3.attn.norm_in") == 3
    assert layer_index("layers.12") == 12
    assert layer_index("stack.norm_f") is None
    assert layer_index("my_layers.2") is None


def test_peak_sees_overlap_and_reuse(device):
    if device.type not in ("cpu", "cuda"):
        pytest.skip("peak_step_memory measures on cpu and cuda")
    n = 250_000  # 1 MB of float32

    def overlapping():
        a = torch.ones(n, device=device)
        b = torch.ones(n, device=device)
        return a.sum() + b.sum()

    def one_after_the_other():
        torch.ones(n, device=device).sum()
        torch.ones(n, device=device).sum()

    both, one = peak_step_memory(overlapping, device), peak_step_memory(one_after_the_other, device)
    assert 8 * n <= both < 8 * n + 8192  # the two megabytes at once, plus scalars
    assert 4 * n <= one < 4 * n + 8192


def test_peak_of_a_training_step_is_at_least_what_it_saves(device):
    if device.type not in ("cpu", "cuda"):
        pytest.skip("peak_step_memory measures on cpu and cuda")
    torch.manual_seed(0)
    model = Stack(L, C, H, 4 * C, causal=True).to(device)
    x = torch.randn(B, T, C, device=device, requires_grad=True)
    saved = total_bytes(saved_for_backward(model, x))
    peak = peak_step_memory(lambda: model(x).square().mean().backward(), device)
    assert peak >= saved


def test_bad_arguments_are_named():
    with pytest.raises(TypeError, match=r"model must be an nn\.Module, got function"):
        saved_for_backward(lambda x: x, torch.randn(2))
    with pytest.raises(ValueError, match="measures on 'cpu' or 'cuda', got 'meta'"):
        peak_step_memory(lambda: None, "meta")


@pytest.mark.parametrize(
    ("args", "match"),
    [
        ((-2048, 1, 12288, 96), "s must be a positive int, got -2048"),  # s² made it positive
        ((0, 1, 12288, 96), "s must be a positive int, got 0"),
        ((2048.5, 1, 12288, 96), r"s must be a positive int, got 2048\.5"),
        ((2048, True, 12288, 96), "b must be a positive int, got True"),
        ((2048, 1, "12288", 96), "h must be a positive int, got '12288'"),
        ((2048, 1, 12288, 0), "a must be a positive int, got 0"),
        ((2048, 1, 12288, 96, 0), "bytes_per_element must be a positive int, got 0"),
    ],
)
def test_korthikanti_refuses_sizes_that_are_not_positive_ints(args, match):
    with pytest.raises(ValueError, match=match):
        korthikanti_bytes_per_layer(*args)
