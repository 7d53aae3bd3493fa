"""Two 2026 designs inside attention against their Hugging Face code (transformers 5.24.0):
Inkling 2's clip of the lengths of q and k (MultiHeadAttention(qk_norm="l2_clip")) and Gemma
4's keys and values from one projection (MultiHeadAttention(k_eq_v=True))."""

from __future__ import annotations

import math
import re

import pytest
import torch
import transformers
from torch import nn
from transformers.models.gemma4 import modeling_gemma4 as hf_gemma4
from transformers.models.inkling2 import modeling_inkling2 as hf_inkling2

from snippets.resnorm import QK_CLIPS, QK_NORMS, L2Clip, MultiHeadAttention
from tests.snippets.hf_reference import hf_causal_mask, randomize, rope_identity

D, H = 16, 4
HS = D // H
TAU = 2.0  # within the spread of these toy heads' lengths, so the clip acts on some
# bfloat16 keeps 8 bits, 2^-8 ≈ 4e-3 per rounding, and the two sides may round at different
# places (Inkling 2 multiplies by its output gate in float32, the handbook in bfloat16).
# Measured on CPU over 10 inputs: Inkling 2's layers differ by at most 2^-6 on outputs up to 4
# in size; Gemma 4's k = v layer gave the same bits every time.
BF16_TOL = dict(atol=2**-5, rtol=2**-5)


# --- The clip module -------------------------------------------------------------------------


def _inkling2_config(**extra):
    """A toy Inkling 2 text config: as many key-value heads as query heads, both layer kinds
    of head size HS, the five sliding layers and the sixth full layer of its default pattern."""
    return transformers.Inkling2TextConfig(
        hidden_size=D, num_attention_heads=H, num_key_value_heads=H, swa_num_attention_heads=H,
        swa_num_key_value_heads=H, head_dim=HS, swa_head_dim=HS, num_hidden_layers=6,
        rms_norm_eps=1e-6, d_rel=4, rel_extent=8, sliding_window_size=8,
        qk_l2_clip_threshold=TAU, attn_implementation="eager", **extra,
    )  # fmt: skip


def test_inkling2_clip_defaults():
    """The threshold of q and k, 16√2 = √512 in Inkling2TextConfig; the log scale starts at
    position 128000 with strength 0.1 (Inkling2LogScale)."""
    config = transformers.Inkling2TextConfig()
    assert config.qk_l2_clip_threshold == pytest.approx(16 * math.sqrt(2), abs=1e-12)
    assert (config.head_dim, config.swa_head_dim) == (128, 128)
    assert (config.log_scaling_n_floor, config.log_scaling_alpha) == (128000, 0.1)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_l2_clip_equals_inkling2_clips(dtype):
    """L2Clip(τ, (heads, head_dim)) ↔ Inkling2ScaledL2Clip (the query's), L2Clip(τ) ↔
    Inkling2L2Clip (the key's): both compute in float32 and cast back once, bit for bit in
    float32 and in bfloat16. Inkling2LogScaledL2Clip (the full layers' query) is the scaled
    clip times 1 + α·log(max((m + 1)/n_floor, 1)), exactly 1 below position n_floor - 1."""
    g = torch.Generator().manual_seed(0)
    x = (3 * torch.randn(2, 6, H, HS, generator=g)).to(dtype)
    theirs_q = hf_inkling2.Inkling2ScaledL2Clip(H, HS, TAU)
    randomize(theirs_q)
    ours_q = L2Clip(TAU, (H, HS))
    ours_q.load_state_dict({"weight": theirs_q.scale.detach()})
    torch.testing.assert_close(ours_q(x), theirs_q(x), rtol=0, atol=0)
    torch.testing.assert_close(L2Clip(TAU)(x), hf_inkling2.Inkling2L2Clip(TAU)(x), rtol=0, atol=0)
    logscaled = hf_inkling2.Inkling2LogScaledL2Clip(_inkling2_config(), H, HS, TAU)
    logscaled.scale.data.copy_(theirs_q.scale)
    early = torch.arange(6).expand(2, 6)
    torch.testing.assert_close(logscaled(x, early), ours_q(x), rtol=0, atol=0)
    late = early + 10**6  # past n_floor: the queries grow, which L2Clip leaves out
    assert (logscaled(x, late).float().norm(dim=-1) > ours_q(x).float().norm(dim=-1)).all()


