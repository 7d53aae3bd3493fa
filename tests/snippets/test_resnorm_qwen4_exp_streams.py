"""Qwen4-Exp's gated streams (Stack(residual="gated_streams"), GatedStreams) against its code.

transformers==5.24.0, src/transformers/models/qwen4_exp/modeling_qwen4_exp.py:
Qwen4ExpTextGatedResidual (the connection, and with use_combine=False the final mixer),
Qwen4ExpTextRMSNorm (the grouped (1 + w) RMSNorm), Qwen4ExpTextDecoderLayer.forward,
Qwen4ExpTextModel.forward and _init_weights. The model is built at toy size from its config
class; its attention, linear attention and MoE are swapped for the same stand-ins on both
sides (_Stub), so what is compared is the residual wiring: the n streams, the norm inside the
connection, the gate, the injection 2 sigmoid(.), the final mixer and the absence of a final norm.
"""

from __future__ import annotations

import pytest
import torch
from torch import nn
from transformers.models.qwen4_exp import configuration_qwen4_exp as hf_config
from transformers.models.qwen4_exp import modeling_qwen4_exp as hf_qwen4

from snippets.resnorm import (
    COLLAPSES,
    RESIDUALS,
    STREAM_RESIDUALS,
    GatedStreams,
    OnePlusRMSNorm,
    Stack,
)
from tests.snippets.hf_reference import randomize

D, H, FF, N, RANK = 16, 4, 48, 4, 8

# Both sides compute the same operations in the same order (the norm in float32, the rest in
# the streams' dtype), so they agree bit for bit in float32 and in bfloat16 alike: the stated
# tolerance is 0 for both.
TOL = {torch.float32: 0.0, torch.bfloat16: 0.0}
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}


def _config(**overrides) -> hf_config.Qwen4ExpTextConfig:
    """A toy Qwen4-Exp: one linear-attention and one indexed-attention layer, 4 streams."""
    kwargs = dict(
        hidden_size=D, hc_count=N, hc_lowrank=RANK, num_hidden_layers=2, vocab_size=32,
        num_attention_heads=H, num_key_value_heads=2, head_dim=4,
        num_experts=4, num_experts_per_tok=2, moe_intermediate_size=8,
        shared_expert_intermediate_size=8, linear_num_key_heads=2, linear_num_value_heads=2,
        linear_key_head_dim=4, linear_value_head_dim=4, indexer_n_heads=2, indexer_kv_heads=1,
        indexer_head_dim=4, indexer_budget=4, indexer_compress_ratio=2,
        layer_types=["linear_attention", "indexed_attention"],
    )  # fmt: skip
    return hf_config.Qwen4ExpTextConfig(**(kwargs | overrides))


class _Stub(nn.Module):
    """A deterministic stand-in for a sublayer, one core shared by both sides. Qwen4-Exp's
    attention (gated, with a token indexer), its GatedDeltaNet and its MoE are outside the
    handbook; the layer passes them the connection's output and takes back one tensor (the
    attention: a pair)."""

    def __init__(self, core: nn.Module, returns_tuple: bool = False):
        super().__init__()
        self.core, self.returns_tuple = core, returns_tuple

    def forward(self, x, *args, **kwargs):
        y = torch.tanh(self.core(x))
        return (y, None) if self.returns_tuple else y


def _copy_connection(ours: GatedStreams, theirs: nn.Module) -> None:
    """Qwen4ExpTextGatedResidual's weights into GatedStreams: hc_norm's (n * d,) weight is the
    n streams' norms, stream by stream."""
    with torch.no_grad():
        for k, norm in enumerate(ours.norms):
            norm.weight.copy_(theirs.hc_norm.weight[k * D : (k + 1) * D])
        ours.gate_down.weight.copy_(theirs.input_mix_weight_down.weight)
        ours.gate_up.weight.copy_(theirs.input_mix_weight_up.weight)
        if theirs.block_inject_weight is not None:
            ours.inject.weight.copy_(theirs.block_inject_weight.weight)


def _pair(dtype: torch.dtype):
    """Qwen4ExpTextModel and the handbook's stack, same weights and the same stand-ins."""
    torch.manual_seed(0)
    config = _config()
    theirs = hf_qwen4.Qwen4ExpTextModel(config).eval()
    randomize(theirs)
    ours = Stack(
        2, D, H, FF, residual="gated_streams", n_streams=N, gate_rank=RANK, norm="rmsnorm_1p",
        eps=config.rms_norm_eps,
    ).eval()  # fmt: skip
    for i, layer in enumerate(theirs.layers):
        attn_core, mlp_core = nn.Linear(D, D), nn.Linear(D, D)
        randomize(attn_core, seed=10 + i)
        randomize(mlp_core, seed=20 + i)
        if layer.layer_type == "linear_attention":
            layer.linear_attn = _Stub(attn_core)
        else:
            layer.self_attn = _Stub(attn_core, returns_tuple=True)
        layer.mlp = _Stub(mlp_core)
        block = ours.layers[i]
        block.attn.sublayer, block.mlp.sublayer = _Stub(attn_core), _Stub(mlp_core)
        _copy_connection(ours.connections[2 * i], layer.attn_hyper_connection)
        _copy_connection(ours.connections[2 * i + 1], layer.mlp_hyper_connection)
    _copy_connection(ours.head, theirs.hyper_connection_mixer)
    return theirs.to(dtype), ours.to(dtype)


