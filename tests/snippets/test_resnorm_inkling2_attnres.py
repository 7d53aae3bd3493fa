"""Stack(residual="attnres", depth_values="normed") against Inkling 2's Block AttnRes.

transformers==5.24.0, src/transformers/models/inkling2/modeling_inkling2.py (generated from
modular_inkling2.py): Inkling2BlockAttentionResidual, Inkling2SlidingDecoderLayer,
Inkling2FullDecoderLayer (its three-query "multiway" depth attention), Inkling2TextModel.forward
(block_states, final_input, norm) and Inkling2TextConfig.n_layers_per_attn_res_block.
"""

from __future__ import annotations

import pytest
import torch
from torch import nn
from transformers.models.inkling2 import modeling_inkling2 as hf

from snippets.resnorm import DEPTH_VALUES, DepthAttention, Stack
from tests.snippets.hf_reference import randomize

D, H, FF = 16, 4, 48
EPS = 1e-6  # Inkling2UnweightedRMSNorm's default, and the config's rms_norm_eps
# bfloat16 keeps 8 bits: 2^-8 ≈ 4e-3 per rounding. Inkling 2 sums each layer in float32 and
# rounds once at its end, the handbook rounds every sum and every depth attention's output;
# measured worst case here 1.6e-2 (7 layers), so 2^-5 leaves a margin of 2.
BF16_TOL = 2**-5


def _config(n_layers: int, n_layers_per_attn_res_block: int, full: bool = False):
    """A toy Inkling2TextConfig. The sliding-window layers (layer_types "hybrid_sliding") read
    one input; "hybrid", the full-attention layer, reads three (multiway)."""
    kind = "hybrid" if full else "hybrid_sliding"
    return hf.Inkling2TextConfig(
        hidden_size=D, num_hidden_layers=n_layers, layer_types=[kind] * n_layers,
        n_layers_per_attn_res_block=n_layers_per_attn_res_block, rms_norm_eps=EPS,
        num_attention_heads=H, num_key_value_heads=H, head_dim=D // H,
        swa_num_attention_heads=H, swa_num_key_value_heads=H, swa_head_dim=D // H,
        moe_intermediate_size=8, n_routed_experts=4, num_experts_per_tok=2, d_rel=4,
        rel_extent=8, sliding_window_size=8, vocab_size=32, unpadded_vocab_size=32,
        eos_token_id=None,
    )  # fmt: skip


class _Core(nn.Module):
    """A deterministic stand-in for attention or the MoE: tanh of a random Linear. Inkling 2's
    attention (clipped q/k, sinks, relative bias, convolved keys) and its MoE are outside this
    axis; the same instance sits on both sides, so only the wiring around it is compared."""

    def __init__(self, seed: int):
        super().__init__()
        self.linear = nn.Linear(D, D)
        randomize(self.linear, seed)

    def forward(self, x=None, hidden_states=None, **kwargs):
        if hidden_states is None:  # the MoE's call, mlp(x), and the handbook's
            return torch.tanh(self.linear(x))
        return torch.tanh(self.linear(hidden_states)), None  # self_attn(hidden_states=...)


class _Branch(nn.Module):
    """The handbook's sublayer: the stand-in, then Inkling 2's own short convolution after it
    (post_attention_convolution, post_mlp_convolution), which is part of F in Inkling 2."""

    def __init__(self, core: _Core, conv: nn.Module):
        super().__init__()
        self.core, self.conv = core, conv

    def forward(self, x):
        return self.conv(self.core(x))


