"""snippets/depth_probe.py: stream norms and Lemma 2's band."""

from __future__ import annotations

import itertools

import pytest
import torch
from torch import nn

from snippets.depth_probe import lemma2_band, stream_sq_norms
from snippets.resnorm import Stack, from_torch_encoder_layer

D, H, FF = 16, 4, 64


pytestmark = pytest.mark.usefixtures("one_thread")


# --- stream_sq_norms -------------------------------------------------------------------


@pytest.mark.parametrize("norm_first", [False, True])
def test_stream_norms_match_pytorch_encoder_layers(norm_first, device):
    """The handbook's Stack and nn.TransformerEncoderLayer with the same weights: same stream."""
    torch.manual_seed(0)
    ref = [
        nn.TransformerEncoderLayer(D, H, FF, dropout=0.0, batch_first=True, norm_first=norm_first)
        for _ in range(3)
    ]
    stack = Stack(3, D, H, FF, norm_position="pre" if norm_first else "post", final_norm=False)
    stack.layers = nn.ModuleList(from_torch_encoder_layer(layer) for layer in ref)
    stack.to(device)
    x = 2 * torch.randn(4, 5, D, device=device)
    expected, h = [x.pow(2).sum(-1).mean().item() / D], x
    with torch.no_grad():
        for layer in ref:
            h = layer.to(device)(h)
            expected.append(h.pow(2).sum(-1).mean().item() / D)
    assert stream_sq_norms(stack, x) == pytest.approx(expected, rel=1e-5)


def test_post_ln_stream_stays_at_the_norms_scale():
    torch.manual_seed(0)
    stack = Stack(6, D, H, FF, norm_position="post")
    norms = stream_sq_norms(stack, 5 * torch.randn(2, 3, D))
    assert norms[0] > 10  # the input is large ...
    assert norms[1:] == pytest.approx([1.0] * 6, abs=1e-3)  # ... every layer's output is not


def test_rezero_stream_is_the_input_at_initialization():
    torch.manual_seed(0)
    norms = stream_sq_norms(Stack(4, D, H, FF, norm_position="rezero"), torch.randn(2, 3, D))
    assert norms == pytest.approx([norms[0]] * 5)


def test_pre_ln_stream_grows_and_ignores_the_final_norm():
    torch.manual_seed(0)
    stack = Stack(8, D, H, FF, norm_position="pre")  # with its final norm
    x = torch.randn(4, 8, D)
    norms = stream_sq_norms(stack, x)
    assert all(b > a for a, b in itertools.pairwise(norms))
    assert norms[-1] > 1.5 * norms[0]
    with torch.no_grad():  # the stack's own output is normalized; the probe looks before that
        assert stack(x).pow(2).mean().item() == pytest.approx(1.0, abs=1e-3)


def test_stream_norms_errors():
    stack = Stack(1, D, H, FF)
    with pytest.raises(ValueError, match=r"\(batch, seq_len, d_model\), got \(3, 16\)"):
        stream_sq_norms(stack, torch.randn(3, D))
    with pytest.raises(TypeError, match=r"floating-point tensor, got torch\.int64"):
        stream_sq_norms(stack, torch.ones(1, 2, D, dtype=torch.long))
    with pytest.raises(TypeError, match=r"a \.layers list, got Linear"):
        stream_sq_norms(nn.Linear(D, D), torch.randn(1, 2, D))


def test_lemma2_band():
    lower, upper = lemma2_band(4)
    assert lower == [1.0, 1.5, 2.0, 2.5, 3.0]
    assert upper == [1.0, 2.5, 4.0, 5.5, 7.0]
    for bad in (-1, 2.0, True):
        with pytest.raises(ValueError, match="non-negative int"):
            lemma2_band(bad)