@pytest.mark.parametrize("dtype", DTYPES.values(), ids=DTYPES)
def test_gated_streams_stack_equals_qwen4_exp_text_model(dtype):
    """Stack(residual="gated_streams") against Qwen4ExpTextModel.forward: the embedding
    repeated into hc_count streams, two decoder layers (no input_layernorm), the final mixer
    and no final norm."""
    theirs, ours = _pair(dtype)
    x = torch.randn(2, 6, D).to(dtype)
    with torch.no_grad():
        expected = theirs(inputs_embeds=x).last_hidden_state
        got = ours(x)
    assert ours.norm_f is None and ours.collapse == "mixer"
    assert got.dtype == expected.dtype == dtype
    torch.testing.assert_close(got, expected, rtol=TOL[dtype], atol=TOL[dtype])


@pytest.mark.parametrize("dtype", DTYPES.values(), ids=DTYPES)
@pytest.mark.parametrize("head", [False, True], ids=["connection", "mixer"])
def test_gated_streams_equal_qwen4_exp_gated_residual(head, dtype):
    """One connection: F's input, the streams kept apart (hyper_input) and post = 2 sigmoid(.)
    equal Qwen4ExpTextGatedResidual's; with head=True, the final mixer (use_combine=False)."""
    torch.manual_seed(0)
    theirs = hf_qwen4.Qwen4ExpTextGatedResidual(_config(), use_combine=not head)
    randomize(theirs, seed=3)
    ours = GatedStreams(D, N, rank=RANK, head=head)
    _copy_connection(ours, theirs)
    theirs, ours = theirs.to(dtype), ours.to(dtype)
    h = torch.randn(3, 5, N, D).to(dtype)
    with torch.no_grad():
        out = theirs(h.flatten(-2))  # Qwen4-Exp keeps the streams flat, (B, T, n * d)
        x, post = ours.collapse(h)
    tol = TOL[dtype]
    if head:
        assert post is None
        torch.testing.assert_close(x, out, rtol=tol, atol=tol)
        return
    mixed, hyper_input, injection = out
    torch.testing.assert_close(x, mixed, rtol=tol, atol=tol)
    torch.testing.assert_close(post, injection, rtol=tol, atol=tol)
    y = torch.randn(3, 5, D).to(dtype)
    expected = hyper_input + (y.unsqueeze(-2) * injection.unsqueeze(-1)).flatten(-2)
    torch.testing.assert_close(ours.expand(y, h, post).flatten(-2), expected, rtol=tol, atol=tol)


def test_defaults_and_init_are_qwen4_exps():
    """hc_count 4, hc_lowrank 320, rms_norm_eps 1e-6, (1 + w) norms with w = 0, and
    N(0, initializer_range = 0.02) projections, as Qwen4ExpPreTrainedModel._init_weights."""
    config = hf_config.Qwen4ExpTextConfig()
    torch.manual_seed(0)
    conn = GatedStreams(64)
    assert conn.n_streams == config.hc_count == 4
    assert conn.gate_down.out_features == config.hc_lowrank == 320
    assert all(isinstance(norm, OnePlusRMSNorm) for norm in conn.norms)
    assert {norm.eps for norm in conn.norms} == {config.rms_norm_eps}
    assert all(torch.equal(norm.weight, torch.zeros(64)) for norm in conn.norms)
    for linear in (conn.gate_down, conn.gate_up, conn.inject):
        assert abs(linear.weight.std().item() - config.initializer_range) < 0.002
    assert GatedStreams(64, head=True).inject is None  # the mixer writes nothing back
    stack = Stack(2, D, H, FF, residual="gated_streams")
    assert stack.n_streams == 4 and stack.collapse == "mixer" and stack.norm_f is None
    assert all(r.norm_in is None for layer in stack.layers for r in (layer.attn, layer.mlp))


def test_streams_never_mix():
    """H_res = I: with F = 0 every stream is left as it came, and a change in one stream
    reaches the others only through F's input, never through the connection itself."""
    torch.manual_seed(0)
    conn = GatedStreams(D, N, rank=RANK)
    randomize(conn, seed=5)
    h = torch.randn(2, 3, N, D)
    assert torch.equal(conn(h, torch.zeros_like), h)
    h2 = h.clone()
    h2[:, :, 1] += 1.0
    changed = (conn(h2, torch.zeros_like) != conn(h, torch.zeros_like)).any(dim=-1)
    assert changed[..., 1].all() and not changed[..., [0, 2, 3]].any()