def _pair(n_layers: int, n_layers_per_attn_res_block: int, dtype: torch.dtype):
    """Inkling2TextModel and the handbook's stack, with the same stand-ins, convolutions and
    weights: attention_input ↔ connections[2 l] (layer 0 has none), mlp_input ↔
    connections[2 l + 1], final_input ↔ connections[-1], input_layernorm ↔ attn.norm_in,
    post_attention_layernorm ↔ mlp.norm_in, norm ↔ norm_f. In bfloat16 the modules Inkling 2
    keeps in float32 (_keep_in_fp32_modules_strict: attention_input, mlp_input, final_input,
    the convolutions) stay float32 on both sides, as in a loaded checkpoint."""
    torch.manual_seed(0)
    model = hf.Inkling2TextModel(_config(n_layers, n_layers_per_attn_res_block)).eval()
    randomize(model)
    ours = Stack(
        n_layers, D, H, FF, residual="attnres", block_size=2 * n_layers_per_attn_res_block,
        depth_values="normed", norm="rmsnorm", eps=EPS,
    ).eval()  # fmt: skip
    keep = []
    with torch.no_grad():
        for i, (layer, block) in enumerate(zip(model.layers, ours.layers, strict=True)):
            attn, mlp = _Core(10 + i), _Core(20 + i)
            layer.self_attn, layer.mlp = attn, mlp
            block.attn.sublayer = _Branch(attn, layer.post_attention_convolution)
            block.mlp.sublayer = _Branch(mlp, layer.post_mlp_convolution)
            block.attn.norm_in.weight.copy_(layer.input_layernorm.weight)
            block.mlp.norm_in.weight.copy_(layer.post_attention_layernorm.weight)
            if i > 0:
                ours.connections[2 * i].query.copy_(layer.attention_input.query)
            ours.connections[2 * i + 1].query.copy_(layer.mlp_input.query)
            keep += [layer.post_attention_convolution, layer.post_mlp_convolution]
            keep += [layer.mlp_input] + ([layer.attention_input] if i > 0 else [])
        ours.connections[-1].query.copy_(model.final_input.query)
        ours.norm_f.weight.copy_(model.norm.weight)
    model.to(dtype), ours.to(dtype)
    for module in (*keep, model.final_input, ours.connections):
        module.float()
    return model, ours


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("n_layers_per_attn_res_block", [1, 2, 3, 6])
def test_attnres_stack_equals_inkling2_text_model(n_layers_per_attn_res_block, dtype):
    """Seven Inkling2SlidingDecoderLayers, final_input and norm, run by
    Inkling2TextModel.forward itself (inputs_embeds given), against the handbook's stack:
    blocks of 1, 2, 3 and 6 layers (6, the default, and 3 leave the last block partial).
    The layers' own block boundaries are Stack's: layer_idx % n == 0."""
    n_layers = 7
    model, ours = _pair(n_layers, n_layers_per_attn_res_block, dtype)
    assert [layer.is_block_boundary for layer in model.layers] == [
        i % n_layers_per_attn_res_block == 0 for i in range(n_layers)
    ]
    x = torch.randn(2, 6, D, generator=torch.Generator().manual_seed(1)).to(dtype)
    with torch.no_grad():
        expected = model(inputs_embeds=x, use_cache=False).last_hidden_state
        y = ours(x)
    assert y.dtype == expected.dtype == dtype
    if dtype == torch.float32:
        assert torch.equal(y, expected)
    else:
        torch.testing.assert_close(y, expected, atol=BF16_TOL, rtol=BF16_TOL)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("n_sources", [1, 2, 5])
def test_depth_attention_equals_inkling2_block_attention_residual(n_sources, dtype):
    """DepthAttention(values="normed") ↔ Inkling2BlockAttentionResidual(block_states,
    partial_block_states): the sources normalized without a weight are keys and values, scores
    scaled by d^-1/2, all in float32. Inkling 2 returns float32; the handbook rounds that once
    to the sources' dtype."""
    theirs = hf.Inkling2BlockAttentionResidual(_config(1, 1))
    randomize(theirs)
    ours = DepthAttention(D, eps=EPS, values="normed")
    with torch.no_grad():
        ours.query.copy_(theirs.query)
    g = torch.Generator().manual_seed(1)
    sources = [((i + 1) * torch.randn(2, 5, D, generator=g)).to(dtype) for i in range(n_sources)]
    with torch.no_grad():
        y = ours(sources)
        block_states = torch.stack(sources[:-1], dim=-2) if n_sources > 1 else None
        if block_states is None:
            block_states = sources[-1].new_zeros(2, 5, 0, D)
        (expected,) = theirs(block_states, sources[-1])
    assert expected.dtype == torch.float32 and y.dtype == dtype
    assert torch.equal(y, expected.to(dtype))
    assert ours.norm.weight is None  # Inkling2UnweightedRMSNorm: no weight to copy