def test_l2_clip_caps_lengths_and_keeps_short_vectors():
    """A vector longer than τ comes out with length τ and its direction; a shorter one comes
    out as it went in; a learned scale acts before the cap, which holds whatever it learns."""
    t = torch.randn(3, 5, H, HS, dtype=torch.float64)
    t[0] *= 100.0  # long
    t[1] *= 0.01  # short
    out = L2Clip(TAU)(t)
    length = out.norm(dim=-1)
    assert (length <= TAU + 1e-9).all()
    torch.testing.assert_close(length[0], torch.full_like(length[0], TAU), rtol=1e-6, atol=0)
    torch.testing.assert_close(
        out[0] / length[0, ..., None], t[0] / t[0].norm(dim=-1, keepdim=True)
    )
    assert torch.equal(out[1], t[1])
    scaled = L2Clip(TAU, (H, HS)).double()
    with torch.no_grad():
        scaled.weight.fill_(1000.0)
    assert (scaled(t).norm(dim=-1) <= TAU + 1e-9).all()


# --- Inkling 2's attention -------------------------------------------------------------------


class _Identity(nn.Module):
    """Stands in for Inkling 2's short convolution of k and v (called with extra arguments)."""

    def forward(self, states, *args, **kwargs):
        return states


class _NoSink(nn.Module):
    """Stands in for sink_proj: a sink logit of -inf gives the sink column weight exactly 0."""

    def forward(self, x):
        return torch.full((*x.shape[:-1], H), float("-inf"), dtype=x.dtype)


def _inkling2_pair(layer: int, dtype):
    """Inkling2SlidingAttention (layer 0) or Inkling2FullAttention (layer 5) with random
    weights, and the handbook's attention with the same: q_proj.linear, k_proj.linear and
    v_proj.linear stacked into qkv, q_proj.norm.scale into the query clip's weight,
    o_proj.gate_proj into gate, o_proj.linear into proj. What the handbook's module has no
    part for is set to the identity on HF's side: the short convolutions of k and v, the
    per-token sink logits (sink_proj, here -inf) and the relative position bias (proj = 0)."""
    config = _inkling2_config()
    cls = hf_inkling2.Inkling2FullAttention if layer == 5 else hf_inkling2.Inkling2SlidingAttention
    torch.manual_seed(0)
    theirs = cls(config, layer)
    assert theirs.scaling == HS**-0.5
    randomize(theirs)
    with torch.no_grad():
        theirs.relative_position_bias.proj.zero_()
    theirs.k_proj.sconv = theirs.v_proj.sconv = _Identity()
    theirs.sink_proj = _NoSink()
    ours = MultiHeadAttention(
        D, H, causal=True, bias=False, qk_norm="l2_clip", clip_threshold=TAU, eps=1e-6,
        v_norm=True, output_gate="elementwise", scale=HS**-0.5,
    )  # fmt: skip
    with torch.no_grad():
        ours.qkv.weight.copy_(
            torch.cat([theirs.q_proj.linear.weight, theirs.k_proj.linear.weight,
                       theirs.v_proj.linear.weight])
        )  # fmt: skip
        ours.q_norm.weight.copy_(theirs.q_proj.norm.scale)
        ours.gate.weight.copy_(theirs.o_proj.gate_proj.weight)
        ours.proj.weight.copy_(theirs.o_proj.linear.weight)
    return ours.to(dtype), theirs.to(dtype).eval()