def test_the_mixer_replaces_the_final_norm_and_other_collapses_keep_it():
    mean = Stack(2, D, H, FF, residual="gated_streams", collapse="mean", norm="rmsnorm")
    assert mean.head is None and isinstance(mean.norm_f, nn.RMSNorm)
    forced = Stack(2, D, H, FF, residual="gated_streams", final_norm=True)
    assert forced.head is not None and forced.norm_f is not None  # asked for: kept
    torch.manual_seed(0)
    x = torch.randn(2, 5, D)
    for stack in (mean, forced):
        assert stack(x).shape == x.shape


def test_the_new_values_are_in_the_tables():
    assert "gated_streams" in RESIDUALS and "gated_streams" in STREAM_RESIDUALS
    assert "mixer" in COLLAPSES


BAD = {
    "sandwich": (
        lambda: Stack(2, D, H, FF, residual="gated_streams", norm_position="sandwich"),
        ValueError,
        "residual='gated_streams' needs norm_position in ('pre',), got 'sandwich': its "
        "connections normalize F's input, and F keeps no norm (Qwen4-Exp)",
    ),
    "post": (
        lambda: Stack(2, D, H, FF, residual="gated_streams", norm_position="post"),
        ValueError,
        "residual='gated_streams' needs norm_position in ('pre', 'sandwich', 'output', 'lns'), "
        "got 'post': it sees only each sublayer's branch, so the norms must sit in the branch",
    ),
    "learned head": (
        lambda: Stack(2, D, H, FF, residual="gated_streams", collapse="head"),
        ValueError,
        "residual='gated_streams' needs collapse in (None, 'mixer', 'mean', 'sum'), got "
        "'head': its learned collapse is the mixer",
    ),
    "mixer for mHC": (
        lambda: Stack(2, D, H, FF, residual="mhc", collapse="mixer"),
        ValueError,
        "collapse='mixer' needs residual in ('gated_streams',), got 'mhc': only GatedStreams "
        "make one",
    ),
    "mixer for one stream": (
        lambda: Stack(2, D, H, FF, collapse="mixer"),
        ValueError,
        "collapse='mixer' needs residual in ('hc', 'mhc', 'ihc', 'gated_streams'), got 'add': "
        "only n streams are collapsed at the end",
    ),
    "gate_rank elsewhere": (
        lambda: Stack(2, D, H, FF, residual="ihc", gate_rank=8),
        ValueError,
        "gate_rank=8 needs residual in ('gated_streams',), got 'ihc': only its gates are "
        "low-rank maps",
    ),
    "gate_rank zero": (
        lambda: Stack(2, D, H, FF, residual="gated_streams", gate_rank=0),
        ValueError,
        "rank must be a positive int, got 0",
    ),
    "rank float": (
        lambda: GatedStreams(D, rank=2.5), TypeError,
        "rank must be a positive int, got 2.5 (float)",
    ),
    "n_streams zero": (
        lambda: GatedStreams(D, 0), ValueError, "n_streams must be a positive int, got 0",
    ),
    "head not a bool": (
        lambda: GatedStreams(D, head="yes"), TypeError, "head must be True or False, got 'yes'",
    ),
    "unknown norm": (
        lambda: GatedStreams(D, norm="batchnorm"),
        ValueError,
        "norm must be one of ('layernorm', 'rmsnorm', 'dyt', 'derf', 'rmsnorm_1p', "
        "'rmsnorm_1p_input', 'rmsnorm_noweight'), got 'batchnorm'",
    ),
    "negative eps": (
        lambda: GatedStreams(D, eps=-1.0), ValueError,
        "eps must be None or a finite number > 0, got -1.0",
    ),
    "mixer called as a connection": (
        lambda: GatedStreams(D, head=True)(torch.randn(1, 2, 4, D), nn.Identity()),
        ValueError,
        "the mixer (head=True) ends the stack: call collapse(h), not forward",
    ),
    "streams of the wrong shape": (
        lambda: GatedStreams(D, 4).collapse(torch.randn(2, 5, 3, D)),
        ValueError,
        "expected input of shape (batch, seq_len, 4, 16), got (2, 5, 3, 16)",
    ),
    "one stream, not expanded": (
        lambda: Stack(1, D, H, FF, residual="gated_streams")(torch.randn(2, 5, 8)),
        ValueError,
        "expected input of shape (batch, seq_len, 16), got (2, 5, 8)",
    ),
    "sublayer of the wrong width": (
        lambda: GatedStreams(D, 4)(torch.randn(2, 5, 4, D), lambda x: x[..., :8]),
        ValueError,
        "expected input of shape (batch, seq_len, 16), got (2, 5, 8)",
    ),
    "integer streams": (
        lambda: GatedStreams(D, 4).collapse(torch.zeros(2, 5, 4, D, dtype=torch.long)),
        TypeError,
        "expected a floating-point tensor, got dtype torch.int64",
    ),
}  # fmt: skip


@pytest.mark.parametrize("build, error, message", BAD.values(), ids=BAD)
def test_bad_arguments_are_named(build, error, message):
    with pytest.raises(error) as err:
        build()
    assert str(err.value) == message