def test_multiway_depth_attention_is_three_depth_attentions():
    """Inkling2FullDecoderLayer's attention_input has three queries and returns three inputs,
    one each for attention's queries, keys and values (then q_, k_, v_input_layernorm): three
    DepthAttention(values="normed") over the same sources, one per row of its query. The
    handbook's attention takes one input, so Stack does not build this form."""
    config = _config(2, 1, full=True)
    layer = hf.Inkling2FullDecoderLayer(config, 1)
    assert layer.attention_input.query.shape == (3, D) and layer.mlp_input.query.shape == (D,)
    randomize(layer.attention_input)
    g = torch.Generator().manual_seed(2)
    sources = [(i + 1) * torch.randn(2, 5, D, generator=g) for i in range(4)]
    with torch.no_grad():
        q, k, v = layer.attention_input(torch.stack(sources[:-1], dim=-2), sources[-1])
        for row, expected in zip(layer.attention_input.query, (q, k, v), strict=True):
            ours = DepthAttention(D, eps=EPS, values="normed")
            ours.query.copy_(row)
            assert torch.equal(ours(sources), expected)
    assert not torch.equal(q, k)  # three different mixtures of the same sources


def test_normed_stack_has_inkling2s_parameters_and_trains():
    """One pseudo-query per depth attention, no key-norm weight, none before the first
    sublayer (nn.Identity): 2L of them, as Inkling 2's 2L - 1 in the layers plus final_input.
    Every parameter gets a gradient; the queries start at zero (_init_weights)."""
    torch.manual_seed(0)
    stack = Stack(3, D, H, FF, residual="attnres", depth_values="normed", norm="rmsnorm")
    assert isinstance(stack.connections[0], nn.Identity)
    queries = [n for n, _ in stack.connections.named_parameters()]
    assert queries == [f"{i}.query" for i in range(1, 7)]
    assert all(torch.equal(p, torch.zeros(D)) for p in stack.connections.parameters())
    model = hf.Inkling2TextModel(_config(3, 1))
    theirs = [n for n, _ in model.named_parameters() if n.endswith("query")]
    assert len(theirs) == len(queries)
    x = torch.randn(2, 5, D, requires_grad=True)
    stack(x).square().mean().backward()
    for name, p in stack.named_parameters():
        assert p.grad is not None and torch.isfinite(p.grad).all(), name
    assert any(p.grad.abs().sum() > 0 for p in stack.connections.parameters())


def test_raw_is_the_default_and_keeps_its_weighted_key_norm():
    stack = Stack(2, D, H, FF, residual="attnres")
    assert all(isinstance(c, DepthAttention) and c.values == "raw" for c in stack.connections)
    assert stack.connections[0].norm.weight is not None
    assert DEPTH_VALUES == ("raw", "normed")


def test_bad_depth_values_are_named():
    with pytest.raises(
        ValueError, match=r"depth_values must be None or one of \('raw', 'normed'\), got 'l2'"
    ):
        Stack(2, D, H, FF, residual="attnres", depth_values="l2")
    with pytest.raises(ValueError, match=r"depth_values must be None or one of .*, got 1"):
        Stack(2, D, H, FF, residual="attnres", depth_values=1)
    with pytest.raises(
        ValueError,
        match=r"depth_values='normed' needs residual in \('attnres',\), got 'mhc': "
        "only depth attention averages values",
    ):
        Stack(2, D, H, FF, residual="mhc", depth_values="normed")
    with pytest.raises(ValueError, match=r"values must be one of \('raw', 'normed'\), got 'keys'"):
        DepthAttention(D, values="keys")
    with pytest.raises(ValueError, match="expected at least one source, got an empty list"):
        DepthAttention(D, values="normed")([])
    with pytest.raises(ValueError, match=r"shape \(batch, seq_len, 16\), got \(2, 5, 8\)"):
        DepthAttention(D, values="normed")([torch.randn(2, 5, 8)])