def _inkling2_output(theirs, x):
    T = x.shape[1]
    kwargs = dict(
        attention_mask=hf_causal_mask(x),
        relative_distance=torch.arange(T)[:, None] - torch.arange(T)[None, :],
        position_ids=torch.arange(T).expand(x.shape[0], T),
    )
    if isinstance(theirs, hf_inkling2.Inkling2FullAttention):
        kwargs.update(key_hidden_states=x, value_hidden_states=x)
    return theirs(x, **kwargs)[0]


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("layer", [0, 5], ids=["sliding", "full"])
def test_l2_clip_attention_equals_inkling2_attention(layer, dtype):
    """MultiHeadAttention(qk_norm="l2_clip", clip_threshold=τ, v_norm=True,
    output_gate="elementwise", scale=head_dim^-0.5) ↔ Inkling2SlidingAttention and
    Inkling2FullAttention with the parts above set to the identity: q clipped after its
    learned scale, k clipped, v through a weightless RMSNorm (Inkling2UnweightedRMSNorm,
    rms_norm_eps), q·k times head_dim^-0.5, the gate sigmoid(gate_proj(x)) on each head's
    output. Positions below log_scaling_n_floor, where the full layers' log scale is 1.
    float32: bit for bit. bfloat16: within BF16_TOL."""
    ours, theirs = _inkling2_pair(layer, dtype)
    x = 3 * torch.randn(2, 7, D, generator=torch.Generator().manual_seed(1))
    x = x.to(dtype)  # of a size where some heads' q and k pass τ and some do not
    with torch.no_grad():
        y, y_theirs = ours(x), _inkling2_output(theirs, x)
        q = ours.qkv(x)[..., :D].view(2, 7, H, HS) * ours.q_norm.weight
    lengths = q.float().norm(dim=-1)
    assert (lengths > TAU).any() and (lengths < TAU).any()  # the clip acts on some heads only
    if dtype == torch.float32:
        torch.testing.assert_close(y, y_theirs, rtol=0, atol=0)
    else:
        torch.testing.assert_close(y, y_theirs, **BF16_TOL)


def test_l2_clip_bounds_every_logit():
    """|s| <= τ² · scale: each of q and k has length at most τ, whatever x and the weights."""
    torch.manual_seed(0)
    attn = MultiHeadAttention(D, H, qk_norm="l2_clip", clip_threshold=TAU)
    x = 1000 * torch.randn(2, 6, D)
    seen = []
    attn.attn_dropout.register_forward_hook(lambda m, i, o: seen.append(i[0]))
    with torch.no_grad():
        attn.q_norm.weight.mul_(50.0)
        attn(x)
    p = seen[0]  # softmax weights; their log-ratios are logit differences, at most 2τ²/√d
    span = p.log().max(-1).values - p.log().min(-1).values
    assert (span <= 2 * TAU**2 / math.sqrt(HS) + 1e-4).all()


# --- Gemma 4's keys and values from one projection ---------------------------------------------


def _gemma4_k_eq_v_config():
    """A dense Gemma 4 text layer: one full-attention layer with attention_k_eq_v (its global
    layers), global_head_dim = HS, as many key-value heads as query heads."""
    config = transformers.Gemma4TextConfig(
        hidden_size=D, num_attention_heads=H, num_key_value_heads=H, num_hidden_layers=1,
        intermediate_size=48, head_dim=HS, global_head_dim=HS, num_global_key_value_heads=H,
        rms_norm_eps=1e-6, attention_bias=False, attn_implementation="eager",
        layer_types=["full_attention"], hidden_size_per_layer_input=0, attention_k_eq_v=True,
    )  # fmt: skip
    assert (config.enable_moe_block, config.num_kv_shared_layers) == (False, 0)
    return config


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_k_eq_v_equals_gemma4_attention(dtype):
    """MultiHeadAttention(k_eq_v=True, qk_norm="head", v_norm=True, scale=1.0) ↔
    Gemma4TextAttention with attention_k_eq_v on a full-attention layer: v_proj is None, the
    values are k_proj(x) before k_norm (Gemma4RMSNorm, weighted) through v_norm
    (Gemma4RMSNorm, with_scale=False); self.scaling = 1.0; RoPE the identity here.
    float32: bit for bit. bfloat16: within BF16_TOL (HF's softmax runs in float32)."""
    torch.manual_seed(0)
    theirs = hf_gemma4.Gemma4TextAttention(_gemma4_k_eq_v_config(), 0)
    assert theirs.use_alternative_attention and theirs.v_proj is None
    randomize(theirs)
    theirs = theirs.to(dtype).eval()
    ours = MultiHeadAttention(
        D, H, causal=True, bias=False, qk_norm="head", eps=1e-6, v_norm=True, scale=1.0,
        k_eq_v=True,
    ).to(dtype)  # fmt: skip
    with torch.no_grad():
        ours.qkv.weight.copy_(torch.cat([theirs.q_proj.weight, theirs.k_proj.weight]))
        ours.proj.weight.copy_(theirs.o_proj.weight)
        ours.q_norm.weight.copy_(theirs.q_norm.weight)
        ours.k_norm.weight.copy_(theirs.k_norm.weight)
    x = torch.randn(2, 6, D, generator=torch.Generator().manual_seed(1)).to(dtype)
    with torch.no_grad():
        y = ours(x)
        y_theirs, _ = theirs(
            x, position_embeddings=rope_identity(x, HS), attention_mask=hf_causal_mask(x),
            shared_kv_states={},
        )  # fmt: skip
    if dtype == torch.float32:
        torch.testing.assert_close(y, y_theirs, rtol=0, atol=0)
    else:
        torch.testing.assert_close(y, y_theirs, **BF16_TOL)


def test_k_eq_v_has_no_value_projection():
    """qkv holds [W_q; W_k]: d_model² weights fewer than the default. With k_norm's weight at 1
    and no RoPE, keys and values are the same vectors, RMS(W_k x) per head."""
    shared = MultiHeadAttention(D, H, qk_norm="head", v_norm=True, k_eq_v=True)
    plain = MultiHeadAttention(D, H, qk_norm="head", v_norm=True)
    assert tuple(shared.qkv.weight.shape) == (2 * D, D)
    n = sum(p.numel() for p in plain.parameters()) - sum(p.numel() for p in shared.parameters())
    assert n == D * D + D  # W_v and its bias
    x = torch.randn(2, 5, D)
    seen = {}
    shared.k_norm.register_forward_hook(lambda m, i, o: seen.update(k=o))
    shared.v_norm.register_forward_hook(lambda m, i, o: seen.update(v=o))
    shared(x)
    torch.testing.assert_close(seen["k"], seen["v"])


# --- Bad arguments ---------------------------------------------------------------------------

BAD_ARGUMENTS = [
    (dict(qk_norm="clip"), ValueError,
     f"qk_norm must be None or one of {QK_NORMS}, got 'clip' (or a clip in place of a norm: "
     "'l2_clip')"),
    (dict(qk_norm="l2_clip"), ValueError,
     "qk_norm='l2_clip' needs clip_threshold, the largest length of q and k (Inkling 2: 16√2 ≈ "
     "22.63 at head_dim 128), got None"),
    (dict(qk_norm="head", clip_threshold=2.0), ValueError,
     "clip_threshold is for qk_norm='l2_clip', got qk_norm='head'"),
    (dict(clip_threshold=2.0), ValueError,
     "clip_threshold is for qk_norm='l2_clip', got qk_norm=None"),
    (dict(qk_norm="l2_clip", clip_threshold=0.0), ValueError,
     "clip_threshold must be None or a finite number > 0, got 0.0"),
    (dict(qk_norm="l2_clip", clip_threshold=-2.0), ValueError,
     "clip_threshold must be None or a finite number > 0, got -2.0"),
    (dict(qk_norm="l2_clip", clip_threshold=float("inf")), ValueError,
     "clip_threshold must be None or a finite number > 0, got inf"),
    (dict(qk_norm="l2_clip", clip_threshold="2"), TypeError,
     "clip_threshold must be None or a finite number > 0, got str '2'"),
    (dict(qk_norm="l2_clip", clip_threshold=True), TypeError,
     "clip_threshold must be None or a finite number > 0, got bool True"),
    (dict(qk_norm="l2_clip", clip_threshold=2.0, eps=0.0), ValueError,
     "eps must be None or a finite number > 0, got 0.0"),
    (dict(k_eq_v=1), TypeError, "k_eq_v must be True or False, got 1"),
    (dict(k_eq_v="yes"), TypeError, "k_eq_v must be True or False, got 'yes'"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("kwargs", "error", "message"), BAD_ARGUMENTS, ids=[m for *_, m in BAD_ARGUMENTS]
)
def test_bad_arguments_are_named(kwargs, error, message):
    with pytest.raises(error, match=f"^{re.escape(message)}$"):
        MultiHeadAttention(D, H, **kwargs)


def test_clip_is_a_value_of_qk_norm_apart_from_the_norms():
    assert QK_CLIPS == ("l2_clip",) and not set(QK_CLIPS) & set(QK_NORMS)
