"""snippets/resnorm.py against PyTorch's Transformer layers and against the formulas."""

from __future__ import annotations

import functools
import importlib.util
import itertools
import math
import re
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
import transformers
from torch import nn
from transformers.models.cohere import modeling_cohere as hf_cohere
from transformers.models.deepseek_v4 import modeling_deepseek_v4 as hf_v4
from transformers.models.gemma2 import modeling_gemma2 as hf_gemma2
from transformers.models.gemma3 import modeling_gemma3 as hf_gemma3
from transformers.models.gemma4 import modeling_gemma4 as hf_gemma4
from transformers.models.glm5_next import configuration_glm5_next as hf_glm5_config
from transformers.models.glm5_next import modeling_glm5_next as hf_glm5
from transformers.models.gpt_neox import modeling_gpt_neox as hf_neox
from transformers.models.hy_v4 import modeling_hy_v4 as hf_hy4
from transformers.models.llama4 import modeling_llama4 as hf_llama4
from transformers.models.minimax import modeling_minimax as hf_minimax
from transformers.models.muse_spark import modeling_muse_spark as hf_muse
from transformers.models.olmo2 import modeling_olmo2 as hf_olmo2
from transformers.models.qwen3 import modeling_qwen3 as hf_qwen3
from transformers.models.qwen3_5 import modeling_qwen3_5 as hf_qwen3_5
from transformers.models.qwen3_next import modeling_qwen3_next as hf_qwen3_next

from snippets.resnorm import (
    ACTIVATIONS,
    BRANCH_POSITIONS,
    BRANCH_RESIDUALS,
    GPT,
    NORM_CHOICES,
    NORMS,
    OUTPUT_GATES,
    PARALLEL,
    POSITIONS,
    QK_NORMS,
    RESIDUALS,
    STACK_POSITIONS,
    Block,
    DepthAttention,
    DepthWeightedAverage,
    Derf,
    DyT,
    FeedForward,
    GPTConfig,
    HyperConnection,
    MultiHeadAttention,
    OnePlusRMSNorm,
    Residual,
    ResidualGate,
    Stack,
    admin_init_,
    check_size,
    deepnorm_alpha_beta,
    deepnorm_init_,
    from_torch_encoder_layer,
    layer_placements,
    make_norm,
    needs_final_norm,
    sinkhorn_knopp,
)
from tests.checks import module_info
from tests.snippets.hf_reference import hf_causal_mask, randomize, rope_identity

D, H, FF = 16, 4, 48


# --- The sublayer connection ------------------------------------------------------


@pytest.mark.parametrize("position", POSITIONS)
@pytest.mark.parametrize("norm", NORMS)
def test_residual_computes_its_formula(position, norm, device):
    torch.manual_seed(0)
    f = nn.Linear(D, D)
    alpha = 1.7 if position in ("deepnorm", "normed_skip") else 1.0
    beta = {"branch_scale": 0.6} if position == "normed_skip" else {}
    norm = None if position == "rezero" else norm  # ReZero has no norm and refuses one
    r = Residual(f, D, norm_position=position, norm=norm, alpha=alpha, **beta).to(device)
    randomize(r)
    if position == "rezero":
        with torch.no_grad():
            r.alpha.fill_(0.3)
    x = torch.randn(2, 3, D, device=device)
    expected = {
        "post": lambda: r.norm_out(x + f(x)),
        "pre": lambda: x + f(r.norm_in(x)),
        "sandwich": lambda: x + r.norm_branch(f(r.norm_in(x))),
        "output": lambda: x + r.norm_branch(f(x)),
        "deepnorm": lambda: r.norm_out(1.7 * x + f(x)),
        "rezero": lambda: x + r.alpha * f(x),
        "normed_skip": lambda: 1.7 * r.norm_in(x) + 0.6 * f(r.norm_in(x)),
    }[position]()
    torch.testing.assert_close(r(x), expected)


def test_each_placement_has_only_the_norms_it_uses():
    counts = {
        p: sum(n is not None for n in _norms(Residual(nn.Identity(), D, p))) for p in POSITIONS
    }
    assert counts == {
        "post": 1, "pre": 1, "sandwich": 2, "output": 1, "deepnorm": 1, "rezero": 0,
        "normed_skip": 1,
    }  # fmt: skip


def _norms(r: Residual):
    return r.norm_in, r.norm_branch, r.norm_out


def test_norm_switch_builds_pytorch_layers():
    assert isinstance(make_norm("layernorm", D), nn.LayerNorm)
    assert make_norm("layernorm", D).eps == 1e-5
    rms = make_norm("rmsnorm", D)
    assert isinstance(rms, nn.RMSNorm) and rms.eps is None  # PyTorch default at run time
    assert isinstance(make_norm("dyt", D), DyT)
    assert isinstance(Residual(nn.Identity(), D, "pre", norm="rmsnorm").norm_in, nn.RMSNorm)


def test_dyt_formula(device):
    dyt = DyT(D).to(device)
    randomize(dyt)
    x = torch.randn(3, D, device=device)
    torch.testing.assert_close(dyt(x), dyt.weight * torch.tanh(dyt.alpha * x) + dyt.bias)
    assert DyT(D).alpha.item() == 0.5


def test_rezero_starts_as_identity(device):
    block = Block(D, H, FF, norm_position="rezero").to(device)
    x = torch.randn(2, 5, D, device=device)
    torch.testing.assert_close(block(x), x)
    assert all(n is None for r in (block.attn, block.mlp) for n in _norms(r))


def test_dropout_acts_on_the_branch_only():
    r = Residual(nn.Identity(), D, "pre", dropout=0.5).train()
    x = torch.randn(4, 8, D)
    branch = r(x) - x  # what dropout let through of F(Norm(x))
    zeros = branch == 0
    assert zeros.any() and not zeros.all()


def test_per_feature_alpha_for_admin(device):
    omega = torch.linspace(1.0, 2.0, D)
    r = Residual(nn.Identity(), D, "deepnorm", alpha=omega).to(device)
    x = torch.randn(2, 3, D, device=device)
    torch.testing.assert_close(r(x), r.norm_out(omega.to(device) * x + x))
    assert isinstance(r.alpha, nn.Parameter)  # trained, as in Admin's code


# --- Equivalence with PyTorch's own layers -----------------------------------------


def assert_close_to_scale(actual, expected, tol=1e-5, msg=""):
    """Max abs error within ``tol`` of the tensor's own scale (gradients here reach ~50)."""
    scale = expected.abs().max().clamp_min(1.0)
    err = (actual - expected).abs().max()
    assert err <= tol * scale, f"{msg}: max error {err:.2e} vs scale {scale:.2e}"


@pytest.mark.parametrize("norm_first", [False, True], ids=["post-ln", "pre-ln"])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
def test_block_equals_torch_encoder_layer(norm_first, activation, device):
    torch.manual_seed(0)
    ref = nn.TransformerEncoderLayer(
        D, H, FF, dropout=0.1, activation=activation, batch_first=True, norm_first=norm_first
    )
    randomize(ref)
    ours = from_torch_encoder_layer(ref)
    ref, ours = ref.to(device).eval(), ours.to(device).eval()
    x = torch.randn(3, 7, D, device=device, requires_grad=True)
    x_ref = x.detach().clone().requires_grad_()
    y, y_ref = ours(x), ref(x_ref)
    torch.testing.assert_close(y, y_ref, atol=1e-5, rtol=1e-5)
    g = torch.randn_like(y)
    y.backward(g)
    y_ref.backward(g)
    torch.testing.assert_close(x.grad, x_ref.grad, atol=1e-5, rtol=1e-5)
    # the same parameters get the same gradients
    pairs = {
        "attn.sublayer.qkv.weight": ref.self_attn.in_proj_weight,
        "attn.sublayer.proj.weight": ref.self_attn.out_proj.weight,
        "mlp.sublayer.fc.weight": ref.linear1.weight,
        "mlp.sublayer.proj.weight": ref.linear2.weight,
        f"attn.{'norm_in' if norm_first else 'norm_out'}.weight": ref.norm1.weight,
        f"mlp.{'norm_in' if norm_first else 'norm_out'}.weight": ref.norm2.weight,
    }
    params = dict(ours.named_parameters())
    for name, p_ref in pairs.items():
        assert_close_to_scale(params[name].grad, p_ref.grad, msg=name)


def _stack_from_torch(encoder: nn.TransformerEncoder, norm_position: str) -> Stack:
    layer0 = encoder.layers[0]
    stack = Stack(
        len(encoder.layers), D, H, FF, norm_position=norm_position, activation="relu",
        final_norm=encoder.norm is not None,
    )  # fmt: skip
    stack.layers = nn.ModuleList(from_torch_encoder_layer(layer) for layer in encoder.layers)
    if encoder.norm is not None:
        stack.norm_f.load_state_dict(encoder.norm.state_dict())
    assert layer0.norm_first == (norm_position == "pre")
    return stack


@pytest.mark.parametrize("norm_first", [False, True], ids=["post-ln", "pre-ln"])
def test_stack_equals_torch_encoder(norm_first, device):
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(D, H, FF, batch_first=True, norm_first=norm_first)
    final = nn.LayerNorm(D) if norm_first else None  # Pre-LN needs it, and must be given it
    ref = nn.TransformerEncoder(layer, num_layers=3, norm=final, enable_nested_tensor=False)
    randomize(ref)
    ours = _stack_from_torch(ref, "pre" if norm_first else "post")
    assert (ours.norm_f is not None) == needs_final_norm("pre" if norm_first else "post")
    ref, ours = ref.to(device).eval(), ours.to(device).eval()
    x = torch.randn(2, 6, D, device=device, requires_grad=True)
    x_ref = x.detach().clone().requires_grad_()
    y, y_ref = ours(x), ref(x_ref)
    torch.testing.assert_close(y, y_ref, atol=1e-5, rtol=1e-5)
    y.sum().backward()
    y_ref.sum().backward()
    torch.testing.assert_close(x.grad, x_ref.grad, atol=1e-5, rtol=1e-5)


def test_torch_encoder_has_no_final_norm_by_default():
    layer = nn.TransformerEncoderLayer(D, H, FF, batch_first=True, norm_first=True)
    encoder = nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)
    assert encoder.norm is None


def test_torch_transformer_post_ln_ends_with_two_norms():
    t = nn.Transformer(D, H, num_encoder_layers=1, num_decoder_layers=1, batch_first=True)
    assert not t.encoder.layers[-1].norm_first
    assert isinstance(t.encoder.layers[-1].norm2, nn.LayerNorm)
    assert isinstance(t.encoder.norm, nn.LayerNorm)  # applied right after norm2


def test_from_torch_refuses_what_it_cannot_copy():
    with pytest.raises(ValueError, match="batch_first=True"):
        from_torch_encoder_layer(nn.TransformerEncoderLayer(D, H, FF))


# --- Attention and causality -------------------------------------------------------


def test_causal_mask_matches_is_causal(device):
    torch.manual_seed(0)
    attn = MultiHeadAttention(D, H, causal=True).to(device)
    x = torch.randn(2, 9, D, device=device)
    B, T, C = x.shape
    q, k, v = (
        t.view(B, T, H, C // H).transpose(1, 2) for t in attn.qkv(x).split(C, dim=2)
    )  # fmt: skip
    y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    expected = attn.proj(y.transpose(1, 2).reshape(B, T, C))
    torch.testing.assert_close(attn(x), expected, atol=1e-5, rtol=1e-5)


def test_attention_matches_torch_multihead_attention(device):
    torch.manual_seed(0)
    ours = MultiHeadAttention(D, H, causal=True).to(device)
    ref = nn.MultiheadAttention(D, H, batch_first=True).to(device)
    with torch.no_grad():
        ref.in_proj_weight.copy_(ours.qkv.weight)
        ref.in_proj_bias.copy_(ours.qkv.bias)
        ref.out_proj.load_state_dict(ours.proj.state_dict())
    x = torch.randn(2, 6, D, device=device)
    mask = nn.Transformer.generate_square_subsequent_mask(6, device=device)
    expected, _ = ref(x, x, x, attn_mask=mask, need_weights=False)
    torch.testing.assert_close(ours(x), expected, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("norm", ["layernorm", "rmsnorm"])
def test_decoder_block_is_causal(norm, device):
    torch.manual_seed(0)
    block = Block(D, H, FF, causal=True, norm=norm).to(device).eval()
    x = torch.randn(1, 8, D, device=device)
    changed = x.clone()
    changed[:, 5:] = torch.randn(1, 3, D, device=device)  # rewrite the future
    torch.testing.assert_close(block(changed)[:, :5], block(x)[:, :5])
    assert not torch.allclose(block(changed)[:, 5:], block(x)[:, 5:])


def test_encoder_layer_is_not_causal(device):
    block = Block(D, H, FF, causal=False).to(device).eval()
    x = torch.randn(1, 8, D, device=device)
    changed = x.clone()
    changed[:, -1] = torch.randn(D, device=device)  # (a constant shift would vanish in the norm)
    assert not torch.allclose(block(changed)[:, 0], block(x)[:, 0])


def test_gpt_is_causal(device):
    torch.manual_seed(0)
    model = GPT(GPTConfig()).to(device).eval()
    idx = torch.randint(0, 64, (1, 12), device=device)
    later = idx.clone()
    later[0, 7:] = (later[0, 7:] + 1) % 64
    torch.testing.assert_close(model(later)[0][:, :7], model(idx)[0][:, :7])


# --- Stacks, placements, DeepNorm --------------------------------------------------


def test_deepnorm_constants_follow_the_table():
    for n in (6, 18, 100):
        alpha, beta = deepnorm_alpha_beta(n)
        assert math.isclose(alpha, (2 * n) ** 0.25) and math.isclose(beta, (8 * n) ** -0.25)
    stack = Stack(4, D, H, FF, norm_position="deepnorm")
    assert all(layer.attn.alpha == deepnorm_alpha_beta(4)[0] for layer in stack.layers)
    assert stack.norm_f is None


def test_placements_that_vary_with_depth():
    assert [p for p, _ in layer_placements("mixln", 8)] == ["post"] * 2 + ["pre"] * 6
    scales = [s for _, s in layer_placements("lns", 4)]
    assert scales == pytest.approx([1, 1 / math.sqrt(2), 1 / math.sqrt(3), 1 / 2])
    with pytest.raises(ValueError, match="norm_position must be one of"):
        layer_placements("middle", 3)


def test_admin_profiling(device):
    torch.manual_seed(0)
    stack = Stack(3, D, H, FF, norm_position="post").to(device).eval()
    x = torch.randn(4, 5, D, device=device)
    omegas = admin_init_(stack, x)
    assert len(omegas) == 6 and omegas[0] == 1.0
    assert omegas[-1] > omegas[2] > omegas[1]  # grows with depth
    # the recursion: omega_{i+1}^2 = Var[omega_i x_i] + Var[F_i(x_i)]
    conn = stack.layers[0].attn
    with torch.no_grad():
        expected = math.sqrt(x.var().item() + conn.sublayer(x).var().item())
    assert omegas[1] == pytest.approx(expected, rel=1e-5)
    assert isinstance(conn.alpha, nn.Parameter) and conn.alpha.shape == (D,)
    y = stack(x)
    assert torch.isfinite(y).all()
    with pytest.raises(ValueError, match="Admin needs a Post-LN stack, got 'pre'"):
        admin_init_(Stack(1, D, H, FF, norm_position="pre"), x)


def test_lns_scales_the_normalized_input(device):
    r = Residual(nn.Identity(), D, "pre", pre_scale=0.5).to(device)
    x = torch.randn(2, 3, D, device=device)
    torch.testing.assert_close(r(x), x + 0.5 * r.norm_in(x))


@pytest.mark.parametrize(
    "position", ["post", "pre", "sandwich", "mixln", "lns", "deepnorm", "normed_skip"]
)
def test_every_stack_placement_runs(position, device):
    stack = Stack(4, D, H, FF, norm_position=position, causal=True).to(device)
    x = torch.randn(2, 5, D, device=device)
    y = stack(x)
    assert y.shape == x.shape and torch.isfinite(y).all()


# --- GPT -----------------------------------------------------------------------------


def test_gpt_parameter_count_matches_the_formula():
    c = GPTConfig(vocab_size=50, block_size=16, n_layer=3, n_head=2, n_embd=24)
    C = c.n_embd
    per_layer = (
        (3 * C * C + 3 * C) + (C * C + C) + (4 * C * C + 4 * C) + (4 * C * C + C) + 2 * 2 * C
    )
    expected = c.vocab_size * C + c.block_size * C + c.n_layer * per_layer + 2 * C  # + final LN
    assert GPT(c).num_parameters() == expected


@pytest.mark.parametrize("norm_position", ["pre", "post"])
@pytest.mark.parametrize("norm", ["layernorm", "rmsnorm"])
def test_gpt_one_training_step(norm_position, norm):
    torch.manual_seed(0)
    model = GPT(GPTConfig(norm_position=norm_position, norm=norm, dropout=0.1))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    idx = torch.randint(0, 64, (4, 16))
    logits, loss = model(idx[:, :-1], idx[:, 1:])
    assert logits.shape == (4, 15, 64)
    assert abs(loss.item() - math.log(64)) < 0.5  # near uniform at init
    before = model.wpe.weight.detach().clone()
    opt.zero_grad()
    loss.backward()
    assert all(p.grad is not None for p in model.parameters())
    opt.step()
    assert not torch.equal(before, model.wpe.weight)


def test_gpt_final_norm_follows_the_placement():
    assert GPT(GPTConfig(norm_position="pre")).stack.norm_f is not None
    assert GPT(GPTConfig(norm_position="post")).stack.norm_f is None
    assert isinstance(GPT(GPTConfig(norm="rmsnorm")).stack.norm_f, nn.RMSNorm)


# --- Bad input ------------------------------------------------------------------------


def test_bad_input_is_named():
    with pytest.raises(
        ValueError, match=r"expected input of shape \(batch, seq_len, 16\), got \(2, 15\)"
    ):
        Residual(nn.Identity(), 16)(torch.randn(2, 15))
    with pytest.raises(ValueError, match=r"got \(2, 3, 8\)"):
        Block(D, H, FF)(torch.randn(2, 3, 8))
    model = GPT(GPTConfig())
    with pytest.raises(
        ValueError, match=r"token ids \(torch.long\), got shape \(2, 4\) and dtype torch.float32"
    ):
        model(torch.zeros(2, 4))
    with pytest.raises(ValueError, match="sequence length 40 exceeds block_size 32"):
        model(torch.zeros(1, 40, dtype=torch.long))


def test_bad_configuration_is_named():
    with pytest.raises(ValueError, match=r"norm_position must be one of .* got 'middle'"):
        Residual(nn.Identity(), D, "middle")
    with pytest.raises(ValueError, match=r"norm must be one of .* got 'batchnorm'"):
        Residual(nn.Identity(), D, "pre", norm="batchnorm")
    with pytest.raises(ValueError, match=r"d_model \(10\) must be divisible by n_heads \(4\)"):
        MultiHeadAttention(10, 4)
    with pytest.raises(
        ValueError, match=r"activation must be one of \('relu', 'gelu', 'gelu_tanh'\), got 'tanh'"
    ):
        FeedForward(D, FF, activation="tanh")


# Sizes: each error names the argument (a 0 used to raise ZeroDivisionError, a -4 or a 2.0
# was accepted and failed later, a negative n_layers built an empty stack).
BAD_SIZES = [
    (lambda: MultiHeadAttention(32, 0), ValueError, "n_heads must be a positive int, got 0"),
    (lambda: MultiHeadAttention(32, -4), ValueError, "n_heads must be a positive int, got -4"),
    (lambda: MultiHeadAttention(32, 2.0), TypeError, r"n_heads must be a positive int, got 2.0"),
    (lambda: MultiHeadAttention(0, 4), ValueError, "d_model must be a positive int, got 0"),
    (lambda: MultiHeadAttention(True, 1), TypeError, "d_model must be a positive int, got True"),
    (lambda: FeedForward(D, 0), ValueError, "d_ff must be a positive int, got 0"),
    (lambda: FeedForward(D, -1), ValueError, "d_ff must be a positive int, got -1"),
    (lambda: Residual(nn.Identity(), 0), ValueError, "d_model must be a positive int, got 0"),
    (lambda: DyT(0), ValueError, "normalized_shape must be a positive int, got 0"),
    (lambda: make_norm("rmsnorm", "16"), TypeError, r"d_model must be a positive int, got '16'"),
    (lambda: Block(D, 0, FF), ValueError, "n_heads must be a positive int, got 0"),
    (
        lambda: Stack(0, D, H, FF, norm_position="deepnorm"),
        ValueError,
        "n_layers must be a positive int, got 0",
    ),
    (lambda: Stack(-2, D, H, FF), ValueError, "n_layers must be a positive int, got -2"),
    (lambda: Stack(2.5, D, H, FF), TypeError, r"n_layers must be a positive int, got 2.5"),
    (lambda: layer_placements("lns", 0), ValueError, "n_layers must be a positive int, got 0"),
    (lambda: deepnorm_alpha_beta(0), ValueError, "n_layers must be a positive int, got 0"),
    (lambda: deepnorm_alpha_beta(-1), ValueError, "n_layers must be a positive int, got -1"),
    (lambda: GPT(GPTConfig(n_head=0)), ValueError, "GPTConfig.n_head must be a positive int"),
    (lambda: GPT(GPTConfig(n_layer=0)), ValueError, "GPTConfig.n_layer must be a positive int"),
    (
        lambda: GPT(GPTConfig(n_layer=0, norm_position="deepnorm")),
        ValueError,
        "GPTConfig.n_layer must be a positive int",
    ),
    (lambda: GPT(GPTConfig(vocab_size=0)), ValueError, "GPTConfig.vocab_size must be a positive"),
    (lambda: GPT(GPTConfig(block_size=0)), ValueError, "GPTConfig.block_size must be a positive"),
    (lambda: GPT(GPTConfig(n_embd=32.0)), TypeError, "GPTConfig.n_embd must be a positive int"),
]


@pytest.mark.parametrize(("build", "error", "message"), BAD_SIZES, ids=[m for *_, m in BAD_SIZES])
def test_bad_sizes_are_named(build, error, message):
    with pytest.raises(error, match=message):
        build()


def test_check_size_passes_good_sizes_through():
    assert check_size("n_heads", 4) == 4


def test_arguments_a_placement_would_ignore_are_refused():
    with pytest.raises(
        ValueError,
        match=r"alpha scales the skip in 'post', 'deepnorm' and 'normed_skip' only, got 'pre'",
    ):
        Residual(nn.Identity(), D, "pre", alpha=1.7)
    with pytest.raises(ValueError, match=r"alpha scales the skip in .* only, got 'rezero'"):
        Residual(nn.Identity(), D, "rezero", alpha=torch.ones(D))
    with pytest.raises(TypeError, match="alpha must be a float or a tensor, got str"):
        Residual(nn.Identity(), D, "deepnorm", alpha="2")
    with pytest.raises(ValueError, match=r"pre_scale scales Norm.* only, got 'post'"):
        Residual(nn.Identity(), D, "post", pre_scale=0.5)
    with pytest.raises(TypeError, match="pre_scale must be a float, got str"):
        Residual(nn.Identity(), D, "pre", pre_scale="0.5")
    with pytest.raises(ValueError, match=r"norm must be one of .* got 'batchnorm'"):
        Residual(nn.Identity(), D, "pre", norm="batchnorm")
    # ReZero builds no norm: a norm, eps or bias given to it would reach nothing
    for name, value in (("norm", "rmsnorm"), ("norm", "batchnorm"), ("bias", False)):
        with pytest.raises(ValueError, match=f"'rezero' has no norm, got {name}={value!r}"):
            Residual(nn.Identity(), D, "rezero", **{name: value})
    with pytest.raises(ValueError, match="'rezero' has no norm, got norm='rmsnorm'"):
        Block(D, H, FF, norm_position="rezero", norm="rmsnorm")
    with pytest.raises(ValueError, match="'rezero' has no norm, got norm='rmsnorm'"):
        Stack(2, D, H, FF, norm_position="rezero", norm="rmsnorm")
    # with a final norm, the stack's norm is that norm's
    stack = Stack(2, D, H, FF, norm_position="rezero", norm="rmsnorm", final_norm=True)
    assert isinstance(stack.norm_f, nn.RMSNorm)
    assert Block(D, H, FF, norm_position="rezero", bias=False).attn.sublayer.qkv.bias is None
    with pytest.raises(ValueError, match="DyT has no eps, got eps=1e-06"):
        Block(D, H, FF, norm="dyt", eps=1e-6)
    with pytest.raises(ValueError, match=r"norm_position must be one of .* got 'bogus'"):
        needs_final_norm("bogus")
    for position in STACK_POSITIONS:
        needs_final_norm(position)  # every known placement has an answer
    for ratio in (-0.1, 1.5):
        with pytest.raises(ValueError, match=f"mix_ratio is a fraction .* got {ratio}"):
            layer_placements("mixln", 8, mix_ratio=ratio)
    with pytest.raises(TypeError, match="deepnorm_init_ expects a Block, got Linear"):
        deepnorm_init_(nn.Linear(D, D), 0.5)


def test_wrong_input_types_are_named():
    block = Block(D, H, FF)
    with pytest.raises(TypeError, match=r"expected a floating-point tensor, got dtype torch.int64"):
        block(torch.ones(2, 3, D, dtype=torch.long))
    with pytest.raises(TypeError, match="expected a floating-point tensor, got list"):
        block([[0.0] * D])
    model = GPT(GPTConfig())
    with pytest.raises(TypeError, match="idx must be a tensor of token ids, got list"):
        model([[1, 2, 3]])


def test_token_ids_out_of_range_are_named():
    model = GPT(GPTConfig(vocab_size=64))
    for bad, got in ((64, "from 0 to 64"), (-1, "from -1 to 5")):
        idx = torch.tensor([[0, 5, bad]])
        with pytest.raises(ValueError, match=rf"token ids must be in \[0, 64\), got ids {got}"):
            model(idx)


def test_targets_must_pair_with_idx():
    model = GPT(GPTConfig())
    idx = torch.zeros(2, 3, dtype=torch.long)
    # (3, 2) has as many tokens as (2, 3): it used to give a loss over wrongly paired tokens
    with pytest.raises(
        ValueError, match=r"targets must have the shape of idx \(2, 3\), got \(3, 2\)"
    ):
        model(idx, torch.zeros(3, 2, dtype=torch.long))


def test_empty_sequences_give_what_pytorch_gives():
    torch.manual_seed(0)
    ref = nn.TransformerEncoderLayer(D, H, FF, dropout=0.0, batch_first=True).eval()
    ours = from_torch_encoder_layer(ref).eval()
    for shape in ((2, 0, D), (0, 3, D)):
        x = torch.randn(shape)
        assert ours(x).shape == ref(x).shape == shape
    for causal in (False, True):
        assert Block(D, H, FF, causal=causal)(torch.randn(2, 0, D)).shape == (2, 0, D)
    model = GPT(GPTConfig())
    empty = torch.zeros(2, 0, dtype=torch.long)
    logits, loss = model(empty, empty)
    assert logits.shape == (2, 0, 64)
    expected = F.cross_entropy(torch.zeros(0, 64), torch.zeros(0, dtype=torch.long))
    assert expected.isnan() and loss.isnan()  # PyTorch's mean over no tokens


@pytest.mark.parametrize("norm_first", [False, True], ids=["post-ln", "pre-ln"])
def test_extreme_values_give_what_pytorch_gives(norm_first):
    torch.manual_seed(0)
    for dtype, scales in ((torch.float32, (1e-30, 1e3, 1e15, 1e30)), (torch.float64, (1e30,))):
        ref = nn.TransformerEncoderLayer(
            D, H, FF, dropout=0.0, batch_first=True, norm_first=norm_first, dtype=dtype
        ).eval()
        ours = from_torch_encoder_layer(ref).eval()
        for scale in scales:
            x = torch.randn(2, 5, D, dtype=dtype) * scale
            y, y_ref = ours(x), ref(x)
            # 1e30 overflows float32 (its square, in the variance, is inf): NaN in both
            torch.testing.assert_close(y, y_ref, atol=1e-5, rtol=1e-5, equal_nan=True)
            assert torch.isfinite(y).all() == (dtype == torch.float64 or scale < 1e30)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_precision_matches_pytorch_in_the_same_dtype(dtype, device):
    torch.manual_seed(0)
    ref = nn.TransformerEncoderLayer(D, H, FF, dropout=0.0, batch_first=True, dtype=dtype)
    ref = ref.to(device).eval()
    ours = from_torch_encoder_layer(ref).eval()
    assert {p.dtype for p in ours.parameters()} == {dtype}
    x = torch.randn(2, 5, D, device=device, dtype=dtype)
    with torch.no_grad():
        y = ours(x)
        exact = from_torch_encoder_layer(ref.double())(x.double())  # the same weights in float64
    tol = {torch.float16: 1e-2, torch.bfloat16: 5e-2}[dtype]
    torch.testing.assert_close(y.double(), exact, atol=tol, rtol=tol)
    model = GPT(GPTConfig()).to(device=device, dtype=dtype)
    idx = torch.randint(0, 64, (2, 8), device=device)
    logits, loss = model(idx, idx)
    assert logits.dtype == dtype and torch.isfinite(loss)


# --- from_torch_encoder_layer: bias, dtype, device, activations ----------------------------


@pytest.mark.parametrize("norm_first", [False, True], ids=["post-ln", "pre-ln"])
def test_from_torch_copies_a_layer_without_biases(norm_first, device):
    torch.manual_seed(0)
    ref = nn.TransformerEncoderLayer(
        D, H, FF, dropout=0.0, batch_first=True, norm_first=norm_first, bias=False
    )
    randomize(ref)
    ref = ref.to(device).eval()
    ours = from_torch_encoder_layer(ref).eval()
    names = [n for n, _ in ours.named_parameters()]
    assert not [n for n in names if n.endswith("bias")], names
    assert sum(p.numel() for p in ours.parameters()) == sum(p.numel() for p in ref.parameters())
    x = torch.randn(3, 7, D, device=device)
    torch.testing.assert_close(ours(x), ref(x), atol=1e-5, rtol=1e-5)


def test_bias_false_drops_the_shift_of_every_norm():
    for norm in NORMS:
        stack = Stack(2, D, H, FF, norm_position="sandwich", norm=norm, bias=False)
        assert not [n for n, _ in stack.named_parameters() if n.endswith("bias")]
    assert DyT(D, bias=False).bias is None
    dyt = DyT(D, bias=False)
    x = torch.randn(2, D)
    torch.testing.assert_close(dyt(x), torch.tanh(0.5 * x))
    assert GPT(GPTConfig(bias=False)).stack.norm_f.bias is None  # as nanoGPT's bias=False


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_from_torch_keeps_the_dtype_and_device(dtype, device):
    torch.manual_seed(0)
    ref = nn.TransformerEncoderLayer(D, H, FF, dropout=0.0, batch_first=True, dtype=dtype)
    randomize(ref)
    ref = ref.to(device).eval()
    ours = from_torch_encoder_layer(ref).eval()
    assert {(p.dtype, p.device.type) for p in ours.parameters()} == {(dtype, device.type)}
    for name, p in ours.state_dict().items():  # copied exactly, not rounded on the way
        assert p.dtype == dtype, name
    torch.testing.assert_close(
        ours.attn.sublayer.qkv.weight, ref.self_attn.in_proj_weight, atol=0, rtol=0
    )
    x = torch.randn(2, 6, D, device=device, dtype=dtype)
    tol = 1e-12 if dtype == torch.float64 else 1e-5
    torch.testing.assert_close(ours(x), ref(x), atol=tol, rtol=tol)


@pytest.mark.parametrize(
    ("activation", "name"),
    [
        ("relu", "relu"),
        ("gelu", "gelu"),
        (F.relu, "relu"),
        (F.gelu, "gelu"),
        (nn.ReLU(), "relu"),
        (nn.GELU(), "gelu"),
        (nn.GELU(approximate="tanh"), "gelu_tanh"),
    ],
    ids=["str-relu", "str-gelu", "F.relu", "F.gelu", "nn.ReLU", "nn.GELU", "nn.GELU-tanh"],
)
def test_from_torch_reads_every_activation_form(activation, name):
    torch.manual_seed(0)
    ref = nn.TransformerEncoderLayer(
        D, H, FF, dropout=0.0, activation=activation, batch_first=True, dtype=torch.float64
    ).eval()
    randomize(ref)
    ours = from_torch_encoder_layer(ref).eval()
    assert name in ACTIVATIONS
    expected_act = {"relu": nn.ReLU(), "gelu": nn.GELU(), "gelu_tanh": nn.GELU(approximate="tanh")}
    assert repr(ours.mlp.sublayer.act) == repr(expected_act[name])
    x = torch.randn(2, 5, D, dtype=torch.float64)
    torch.testing.assert_close(ours(x), ref(x), atol=1e-12, rtol=1e-12)


def test_from_torch_refuses_what_it_would_copy_wrongly():
    with pytest.raises(ValueError, match=r"unsupported activation .*silu"):
        from_torch_encoder_layer(
            nn.TransformerEncoderLayer(D, H, FF, activation=F.silu, batch_first=True)
        )
    with pytest.raises(TypeError, match=r"expected an nn.TransformerEncoderLayer, got Linear"):
        from_torch_encoder_layer(nn.Linear(D, D))
    mixed = nn.TransformerEncoderLayer(D, H, FF, batch_first=True)
    mixed.linear1.double()
    with pytest.raises(ValueError, match=r"one dtype, got \['torch.float32', 'torch.float64'\]"):
        from_torch_encoder_layer(mixed)
    odd_eps = nn.TransformerEncoderLayer(D, H, FF, batch_first=True)
    odd_eps.norm2.eps = 1e-6
    with pytest.raises(ValueError, match="norm1 and norm2 with one eps, got 1e-05, 1e-06"):
        from_torch_encoder_layer(odd_eps)


# --- Admin: refuse before changing anything ------------------------------------------------


def test_admin_refuses_bad_profiling_input():
    stack = Stack(2, D, H, FF, norm_position="post")
    with pytest.raises(ValueError, match=r"non-empty x to measure variances, got \(0, 3, 16\)"):
        admin_init_(stack, torch.randn(0, 3, D))  # the omegas would be NaN
    with pytest.raises(ValueError, match=r"shape \(batch, seq_len, 16\), got \(2, 3, 8\)"):
        admin_init_(stack, torch.randn(2, 3, 8))
    mixed = Stack(4, D, H, FF, norm_position="mixln")  # Post-LN first, then Pre-LN
    with pytest.raises(ValueError, match="Admin needs a Post-LN stack, got 'pre'"):
        admin_init_(mixed, torch.randn(2, 3, D))
    assert all(isinstance(layer.attn.alpha, float) for layer in mixed.layers)  # untouched


def test_admin_omegas_follow_the_dtype_of_x():
    stack = Stack(2, D, H, FF, norm_position="post").double()
    admin_init_(stack, torch.randn(2, 3, D, dtype=torch.float64))
    assert stack.layers[1].mlp.alpha.dtype == torch.float64


# --- PyTorch's own samples for nn.TransformerEncoderLayer ------------------------------------


def _torch_encoder_layer_samples():
    """The ModuleInfo samples of PyTorch's module tests (constructor and forward arguments)."""
    info = module_info(nn.TransformerEncoderLayer)
    # training=True returns the training samples too (the fast-path ones): a superset
    return info.module_inputs_func(
        info, device="cpu", dtype=torch.float64, requires_grad=False, training=True
    )


def test_from_torch_matches_pytorchs_own_module_samples():
    compared, skipped = [], []
    for sample in _torch_encoder_layer_samples():
        args, kwargs = sample.constructor_input.args, sample.constructor_input.kwargs
        (x,), forward_kwargs = sample.forward_input.args, sample.forward_input.kwargs
        if any(forward_kwargs.get(k) is not None for k in ("src_mask", "src_key_padding_mask")):
            # Outside the contract: Block's only mask is causal=True; it takes no padding or
            # attention mask, so these samples have no Block to compare with.
            skipped.append(sample.desc)
            continue
        torch.manual_seed(0)
        ref = nn.TransformerEncoderLayer(*args, **kwargs).to(torch.float64).eval()
        randomize(ref)
        if ref.self_attn.batch_first:
            ours = from_torch_encoder_layer(ref)
        else:
            # Block is batch-first: it refuses a sequence-first layer (it would read (T, B, C)
            # as (B, T, C)), so copy the weights from a batch-first twin and transpose.
            with pytest.raises(ValueError, match="batch_first=True"):
                from_torch_encoder_layer(ref)
            twin = nn.TransformerEncoderLayer(*args, **{**kwargs, "batch_first": True})
            twin.load_state_dict(ref.state_dict())
            ours = from_torch_encoder_layer(twin.to(torch.float64))
        ours.eval()
        if x.dim() == 2:  # an unbatched (T, C) sample: PyTorch takes it, Block wants a batch
            y = ours(x[None])[0]
        elif not ref.self_attn.batch_first:
            y = ours(x.transpose(0, 1)).transpose(0, 1)
        else:
            y = ours(x)
        for grad in (True, False):  # no_grad in eval mode lets PyTorch take its fast path
            with torch.set_grad_enabled(grad):
                expected = ref(x, **forward_kwargs)
            torch.testing.assert_close(y, expected, atol=1e-12, rtol=1e-12, msg=sample.desc)
        compared.append(sample.desc)
    # Every sample without a mask (for the pinned torch): 3 batched ones (relu, gelu, no
    # bias), 8 unbatched ones (Pre-/Post-LN x batch-/seq-first x bias) and 4 fast-path ones.
    assert len(compared) == 15 and len(skipped) == 24, (compared, skipped)  # 24 with a mask
    assert {"relu_activation", "gelu_activation", "no_bias"} <= set(compared)


# --- GPT's initialization per placement ------------------------------------------------------


def test_gpt_lns_keeps_the_plain_init():
    """LayerNorm Scaling drops GPT-2's 1/sqrt(2L) init of the residual output projections:
    Sun et al. 2025 (arXiv 2502.05795 v3) recommend removing it (abstract, footnote 1)."""
    config = dict(n_layer=4, n_embd=64, n_head=2)
    torch.manual_seed(0)
    lns = GPT(GPTConfig(norm_position="lns", **config))
    torch.manual_seed(0)
    pre = GPT(GPTConfig(norm_position="pre", **config))
    scaled = 0.02 / math.sqrt(2 * 4)
    for (name, p_lns), (_, p_pre) in zip(
        lns.named_parameters(), pre.named_parameters(), strict=True
    ):
        if name.endswith("sublayer.proj.weight"):  # 4096 or 16384 draws: std within 5%
            assert p_lns.std().item() == pytest.approx(0.02, rel=0.05), name
            assert p_pre.std().item() == pytest.approx(scaled, rel=0.05), name
        else:  # the same seed draws everything else alike
            torch.testing.assert_close(p_lns, p_pre, atol=0, rtol=0, msg=name)
    assert [layer.attn.pre_scale for layer in lns.stack.layers] == pytest.approx(
        [1 / math.sqrt(i) for i in range(1, 5)]
    )


# --- GPT is GPT-2: a Hugging Face GPT2LMHeadModel, weights copied --------------------------


def _gpt_from_hf_gpt2(hf, activation: str) -> GPT:
    """The handbook's GPT with the weights of a Hugging Face ``GPT2LMHeadModel``.

    Hugging Face's GPT-2 keeps its linear layers as ``Conv1D`` modules, whose weight is
    (in_features, out_features): the transpose of nn.Linear's.
    """
    c = hf.config
    config = GPTConfig(
        vocab_size=c.vocab_size,
        block_size=c.n_positions,
        n_layer=c.n_layer,
        n_head=c.n_head,
        n_embd=c.n_embd,
        activation=activation,
    )
    hf_state = hf.state_dict()
    dtype = hf_state["transformer.wte.weight"].dtype
    model = GPT(config).to(dtype).eval()
    names = {"wte.weight": "transformer.wte.weight", "wpe.weight": "transformer.wpe.weight"}
    names |= {"lm_head.weight": "lm_head.weight"}  # tied to wte in both
    names |= {f"stack.norm_f.{p}": f"transformer.ln_f.{p}" for p in ("weight", "bias")}
    pairs = {
        "attn.norm_in": "ln_1",
        "attn.sublayer.qkv": "attn.c_attn",  # [W_q; W_k; W_v], as in qkv
        "attn.sublayer.proj": "attn.c_proj",
        "mlp.norm_in": "ln_2",
        "mlp.sublayer.fc": "mlp.c_fc",
        "mlp.sublayer.proj": "mlp.c_proj",
    }
    for i in range(c.n_layer):
        for ours, theirs in pairs.items():
            for p in ("weight", "bias"):
                names[f"stack.layers.{i}.{ours}.{p}"] = f"transformer.h.{i}.{theirs}.{p}"
    assert set(names.values()) == set(hf_state), "every Hugging Face weight is copied once"
    conv1d = ("c_attn.weight", "c_proj.weight", "c_fc.weight")
    state = {
        ours: hf_state[theirs].t() if theirs.endswith(conv1d) else hf_state[theirs]
        for ours, theirs in names.items()
    }
    model.load_state_dict(state)  # strict: every parameter of GPT is set
    return model


def test_gpt_with_gelu_tanh_is_hugging_face_gpt2():
    config = transformers.GPT2Config(
        vocab_size=50,
        n_positions=16,
        n_embd=32,
        n_layer=2,
        n_head=4,
        bos_token_id=0,
        eos_token_id=0,
    )
    assert config.activation_function == "gelu_new"  # GPT-2's tanh approximation of GELU
    torch.manual_seed(0)
    hf = transformers.GPT2LMHeadModel(config).double().eval()  # random init, no download
    randomize(hf)  # larger than the N(0, 0.02) init, so the GELU's argument spans its range
    idx = torch.randint(0, 50, (3, 16))
    with torch.no_grad():
        expected = hf(idx).logits
        logits, _ = _gpt_from_hf_gpt2(hf, activation="gelu_tanh")(idx)
        exact_gelu, _ = _gpt_from_hf_gpt2(hf, activation="gelu")(idx)
    torch.testing.assert_close(logits, expected, atol=1e-12, rtol=1e-12)
    # nanoGPT's exact GELU is not GPT-2's: the difference is far above float64 rounding
    assert (exact_gelu - expected).abs().max() > 1e-6


# --- The residual axis: Stack(residual=...) ---------------------------------------------------


def test_residual_add_is_the_stack_of_blocks_bit_for_bit():
    """residual="add" is the stack as it was before the axis existed: the same seed builds the
    same parameters, and the output is that of the blocks applied one after the other, then
    the final norm (dropout on, so the random stream must match too)."""
    for position in STACK_POSITIONS:
        kwargs = dict(norm_position=position, causal=True, dropout=0.1)
        torch.manual_seed(0)
        ours = Stack(3, D, H, FF, residual="add", **kwargs)
        torch.manual_seed(0)
        default = Stack(3, D, H, FF, **kwargs)
        for (name, p), q in zip(
            ours.state_dict().items(), default.state_dict().values(), strict=True
        ):
            assert torch.equal(p, q), (position, name)
        assert not hasattr(ours, "connections")  # "add" builds nothing more
        x = torch.randn(2, 5, D)
        torch.manual_seed(1)
        y = ours(x)
        torch.manual_seed(1)
        expected = x
        for layer in ours.layers:
            expected = layer(expected)
        if ours.norm_f is not None:
            expected = ours.norm_f(expected)
        assert torch.equal(y, expected), position


@pytest.mark.parametrize("residual", RESIDUALS)
def test_every_residual_trains_on_every_device(residual, device):
    torch.manual_seed(0)
    stack = Stack(3, D, H, FF, residual=residual, causal=True, dropout=0.1).to(device)
    x = torch.randn(2, 5, D, device=device, requires_grad=True)
    y = stack(x)
    assert y.shape == x.shape and y.device == x.device and y.dtype == x.dtype
    y.square().mean().backward()
    for name, p in stack.named_parameters():
        assert p.grad is not None and torch.isfinite(p.grad).all(), name
    assert x.grad.abs().sum() > 0
    if residual != "add":  # the axis adds parameters of its own, and they learn
        extra = [p for n, p in stack.named_parameters() if n.startswith(("connections", "head"))]
        assert extra and any(p.grad.abs().sum() > 0 for p in extra)


@pytest.mark.parametrize("residual", ["hc", "mhc", "attnres"])
def test_streams_follow_the_dtype(residual):
    torch.manual_seed(0)
    stack = Stack(2, D, H, FF, residual=residual, norm="rmsnorm").to(torch.bfloat16)
    y = stack(torch.randn(2, 5, D, dtype=torch.bfloat16))
    assert y.dtype == torch.bfloat16 and torch.isfinite(y).all()


@pytest.mark.parametrize("position", BRANCH_POSITIONS)
@pytest.mark.parametrize("residual", ["hc", "mhc", "attnres"])
def test_branch_placements_run_with_every_residual(residual, position):
    stack = Stack(2, D, H, FF, residual=residual, norm_position=position)
    assert stack.norm_f is not None  # the sum of branches is never normalized on the way
    assert torch.isfinite(stack(torch.randn(2, 5, D))).all()


def test_residual_branch_is_residual_without_the_skip():
    r = Residual(nn.Linear(D, D), D, "sandwich")
    randomize(r)
    x = torch.randn(2, 3, D)
    torch.testing.assert_close(r.branch(x), r.norm_branch(r.sublayer(r.norm_in(x))))
    torch.testing.assert_close(r(x), x + r.branch(x))


# --- Sinkhorn-Knopp ----------------------------------------------------------------------------


def test_sinkhorn_error_falls_with_the_iterations():
    """Rows and columns of 1000 random 4x4 matrices (logits N(0, 1), float64): each pass ends
    with the columns, so they sum to 1 to rounding (eps = 0); the rows' error falls with every
    pass. The bounds are those measured with this seed, with a margin: DeepSeek-V4's 20
    passes leave the rows within 1e-4, 40 within 1e-7."""
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(1000, 4, 4, dtype=torch.float64, generator=g)
    row_errors = []
    for k in (1, 2, 3, 5, 10, 20, 40):
        p = sinkhorn_knopp(logits, n_iters=k, eps=0.0)
        assert (p > 0).all()
        assert (p.sum(-2) - 1).abs().max() < 1e-12
        row_errors.append((p.sum(-1) - 1).abs().max().item())
    assert row_errors == sorted(row_errors, reverse=True), row_errors
    assert row_errors[0] > 0.1 and row_errors[-2] < 1e-4 and row_errors[-1] < 1e-7
    # eps = 1e-6 (DeepSeek-V4's) moves the sums by about eps: 1 - eps per column
    p = sinkhorn_knopp(logits, n_iters=40, eps=1e-6)
    assert ((p.sum(-2) - 1).abs().max() < 2e-6) and ((p.sum(-1) - 1).abs().max() < 2e-6)
    # doubly stochastic: the largest singular value is 1 (for rows and columns summing to 1)
    assert torch.linalg.matrix_norm(p, ord=2).max() < 1 + 2e-6


def test_sinkhorn_known_results():
    """A constant matrix gives 1/n everywhere (with eps, the fixed point of x = x / (n x + eps),
    (1 - eps) / n). For 2x2 logits l, scaling rows and columns keeps the cross ratio
    p00 p11 / (p01 p10) = exp(l00 + l11 - l01 - l10); the doubly stochastic [[a, 1 - a],
    [1 - a, a]] with that ratio has a = sigmoid((l00 + l11 - l01 - l10) / 2)."""
    for n in (1, 3, 4):
        torch.testing.assert_close(
            sinkhorn_knopp(torch.full((n, n), 2.5, dtype=torch.float64), 1, 0.0),
            torch.full((n, n), 1 / n, dtype=torch.float64),
        )
        eps = 1e-6
        p = sinkhorn_knopp(torch.zeros(n, n, dtype=torch.float64), 20, eps)
        torch.testing.assert_close(p, torch.full_like(p, (1 - eps) / n), atol=1e-12, rtol=0)
    logits = torch.tensor([[1.0, 0.0], [0.0, 0.0]], dtype=torch.float64)
    # one pass by hand: the row softmax, then the columns
    e = math.e
    soft = [[e / (e + 1), 1 / (e + 1)], [0.5, 0.5]]
    cols = [soft[0][0] + soft[1][0], soft[0][1] + soft[1][1]]
    one = torch.tensor([[soft[i][j] / cols[j] for j in range(2)] for i in range(2)])
    torch.testing.assert_close(sinkhorn_knopp(logits, 1, 0.0), one.double())
    a = 1 / (1 + math.exp(-0.5))
    limit = torch.tensor([[a, 1 - a], [1 - a, a]], dtype=torch.float64)
    torch.testing.assert_close(sinkhorn_knopp(logits, 60, 0.0), limit, atol=1e-12, rtol=0)
    batch = torch.stack([logits, torch.zeros(2, 2, dtype=torch.float64)])  # over the last two dims
    torch.testing.assert_close(sinkhorn_knopp(batch, 60, 0.0)[0], limit, atol=1e-12, rtol=0)


def test_sinkhorn_refuses_bad_input():
    with pytest.raises(ValueError, match=r"square matrices \(\.\.\., n, n\), got shape \(3, 4\)"):
        sinkhorn_knopp(torch.zeros(3, 4))
    with pytest.raises(ValueError, match=r"square matrices .* got shape \(4,\)"):
        sinkhorn_knopp(torch.zeros(4))
    for bad in (float("inf"), float("nan")):
        x = torch.zeros(2, 3, 3)
        x[1, 0, 2] = bad
        with pytest.raises(ValueError, match="expected finite logits, got inf or NaN"):
            sinkhorn_knopp(x)
    with pytest.raises(
        TypeError, match=r"expected a floating-point tensor, got dtype torch\.int64"
    ):
        sinkhorn_knopp(torch.zeros(3, 3, dtype=torch.long))
    with pytest.raises(ValueError, match="n_iters must be a positive int, got 0"):
        sinkhorn_knopp(torch.zeros(3, 3), n_iters=0)
    with pytest.raises(ValueError, match="eps must be >= 0, got -1e-06"):
        sinkhorn_knopp(torch.zeros(3, 3), eps=-1e-6)


# --- mHC against DeepSeek-V4 in Hugging Face transformers ----------------------------------------
# transformers==5.24.0 (pinned in requirements.txt), src/transformers/models/deepseek_v4/
# modeling_deepseek_v4.py (commit 361455895daf94ca66f78cf6792b09af397b4b30 in
# huggingface/transformers): DeepseekV4HyperConnection, DeepseekV4HyperHead,
# DeepseekV4DecoderLayer.forward and the final norm in DeepseekV4Model.forward.


def _v4_config():
    """A small DeepSeek-V4 config, random init, nothing downloaded. The mHC settings keep the
    defaults of configuration_deepseek_v4.py."""
    return transformers.DeepseekV4Config(
        vocab_size=32, hidden_size=D, num_hidden_layers=2, num_attention_heads=2, head_dim=8,
        q_lora_rank=8, o_groups=1, o_lora_rank=8, n_routed_experts=2, num_experts_per_tok=1,
        moe_intermediate_size=8, index_n_heads=2, index_head_dim=8, index_topk=2,
        sliding_window=4, layer_types=["sliding_attention"] * 2, mlp_layer_types=["moe"] * 2,
    )  # fmt: skip


def test_mhc_defaults_are_deepseek_v4s():
    config, ours = _v4_config(), HyperConnection(D, constrained=True)
    assert (config.hc_mult, config.hc_sinkhorn_iters) == (ours.n_streams, ours.sinkhorn_iters)
    assert (config.hc_eps, config.rms_norm_eps) == (ours.eps, ours.norm_eps)
    assert Stack(1, D, H, FF, residual="mhc").n_streams == config.hc_mult


def _copy_mhc(ours: HyperConnection, theirs: nn.Module) -> None:
    names = ("hc_fn", "hc_base", "hc_scale") if ours.head else ("fn", "base", "scale")
    with torch.no_grad():
        for mine, name in zip(("fn", "base", "scale"), names, strict=True):
            getattr(ours, mine).copy_(getattr(theirs, name))


# DeepseekV4HyperConnection casts the streams and its weights to float32 (`.float()`) even
# for float64 input: in float32 both sides do the same arithmetic, in float64 they agree to
# float32's rounding.
HF_TOL = {torch.float32: 1e-6, torch.float64: 1e-6}


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_mhc_equals_deepseek_v4_hyper_connection(dtype):
    """The same weights in both; post, comb and the collapsed sublayer input compared (pre
    reaches the test through the collapse: HF consumes it there)."""
    torch.manual_seed(0)
    theirs = hf_v4.DeepseekV4HyperConnection(_v4_config()).to(dtype)
    randomize(theirs)
    ours = HyperConnection(D, 4, constrained=True).to(dtype)
    _copy_mhc(ours, theirs)
    h = torch.randn(3, 5, 4, D, dtype=dtype)
    post, comb, collapsed = theirs(h)
    x, our_post, our_comb = ours.collapse(h)
    tol = HF_TOL[dtype]
    torch.testing.assert_close(our_post, post.to(our_post.dtype), atol=tol, rtol=tol)
    torch.testing.assert_close(our_comb, comb.to(our_comb.dtype), atol=tol, rtol=tol)
    torch.testing.assert_close(x, collapsed, atol=tol, rtol=tol)
    assert x.shape == (3, 5, D) and our_comb.shape == (3, 5, 4, 4)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_mhc_head_equals_deepseek_v4_hyper_head(dtype):
    torch.manual_seed(0)
    theirs = hf_v4.DeepseekV4HyperHead(_v4_config()).to(dtype)
    randomize(theirs)
    ours = HyperConnection(D, 4, constrained=True, head=True).to(dtype)
    _copy_mhc(ours, theirs)
    h = torch.randn(3, 5, 4, D, dtype=dtype)
    x, post, comb = ours.collapse(h)
    assert post is None and comb is None
    torch.testing.assert_close(x, theirs(h), atol=HF_TOL[dtype], rtol=HF_TOL[dtype])


class _Stub(nn.Module):
    """A deterministic stand-in for a sublayer, one instance on both sides. DeepSeek-V4's
    attention (MLA with compressors and sinks) and its MoE feed-forward are outside the
    handbook; what the test checks is how the layer wires its sublayers: collapse, the
    layer's RMSNorm, the sublayer, expand and mix, then the head and the final norm."""

    def __init__(self, core: nn.Module, returns_tuple: bool = False):
        super().__init__()
        self.core, self.returns_tuple = core, returns_tuple

    def forward(self, x, **kwargs):
        y = torch.tanh(self.core(x))
        return (y, None) if self.returns_tuple else y  # HF's attention returns (out, weights)


class _KeywordStub(_Stub):
    """_Stub for a layer that passes its input by name, self_attn(hidden_states=h), as
    KimiK3DecoderLayer and MiniMaxDecoderLayer do."""

    def forward(self, x=None, hidden_states=None, **kwargs):
        return super().forward(x if hidden_states is None else hidden_states)


def _share_sublayers(layer: nn.Module, block: Block, i: int, attn_stub=_Stub, dtype=None) -> None:
    """HF's decoder layer i and the handbook's block get the same stand-ins for attention and
    MLP (random Linear cores), and the block's two pre-sublayer norms the layer's weights
    (input_layernorm, post_attention_layernorm): only the wiring around them differs."""
    attn_core, mlp_core = nn.Linear(D, D, dtype=dtype), nn.Linear(D, D, dtype=dtype)
    randomize(attn_core, seed=10 + i)
    randomize(mlp_core, seed=20 + i)
    layer.self_attn, layer.mlp = attn_stub(attn_core, returns_tuple=True), _Stub(mlp_core)
    block.attn.sublayer, block.mlp.sublayer = _Stub(attn_core), _Stub(mlp_core)
    with torch.no_grad():
        block.attn.norm_in.weight.copy_(layer.input_layernorm.weight)
        block.mlp.norm_in.weight.copy_(layer.post_attention_layernorm.weight)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_mhc_stack_equals_deepseek_v4_decoder_layers(dtype):
    """Stack(residual="mhc") against two DeepseekV4DecoderLayers (their sublayers stubbed,
    see _Stub), DeepseekV4HyperHead and the final DeepseekV4RMSNorm, as DeepseekV4Model.forward
    chains them: the embedding copied into hc_mult streams first."""
    torch.manual_seed(0)
    config = _v4_config()
    layers = [hf_v4.DeepseekV4DecoderLayer(config, i).to(dtype).eval() for i in range(2)]
    head = hf_v4.DeepseekV4HyperHead(config).to(dtype)
    norm = hf_v4.DeepseekV4RMSNorm(D, eps=config.rms_norm_eps).to(dtype)
    for module in (*layers, head, norm):
        randomize(module)
    ours = Stack(2, D, H, FF, residual="mhc", norm="rmsnorm", eps=config.rms_norm_eps)
    ours = ours.to(dtype).eval()
    with torch.no_grad():
        for i, layer in enumerate(layers):
            _share_sublayers(layer, ours.layers[i], i, dtype=dtype)
            _copy_mhc(ours.connections[2 * i], layer.attn_hc)
            _copy_mhc(ours.connections[2 * i + 1], layer.ffn_hc)
        _copy_mhc(ours.head, head)
        ours.norm_f.weight.copy_(norm.weight)
    x = torch.randn(2, 6, D, dtype=dtype)
    with torch.no_grad():
        h = x.unsqueeze(2).expand(-1, -1, config.hc_mult, -1).contiguous()
        for layer in layers:
            h = layer(h, input_ids=None)
        expected = norm(head(h))
        torch.testing.assert_close(ours(x), expected, atol=HF_TOL[dtype], rtol=HF_TOL[dtype])


# --- Streams without mixing (Hy4) and GLM-5.3-Flash's mean collapse -----------------------------
# transformers==5.24.0, src/transformers/models/hy_v4/modeling_hy_v4.py (HYV4HyperConnection,
# HYV4HyperHead, HYV4DecoderLayer.forward, HYV4Model.forward, _init_weights) and
# src/transformers/models/glm5_next/modeling_glm5_next.py (Glm5NextTextHyperConnection, which
# is DeepseekV4HyperConnection, and Glm5NextTextHyperHead, a plain mean).

# Hy4 keeps fn, base and scale in float32 (_keep_in_fp32_modules_strict) and computes in
# float32 with autocast off: bfloat16 streams meet float32 weights, as in a loaded checkpoint.
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}


def _hy4_config(**overrides):
    """A small Hy4 config, random init, nothing downloaded; the HC settings keep the defaults of
    configuration_hy_v4.py unless overridden."""
    return hf_hy4.HYV4Config(
        vocab_size=32, hidden_size=D, num_hidden_layers=2, num_attention_heads=2, head_dim=8,
        q_lora_rank=8, kv_lora_rank=8, qk_nope_head_dim=4, qk_rope_head_dim=4, v_head_dim=8,
        n_routed_experts=2, num_experts_per_tok=1, moe_intermediate_size=8, intermediate_size=8,
        index_n_heads=2, index_head_dim=8, index_topk=2, mlp_layer_types=["dense"] * 2,
        pad_token_id=None, bos_token_id=None, eos_token_id=None, **overrides,
    )  # fmt: skip


def _glm5_config():
    return hf_glm5_config.Glm5NextTextConfig(hidden_size=D)


def test_ihc_defaults_and_init_are_hy4s():
    config, ours = _hy4_config(), HyperConnection(D, independent=True)
    assert (config.hc_mult, config.hc_magnitude) == (ours.n_streams, ours.magnitude)
    assert (config.hc_eps, config.rms_norm_eps) == (ours.eps, ours.norm_eps)
    # HYV4PreTrainedModel._init_weights: scale 0.01; pre's base -log(n - 1), post's 0
    n = ours.n_streams
    assert torch.equal(ours.scale, torch.full((2,), 0.01))
    assert torch.equal(ours.base, torch.tensor([-math.log(n - 1)] * n + [0.0] * n))
    head = HyperConnection(D, independent=True, head=True)
    assert torch.equal(head.base, torch.full((n,), -math.log(n - 1))) and head.magnitude is None
    assert Stack(1, D, H, FF, residual="ihc").n_streams == config.hc_mult
    # at init pre is about 1/n: the collapse starts near the mean of the streams
    pre, post, comb = ours.mixing(torch.randn(2, 3, n, D))
    assert comb is None and torch.allclose(pre, torch.full_like(pre, 1 / n), atol=0.01)
    assert torch.allclose(post, torch.ones_like(post), atol=0.01)  # magnitude 2 times 1/2


@pytest.mark.parametrize("dtype", DTYPES.values(), ids=DTYPES)
@pytest.mark.parametrize("magnitude", [2.0, 1.5], ids=["magnitude 2", "magnitude 1.5"])
def test_ihc_equals_hy4_hyper_connection(dtype, magnitude):
    """The same weights in both; post and the collapsed sublayer input compared bit for bit
    (rtol = atol = 0): both sides do the same float32 arithmetic in the same order, then round
    the collapse to the streams' dtype once. Under a bfloat16 autocast too."""
    torch.manual_seed(0)
    theirs = hf_hy4.HYV4HyperConnection(_hy4_config(hc_magnitude=magnitude))
    randomize(theirs)
    ours = HyperConnection(D, 4, independent=True, magnitude=magnitude)
    _copy_mhc(ours, theirs)
    h = torch.randn(3, 5, 4, D).to(dtype)
    post, collapsed = theirs(h)
    x, our_post, comb = ours.collapse(h)
    assert comb is None and x.dtype == dtype and our_post.dtype == torch.float32
    assert torch.equal(our_post, post) and torch.equal(x, collapsed)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        x_autocast, post_autocast, _ = ours.collapse(h)
    assert torch.equal(post_autocast, post) and torch.equal(x_autocast, collapsed)


@pytest.mark.parametrize("dtype", DTYPES.values(), ids=DTYPES)
def test_ihc_head_equals_hy4_hyper_head(dtype):
    torch.manual_seed(0)
    theirs = hf_hy4.HYV4HyperHead(_hy4_config())
    randomize(theirs)
    ours = HyperConnection(D, 4, independent=True, head=True)
    _copy_mhc(ours, theirs)
    h = torch.randn(3, 5, 4, D).to(dtype)
    x, post, comb = ours.collapse(h)
    assert post is None and comb is None
    assert torch.equal(x, theirs(h))  # the same float32 arithmetic: rtol = atol = 0


class _Hy4AttentionStub(_KeywordStub):
    """_KeywordStub for HYV4DecoderLayer, whose attention returns (out, weights, topk)."""

    def forward(self, x=None, hidden_states=None, **kwargs):
        return super().forward(x, hidden_states)[0], None, None


def test_ihc_stack_equals_hy4_decoder_layers():
    """Stack(residual="ihc") against two HYV4DecoderLayers (attention and MLP stubbed, see
    _Stub), HYV4HyperHead and the final HYV4RMSNorm, chained as HYV4Model.forward chains
    them; the expansion h'_k = post_k F(x) + h_k is done in float32 on both sides. The two
    sides differ only in the layers' RMSNorm (nn.RMSNorm against HYV4RMSNorm, which rounds in
    another order): float32 agrees to 1e-6, as in the DeepSeek-V4 stack test. bfloat16 is
    compared connection by connection above, where it is exact."""
    torch.manual_seed(0)
    config = _hy4_config()
    layers = [hf_hy4.HYV4DecoderLayer(config, i).eval() for i in range(2)]
    head = hf_hy4.HYV4HyperHead(config)
    norm = hf_hy4.HYV4RMSNorm(D, eps=config.rms_norm_eps)
    for module in (*layers, head, norm):
        randomize(module)
    ours = Stack(2, D, H, FF, residual="ihc", norm="rmsnorm", eps=config.rms_norm_eps).eval()
    with torch.no_grad():
        for i, layer in enumerate(layers):
            _share_sublayers(layer, ours.layers[i], i, attn_stub=_Hy4AttentionStub)
            _copy_mhc(ours.connections[2 * i], layer.attn_hc)
            _copy_mhc(ours.connections[2 * i + 1], layer.ffn_hc)
        _copy_mhc(ours.head, head)
        ours.norm_f.weight.copy_(norm.weight)
    x = torch.randn(2, 6, D)
    with torch.no_grad():
        h = x.unsqueeze(2).expand(-1, -1, config.hc_mult, -1).contiguous()
        for layer in layers:
            h = layer(h)[0]
        torch.testing.assert_close(ours(x), norm(head(h)), atol=1e-6, rtol=1e-6)


# GLM-5.3-Flash's connection is DeepSeek-V4's code: the same 1e-6 as HF_TOL in float32 (the
# RMSNorm rounds in another order); in bfloat16 the streams are cast to float32 first on both
# sides and the weights stay float32, so the collapse differs by at most one bfloat16 rounding.
GLM_TOL = {torch.float32: 1e-6, torch.bfloat16: 2**-8}


@pytest.mark.parametrize("dtype", DTYPES.values(), ids=DTYPES)
def test_mhc_equals_glm5_next_hyper_connection(dtype):
    torch.manual_seed(0)
    config = _glm5_config()
    theirs = hf_glm5.Glm5NextTextHyperConnection(config)
    randomize(theirs)
    ours = HyperConnection(D, config.hc_mult, constrained=True, norm_eps=config.rms_norm_eps)
    _copy_mhc(ours, theirs)
    h = torch.randn(3, 5, 4, D).to(dtype)
    post, comb, collapsed = theirs(h)
    x, our_post, our_comb = ours.collapse(h)
    tol = GLM_TOL[dtype]
    torch.testing.assert_close(our_post, post, atol=1e-6, rtol=1e-6)  # float32 on both sides
    torch.testing.assert_close(our_comb, comb, atol=1e-6, rtol=1e-6)
    torch.testing.assert_close(x, collapsed, atol=tol, rtol=tol)


@pytest.mark.parametrize("dtype", DTYPES.values(), ids=DTYPES)
@pytest.mark.parametrize("residual", ["mhc", "ihc", "hc"])
def test_mean_collapse_equals_glm5_next_hyper_head(residual, dtype):
    """Stack(collapse="mean") ends as GLM-5.3-Flash's model does: the streams that leave the
    last connection, averaged by Glm5NextTextHyperHead, then the final norm; bit for bit
    (rtol = atol = 0), since both sides call the same mean."""
    torch.manual_seed(0)
    ours = Stack(2, D, H, FF, residual=residual, collapse="mean", norm="rmsnorm").to(dtype)
    assert ours.head is None
    randomize(ours)
    last = []
    ours.connections[-1].register_forward_hook(lambda m, args, out: last.append(out))
    x = torch.randn(2, 6, D).to(dtype)
    with torch.no_grad():
        got = ours(x)
        expected = ours.norm_f(hf_glm5.Glm5NextTextHyperHead()(last[0]))
    assert torch.equal(got, expected)


BAD_NEW_STREAM_OPTIONS = {
    "independent and constrained": (
        lambda: HyperConnection(D, constrained=True, independent=True), ValueError,
        "independent=True drops comb, the mixing that constrained=True constrains: choose one, "
        "got constrained=True, independent=True",
    ),
    "independent not a bool": (
        lambda: HyperConnection(D, independent="yes"), TypeError,
        "independent must be True or False, got 'yes'",
    ),
    "independent and static": (
        lambda: HyperConnection(D, independent=True, dynamic=False), ValueError,
        "dynamic=False is Zhu et al.'s static HC, got independent=True",
    ),
    "independent and fractions": (
        lambda: HyperConnection(D, independent=True, n_fracs=2), ValueError,
        "Frac-Connections (n_fracs=2) split one HC stream and start from pre = I: independent "
        "must be unset, got independent=True",
    ),
    "magnitude zero": (
        lambda: HyperConnection(D, independent=True, magnitude=0.0), ValueError,
        "magnitude must be a finite number > 0, got 0.0",
    ),
    "magnitude nan": (
        lambda: HyperConnection(D, independent=True, magnitude=float("nan")), ValueError,
        "magnitude must be a finite number > 0, got nan",
    ),
    "magnitude tensor": (
        lambda: HyperConnection(D, independent=True, magnitude=torch.tensor(2.0)), TypeError,
        "magnitude must be a finite number > 0, got Tensor tensor(2.)",
    ),
    "magnitude in mHC": (
        lambda: HyperConnection(D, constrained=True, magnitude=2.0), ValueError,
        "mHC has no magnitude, got magnitude=2.0",
    ),
    "magnitude in HC": (
        lambda: HyperConnection(D, magnitude=2.0), ValueError,
        "HC has no magnitude, got magnitude=2.0",
    ),
    "magnitude in iHC's head": (
        lambda: HyperConnection(D, independent=True, head=True, magnitude=2.0), ValueError,
        "iHC's head has no magnitude, got magnitude=2.0",
    ),
    "sinkhorn_iters in iHC": (
        lambda: HyperConnection(D, independent=True, sinkhorn_iters=5), ValueError,
        "iHC has no sinkhorn_iters, got sinkhorn_iters=5",
    ),
    "layer_index in iHC": (
        lambda: HyperConnection(D, independent=True, layer_index=1), ValueError,
        "iHC has no layer_index, got layer_index=1",
    ),
    "collapse unknown": (
        lambda: Stack(2, D, H, FF, residual="mhc", collapse="avg"), ValueError,
        "collapse must be None or one of ('sum', 'mean', 'head', 'mixer'), got 'avg'",
    ),
    "collapse of one stream": (
        lambda: Stack(2, D, H, FF, collapse="mean"), ValueError,
        "collapse='mean' needs residual in ('hc', 'mhc', 'ihc', 'gated_streams'), got 'add': only "
        "n streams are collapsed at the end",
    ),
    "head for HC": (
        lambda: Stack(2, D, H, FF, residual="hc", collapse="head"), ValueError,
        "collapse='head' needs residual in ('mhc', 'ihc'), got 'hc': Zhu et al.'s HC has no "
        "learned head",
    ),
    "collapse of fractions": (
        lambda: Stack(2, D, H, FF, residual="hc", n_fracs=2, collapse="sum"), ValueError,
        "n_fracs=2 concatenates the fractions at the end, so collapse must be unset, got "
        "collapse='sum'",
    ),
}  # fmt: skip


@pytest.mark.parametrize("build, error, message", BAD_NEW_STREAM_OPTIONS.values(),
                         ids=BAD_NEW_STREAM_OPTIONS)  # fmt: skip
def test_bad_stream_options_are_named(build, error, message):
    with pytest.raises(error) as err:
        build()
    assert str(err.value) == message


def test_ihc_streams_never_mix():
    """H_res = I: with F = 0 every stream is left as it came, and a stream written only by its
    own post stays apart from the others (the derivation in the docs)."""
    torch.manual_seed(0)
    conn = HyperConnection(D, 4, independent=True)
    h = torch.randn(2, 3, 4, D)
    assert torch.equal(conn(h, torch.zeros_like), h)
    # one stream changed: with F = 0 only it changes
    h2 = h.clone()
    h2[:, :, 1] += 1.0
    changed = (conn(h2, torch.zeros_like) != conn(h, torch.zeros_like)).any(dim=-1)
    assert changed[..., 1].all() and not changed[..., [0, 2, 3]].any()


# --- Hyper-Connections (Zhu et al. 2025, arXiv 2409.19606) -------------------------------------


def test_hc_computes_zhu_et_als_equations():
    """Dynamic HC, Eqs. 10-13, with every weight random: H̄ = norm(H) per stream;
    B = s_β tanh(H̄ W_β)ᵀ + B₀, A_m = s_α tanh(H̄ W_m) + A_m₀, A_r = s_α tanh(H̄ W_r) + A_r₀;
    then h₀ = A_mᵀ H, Ĥ = Bᵀ T(h₀) + A_rᵀ H. W_m and W_r are the columns of Appendix J's
    dynamic_alpha_fn (d, 1 + n)."""
    torch.manual_seed(0)
    n, conn = 3, HyperConnection(D, 3, layer_index=4).double()
    randomize(conn)
    T = nn.Linear(D, D).double()
    h = torch.randn(2, 5, n, D, dtype=torch.float64)
    Hbar = F.layer_norm(h, (D,), conn.norm.weight, conn.norm.bias, conn.norm.eps)
    W_m, W_r = conn.dynamic_alpha_fn[:, :1], conn.dynamic_alpha_fn[:, 1:]
    s_a, s_b = conn.dynamic_alpha_scale, conn.dynamic_beta_scale
    B = s_b * torch.tanh(Hbar @ conn.dynamic_beta_fn) + conn.static_beta  # (2, 5, n)
    A_m = s_a * torch.tanh(Hbar @ W_m) + conn.static_alpha[:, :1]  # (2, 5, n, 1)
    A_r = s_a * torch.tanh(Hbar @ W_r) + conn.static_alpha[:, 1:]  # (2, 5, n, n)
    h0 = torch.einsum("btjo,btjd->btod", A_m, h)[:, :, 0]  # A_mᵀ H
    expected = torch.einsum("btk,btd->btkd", B, T(h0)) + torch.einsum("btjk,btjd->btkd", A_r, h)
    torch.testing.assert_close(conn(h, T), expected, atol=1e-12, rtol=1e-12)
    static = HyperConnection(D, 3, dynamic=False)  # SHC: the static matrix alone
    assert {n for n, _ in static.named_parameters()} == {"static_alpha", "static_beta"}


def test_hc_starts_as_pre_ln():
    """Eq. 14's init (sublayer k reads stream k mod n, A_r = I, B = 1, dynamic weights 0)
    keeps the n streams equal to Pre-LN's residual stream; the final sum is n times it, which
    the final LayerNorm undoes but for its eps: LN_eps(n x) = LN_{eps / n²}(x)."""
    kwargs = dict(norm_position="pre", causal=True)
    torch.manual_seed(0)
    hc = Stack(3, D, H, FF, residual="hc", **kwargs).double()
    torch.manual_seed(0)
    pre = Stack(3, D, H, FF, residual="add", **kwargs).double()
    x = torch.randn(2, 5, D, dtype=torch.float64)
    stream = x
    for layer in pre.layers:
        stream = layer(stream)
    ln = pre.norm_f
    expected = F.layer_norm(stream, (D,), ln.weight, ln.bias, ln.eps / 4**2)
    torch.testing.assert_close(hc(x), expected, atol=1e-12, rtol=1e-12)
    assert [c.static_alpha[:, 0].argmax().item() for c in hc.connections] == [0, 1, 2, 3, 0, 1]


def _frac_connection_algorithm_2(conn, h, sublayer):
    """Frac-Connections' PyTorch-like pseudocode (arXiv 2503.14125, Appendix A, Algorithms
    2 and 3, use_tanh, use_hc_norm and use_scale on), transcribed with the weights of conn:
    width_connection, the sublayer on the concatenated first m rows, depth_connection. The
    paper's bfloat16 cast of mix_h is left out: the test runs in float64. Its reshapes of
    tuples are written with unpacking; the shapes are the same."""
    rate, d = conn.n_fracs, h.shape[-1]
    h_reshape = h.reshape(*h.shape[:-1], rate, d // rate)
    norm_h = F.layer_norm(h_reshape, (d // rate,), conn.norm.weight, conn.norm.bias, conn.norm.eps)
    alpha = torch.tanh(norm_h @ conn.dynamic_alpha_fn) * conn.dynamic_alpha_scale
    alpha = alpha + conn.static_alpha[None, None, ...]
    beta = torch.tanh(norm_h @ conn.dynamic_beta_fn) * conn.dynamic_beta_scale
    beta = beta + conn.static_beta[None, None, ...]
    mix_h = alpha.transpose(-1, -2) @ h_reshape  # (B, T, 2m, d/m)
    x = mix_h[..., :rate, :].reshape(*mix_h.shape[:-2], mix_h.shape[-2] // 2 * mix_h.shape[-1])
    h_o = sublayer(x)
    out = beta[..., None] * h_o.reshape(*h_o.shape[:-1], rate, d // rate) + mix_h[..., rate:, :]
    return out.reshape(*out.shape[:-2], out.shape[-2] * out.shape[-1])


@pytest.mark.parametrize("m", [2, 4])
def test_fc_equals_the_papers_pseudocode(m):
    """Frac-Connections with every weight random against Algorithm 2: one stream split into m
    fractions (Eq. 6), F reading the concatenation of Yᵀ H, the output Bᵀ T(...) + Aᵀ H (Eq. 8)
    with B scaling fraction k of T's output, and the dynamic weights of Eqs. 11-14."""
    torch.manual_seed(0)
    conn = HyperConnection(D, n_fracs=m).double()
    randomize(conn)
    T = nn.Linear(D, D).double()
    x = torch.randn(2, 5, D, dtype=torch.float64)
    got = conn(x.unflatten(-1, (m, D // m)), T).flatten(-2)
    torch.testing.assert_close(got, _frac_connection_algorithm_2(conn, x, T), atol=1e-12, rtol=0)
    assert conn.n_streams == 1 and conn.dynamic_alpha_fn.shape == (D // m, 2 * m)


def test_fc_starts_as_pre_ln_exactly():
    """Eq. 15's init (Y = A = I, B = 1, dynamic weights 0) makes F read x itself and the
    update x + F(x): a Frac-Connections stack is the Pre-LN stack, bit for bit. Unlike HC
    there is no n-fold sum at the end: the fractions are concatenated back."""
    x = torch.randn(2, 5, D, dtype=torch.float64)
    for m in (2, 4):
        torch.manual_seed(0)
        fc = Stack(3, D, H, FF, residual="hc", n_fracs=m, causal=True).double()
        torch.manual_seed(0)
        pre = Stack(3, D, H, FF, residual="add", causal=True).double()
        assert torch.equal(fc(x), pre(x))
    y = fc.to(torch.bfloat16)(x.to(torch.bfloat16))
    assert y.dtype == torch.bfloat16 and torch.isfinite(y).all()


def test_hc_default_is_bit_identical_with_n_fracs_1():
    """n_fracs=1 is HC as before: same parameters, same output."""
    x = torch.randn(2, 5, D)
    outputs = []
    for kwargs in ({}, {"n_fracs": 1}):
        torch.manual_seed(0)
        stack = Stack(2, D, H, FF, residual="hc", **kwargs)
        randomize(stack.connections)
        outputs.append((stack(x), {k: v.shape for k, v in stack.state_dict().items()}))
    assert torch.equal(outputs[0][0], outputs[1][0]) and outputs[0][1] == outputs[1][1]
    assert HyperConnection(D).n_streams == 4 and HyperConnection(D).static_alpha.shape == (4, 5)


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: HyperConnection(D, n_fracs=3), "n_fracs must divide d_model, got d_model=16"),
        (lambda: HyperConnection(D, n_fracs=0), "n_fracs must be a positive int, got 0"),
        (lambda: HyperConnection(D, n_fracs=2.0), "n_fracs must be a positive int"),
        (lambda: HyperConnection(D, 4, n_fracs=2), "n_streams must be 1 or unset, got n_str"),
        (lambda: HyperConnection(D, n_fracs=2, constrained=True), "constrained must be unset"),
        (lambda: HyperConnection(D, n_fracs=2, layer_index=1), "layer_index must be unset"),
        (lambda: Stack(2, D, H, FF, residual="mhc", n_fracs=2), "n_fracs is for 'hc', got r"),
        (lambda: Stack(2, D, H, FF, n_fracs=2), "n_fracs is for 'hc', got residual='add'"),
        (lambda: Stack(2, D, H, FF, residual="hc", n_fracs=2, n_streams=4), "n_streams must"),
        (lambda: Stack(2, D, H, FF, residual="hc", n_fracs=5), "n_fracs must divide d_model"),
    ],
)
def test_bad_n_fracs_is_named(make, message):
    with pytest.raises((ValueError, TypeError), match=message):
        make()


def test_fc_refuses_streams_of_the_wrong_shape():
    conn = HyperConnection(D, n_fracs=4)
    with pytest.raises(ValueError, match=r"expected input of shape \(batch, seq_len, 4, 4\)"):
        conn(torch.randn(2, 5, 1, D), nn.Identity())


def test_mhc_mixing_stays_doubly_stochastic_over_depth():
    """The residual path through L connections is the product of their comb matrices. With
    mHC each is doubly stochastic (to Sinkhorn's 20 passes), so the product is too: rows and
    columns sum to 1 and its spectral norm stays at 1. Unconstrained HC with the same kind of
    random weights has no such bound: its product grows with depth."""
    torch.manual_seed(0)
    n_layers, n = 6, 4
    mhc = Stack(n_layers, D, H, FF, residual="mhc", norm="rmsnorm").double()
    hc = Stack(n_layers, D, H, FF, residual="hc", norm="rmsnorm").double()
    with torch.no_grad():
        for conn in mhc.connections:  # comb's logits about N(0, 1)
            conn.fn.normal_(0, 1 / math.sqrt(n * D))
            conn.base.normal_(0, 0.5)
        for conn in hc.connections:
            conn.static_alpha[:, 1:] += 0.3 * torch.randn(n, n, dtype=torch.float64)
    x = torch.randn(2, 5, D, dtype=torch.float64)
    norms = {}
    for name, stack in (("mhc", mhc), ("hc", hc)):
        h = x.unsqueeze(-2).expand(2, 5, n, D)
        product = torch.eye(n, dtype=torch.float64)
        with torch.no_grad():
            branches = [r.branch for layer in stack.layers for r in (layer.attn, layer.mlp)]
            for conn, branch in zip(stack.connections, branches, strict=True):
                y, post, comb = conn.collapse(h)
                h = conn.expand(branch(y), h, post, comb)
                product = comb.transpose(-1, -2) @ product  # h ↦ combᵀ h, layer after layer
        norms[name] = torch.linalg.matrix_norm(product, ord=2)
        if name == "mhc":
            # each comb's sums sit about eps = 1e-6 below 1: 12 of them, 1.2e-5 (measured)
            assert (product.sum(-1) - 1).abs().max() < 1e-4
            assert (product.sum(-2) - 1).abs().max() < 1e-4
    assert norms["mhc"].max() < 1 + 1e-4
    assert norms["hc"].min() > 2  # 7.5 with this seed


# --- Attention Residuals (Kimi Team 2026, arXiv 2603.15031) -------------------------------------


def _attnres_by_the_equations(stack: Stack, x: torch.Tensor, S: int) -> torch.Tensor:
    """Eqs. 2-6 of the paper, in its indices: layer l = 1..L is a sublayer (attention or MLP),
    l = L + 1 the output. Layer l is the i-th of block n (S layers a block); it attends over
    b_0 = the embedding, the complete blocks b_1..b_{n-1} (Eq. 5: sums of their outputs) and,
    from its block's second layer on, the partial sum b_n^{i-1} (Eq. 6). The kernel is
    φ(q, k) = exp(qᵀ RMSNorm(k)) with q = w_l, normalized over the sources (Eq. 2).

    The authors' repository (MoonshotAI/Attention-Residuals) holds the paper and the
    PyTorch-style pseudocode of its Fig. 2, not code that runs; searched: find_repos
    "AttnRes", "attention-residual", "Attention-Residuals", "MoonshotAI", and code, docs and
    issues search for "Attention Residuals" (its issue #6 asks for code, open). So the test is
    written from the equations."""
    f = [r.branch for layer in stack.layers for r in (layer.attn, layer.mlp)]
    L, outputs = len(f), {}

    def phi(conn, k):
        rms = k / torch.sqrt(k.pow(2).mean(-1, keepdim=True) + conn.norm.eps)
        return torch.exp((rms * conn.norm.weight) @ conn.query)

    def block(n, last):  # Σ f_j(h_j) over layers j of block n up to layer `last`
        return sum(outputs[j] for j in range((n - 1) * S + 1, last + 1))

    for ell in range(1, L + 2):
        n, i = (ell - 1) // S + 1, (ell - 1) % S + 1
        values = [x] + [block(m, m * S) for m in range(1, n)]
        if i >= 2:
            values.append(block(n, ell - 1))
        conn = stack.connections[ell - 1]
        weights = [phi(conn, v) for v in values]
        h = sum(w.unsqueeze(-1) * v for w, v in zip(weights, values, strict=True))
        h = h / sum(weights).unsqueeze(-1)
        if ell <= L:
            outputs[ell] = f[ell - 1](h)
    return stack.norm_f(h)


@pytest.mark.parametrize("block_size", [None, 1, 2, 3, 4, 100])
def test_attnres_follows_the_papers_equations(block_size):
    """Full AttnRes (block_size None: every sublayer its own block, b_i = f_i) and Block
    AttnRes, with S dividing 2L = 8 or not (3), and one block for all (100: N = 1)."""
    torch.manual_seed(0)
    stack = Stack(4, D, H, FF, residual="attnres", block_size=block_size, norm="rmsnorm", eps=1e-6)
    stack = stack.double()
    randomize(stack)  # the pseudo-queries too: away from their zero init
    x = torch.randn(2, 5, D, dtype=torch.float64)
    S = 1 if block_size is None else block_size
    expected = _attnres_by_the_equations(stack, x, S)
    torch.testing.assert_close(stack(x), expected, atol=1e-12, rtol=1e-12)
    assert len(stack.connections) == 2 * 4 + 1  # one pseudo-query per sublayer, one for output


def test_attnres_starts_as_the_mean_of_its_sources():
    """§5: the pseudo-queries start at zero, so the weights start uniform."""
    depth = DepthAttention(D).double()
    assert torch.equal(depth.query, torch.zeros(D, dtype=torch.float64))
    sources = [torch.randn(2, 3, D, dtype=torch.float64) * (i + 1) for i in range(5)]
    torch.testing.assert_close(depth(sources), torch.stack(sources).mean(0))
    torch.testing.assert_close(depth(sources[:1]), sources[0])  # one source: itself


# --- DenseFormer (Pagliardini et al. 2024, arXiv 2402.02622) -------------------------------------


def test_denseformer_follows_the_dwa_equations():
    """After block i: x_i = Σ_{j=0..i} α_ij X_j, X_0 the embedding, X_j = B_j(x_{j-1}); the last
    DWA's output goes to the final norm. α random here; at init it is the identity, and the
    DenseFormer is its Transformer."""
    torch.manual_seed(0)
    dense = Stack(3, D, H, FF, residual="denseformer", causal=True).double()
    torch.manual_seed(0)
    plain = Stack(3, D, H, FF, residual="add", causal=True).double()
    x = torch.randn(2, 5, D, dtype=torch.float64)
    torch.testing.assert_close(dense(x), plain(x), atol=0, rtol=0)
    with torch.no_grad():
        for dwa in dense.connections:
            dwa.weight.normal_()
    X, inputs = [x], x
    for i, block in enumerate(dense.layers):
        X.append(block(inputs))
        alpha = dense.connections[i].weight
        inputs = sum(alpha[j] * X[j] for j in range(i + 2))
    torch.testing.assert_close(dense(x), dense.norm_f(inputs), atol=1e-12, rtol=1e-12)
    assert [len(dwa.weight) for dwa in dense.connections] == [2, 3, 4]


# --- The residual axis: bad input -----------------------------------------------------------------


def test_bad_residual_configuration_is_named():
    with pytest.raises(ValueError, match=r"residual must be one of \('add', .*\), got 'highway'"):
        Stack(2, D, H, FF, residual="highway")
    with pytest.raises(ValueError, match="n_streams must be a positive int, got 0"):
        Stack(2, D, H, FF, residual="hc", n_streams=0)
    with pytest.raises(ValueError, match="n_streams must be a positive int, got 0"):
        HyperConnection(D, 0)
    with pytest.raises(
        ValueError,
        match="n_streams is for \\('hc', 'mhc', 'ihc', 'gated_streams'\\), got residual='add'",
    ):
        Stack(2, D, H, FF, n_streams=2)
    with pytest.raises(ValueError, match="block_size is for 'attnres', got residual='mhc'"):
        Stack(2, D, H, FF, residual="mhc", block_size=2)
    with pytest.raises(ValueError, match="block_size must be a positive int, got 0"):
        Stack(2, D, H, FF, residual="attnres", block_size=0)
    for residual in ("hc", "mhc", "attnres"):
        for position in ("post", "deepnorm", "mixln", "rezero"):
            with pytest.raises(
                ValueError,
                match=rf"residual='{residual}' needs norm_position in \('pre', 'sandwich', "
                rf"'output', 'lns'\), got '{position}'",
            ):
                Stack(2, D, H, FF, residual=residual, norm_position=position)
    with pytest.raises(ValueError, match=r"dynamic=False is Zhu et al\.'s static HC"):
        HyperConnection(D, constrained=True, dynamic=False)
    with pytest.raises(ValueError, match="head=True needs constrained"):
        HyperConnection(D, head=True)
    with pytest.raises(ValueError, match="layer_index must be an int >= 0, got -1"):
        HyperConnection(D, layer_index=-1)


def test_bad_streams_and_sources_are_named():
    conn = HyperConnection(D, 4, constrained=True)
    with pytest.raises(ValueError, match=r"shape \(batch, seq_len, 4, 16\), got \(2, 5, 3, 16\)"):
        conn.collapse(torch.randn(2, 5, 3, D))  # three streams, four expected
    with pytest.raises(ValueError, match=r"shape \(batch, seq_len, 4, 16\), got \(2, 5, 16\)"):
        conn(torch.randn(2, 5, D), nn.Identity())  # one stream, not expanded
    with pytest.raises(TypeError, match=r"floating-point tensor, got dtype torch\.int64"):
        conn.collapse(torch.zeros(2, 5, 4, D, dtype=torch.long))
    h = torch.randn(2, 5, 4, D)
    _, post, comb = conn.collapse(h)
    with pytest.raises(ValueError, match=r"shape \(batch, seq_len, 16\), got \(2, 5, 8\)"):
        conn.expand(torch.randn(2, 5, 8), h, post, comb)  # a sublayer of the wrong width
    with pytest.raises(ValueError, match=r"shape \(batch, seq_len, 16\), got \(2, 5, 8\)"):
        Stack(1, D, H, FF, residual="mhc")(torch.randn(2, 5, 8))
    depth = DepthAttention(D)
    with pytest.raises(ValueError, match="expected at least one source, got an empty list"):
        depth([])
    with pytest.raises(TypeError, match="expected a list of tensors, got Tensor"):
        depth(torch.randn(3, 2, 5, D))
    with pytest.raises(
        ValueError, match=r"sources of one shape, got \[\(2, 5, 16\), \(2, 4, 16\)\]"
    ):
        depth([torch.randn(2, 5, D), torch.randn(2, 4, D)])
    with pytest.raises(ValueError, match="expected 3 sources, got 2"):
        DepthWeightedAverage(3, D)([torch.randn(2, 5, D)] * 2)


# --- Kimi K3's attention residuals, against its code (tests/fixtures/kimi_k3) -----------------

K3_EPS = 1e-5  # rms_norm_eps: the same on both sides (the fixture has no configuration file)


@functools.cache
def _kimi_k3():
    """huggingface/transformers' modular_kimi_k3.py at e6ffd13, the classes kept in
    tests/fixtures/kimi_k3 (see its README.md), loaded from its path: fixtures is no package."""
    path = Path(__file__).resolve().parents[1] / "fixtures" / "kimi_k3" / "modular_kimi_k3.py"
    spec = importlib.util.spec_from_file_location("modular_kimi_k3", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _k3_config(n_layers: int, attn_res_block_size: int) -> transformers.PretrainedConfig:
    """What KimiK3DecoderLayer and KimiK3AttentionResidual read: full-attention, dense layers,
    whose KimiK3GatedMLA and KimiK3MLP the tests replace with stand-ins."""
    return transformers.PretrainedConfig(
        hidden_size=D, rms_norm_eps=K3_EPS, attn_res_block_size=attn_res_block_size,
        layer_types=["full_attention"] * n_layers, mlp_layer_types=["dense"] * n_layers,
        num_attention_heads=H, num_key_value_heads=H, attention_dropout=0.0,
        attention_bias=False, q_lora_rank=8, kv_lora_rank=8, qk_rope_head_dim=2,
        qk_nope_head_dim=2, v_head_dim=4, intermediate_size=FF, activation_situ_beta=4.0,
        activation_situ_linear_beta=25.0,
    )  # fmt: skip


def _copy_k3_residual(ours: DepthAttention, theirs: nn.Module) -> None:
    """pseudo_queries, a Linear(hidden_size, 1) without bias, is the query w; attn_residual_norm,
    a weighted RMSNorm (KimiK3RMSNorm, Llama's), is the key norm."""
    with torch.no_grad():
        ours.query.copy_(theirs.pseudo_queries.weight[0])
        ours.norm.weight.copy_(theirs.attn_residual_norm.weight)


def _k3_block_residual(sources: list, like: torch.Tensor) -> torch.Tensor:
    """K3's stored sources: (batch * seq_len, n, hidden_size) in float32."""
    if not sources:
        return like.new_zeros(like.shape[0] * like.shape[1], 0, D, dtype=torch.float32)
    return torch.stack([s.reshape(-1, D) for s in sources], dim=1).float()


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("n_sources", [1, 2, 5])
def test_depth_attention_equals_kimi_k3_attention_residual(n_sources, dtype):
    """DepthAttention ↔ KimiK3AttentionResidual: its sources are block_residual, then the
    current hidden_states; keys RMSNorm(source), scores w · key, softmax over the sources,
    the sources themselves as values, all in float32, cast back to the input's dtype. In
    bfloat16 the weights stay float32 on both sides, as KimiK3PreTrainedModel's
    _keep_in_fp32_modules_strict = ["pseudo_queries", "attn_residual_norm"] keeps them."""
    theirs = _kimi_k3().KimiK3AttentionResidual(_k3_config(1, 1))
    randomize(theirs)
    ours = DepthAttention(D, eps=K3_EPS)
    _copy_k3_residual(ours, theirs)
    g = torch.Generator().manual_seed(1)
    sources = [(i + 1) * torch.randn(2, 5, D, generator=g) for i in range(n_sources)]
    sources = [s.to(dtype) for s in sources]  # later sources larger, as a stream's sums grow
    with torch.no_grad():
        y = ours(sources)
        expected = theirs(sources[-1], _k3_block_residual(sources[:-1], sources[-1]))
    assert y.dtype == expected.dtype == dtype
    torch.testing.assert_close(y, expected, atol=1e-6, rtol=1e-6)


def test_depth_attention_computes_in_float32_at_least():
    """In float32 and float64 the result is bit for bit the formula in the sources' dtype (as
    before K3's precision was followed); bfloat16 sources give the float32 result, rounded once."""
    torch.manual_seed(0)
    for dtype in (torch.float32, torch.float64):
        depth = DepthAttention(D, eps=K3_EPS).to(dtype)
        randomize(depth)
        sources = [torch.randn(2, 5, D, dtype=dtype) for _ in range(3)]
        v = torch.stack(sources)
        alpha = (depth.norm(v) @ depth.query).softmax(dim=0)
        assert torch.equal(depth(sources), (alpha.unsqueeze(-1) * v).sum(dim=0))
    depth = DepthAttention(D, eps=K3_EPS)
    randomize(depth)
    sources = [torch.randn(2, 5, D).to(torch.bfloat16) for _ in range(3)]
    exact = depth([s.float() for s in sources])
    assert torch.equal(depth(sources), exact.to(torch.bfloat16))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("attn_res_block_size", [1, 2, 3])
def test_attnres_stack_equals_kimi_k3_decoder_layers(attn_res_block_size, dtype):
    """Stack(residual="attnres", block_size=2 * attn_res_block_size) ↔ five KimiK3DecoderLayers.
    A K3 layer holds two sublayers, and a layer with layer_idx % attn_res_block_size == 0 opens
    a new block before its attention: the handbook's blocks of block_size sublayers, counted
    from the first. K3's attention and MLP are replaced by the same stand-ins on both sides
    (_KeywordStub, _Stub), so what is compared is the wiring and the norms: pre_attn_residual
    ↔ connections[2 l] (layer 0 skips it: its one source is the embedding, which the handbook's
    softmax over one source returns as it is), input_layernorm ↔ attn.norm_in,
    post_attn_residual ↔ connections[2 l + 1], post_attention_layernorm ↔ mlp.norm_in. The file
    has no model class, so what follows the last layer is not K3's to compare: the test applies
    one more KimiK3AttentionResidual and a KimiK3RMSNorm, as the handbook's connections[-1] and
    norm_f do. Five layers leave the last block incomplete for block sizes 2 and 3. In bfloat16
    the attention residuals keep float32 weights on both sides (_keep_in_fp32_modules_strict)."""
    k3, n_layers = _kimi_k3(), 5
    torch.manual_seed(0)
    config = _k3_config(n_layers, attn_res_block_size)
    layers = [k3.KimiK3DecoderLayer(config, i) for i in range(n_layers)]
    assert [layer.is_start_of_residual_block for layer in layers] == [
        i % attn_res_block_size == 0 for i in range(n_layers)
    ]
    final_residual, final_norm = k3.KimiK3AttentionResidual(config), k3.KimiK3RMSNorm(D, K3_EPS)
    for seed, module in enumerate((*layers, final_residual, final_norm)):
        randomize(module, seed)
    ours = Stack(
        n_layers, D, H, FF, residual="attnres", block_size=2 * attn_res_block_size,
        norm="rmsnorm", eps=K3_EPS,
    )  # fmt: skip
    with torch.no_grad():
        for i, layer in enumerate(layers):
            _share_sublayers(layer, ours.layers[i], i, attn_stub=_KeywordStub)
            _copy_k3_residual(ours.connections[2 * i], layer.pre_attn_residual)
            _copy_k3_residual(ours.connections[2 * i + 1], layer.post_attn_residual)
        _copy_k3_residual(ours.connections[-1], final_residual)
        ours.norm_f.weight.copy_(final_norm.weight)
    for module in (*layers, final_norm, ours):
        module.to(dtype)
    residuals = [r for layer in layers for r in (layer.pre_attn_residual, layer.post_attn_residual)]
    for module in (*residuals, final_residual, ours.connections):
        module.float()  # _keep_in_fp32_modules_strict: pseudo_queries, attn_residual_norm
    x = torch.randn(2, 6, D).to(dtype)
    with torch.no_grad():
        h, block_residual = x, _k3_block_residual([], x)
        for layer in layers:
            h, block_residual = layer(h, block_residual)
        expected = final_norm(final_residual(h, block_residual))
        y = ours(x)
    assert y.dtype == dtype
    tol = 1e-6 if dtype == torch.float32 else BF16_TOL
    torch.testing.assert_close(y, expected, atol=tol, rtol=tol)


# --- The default attention and block are the ones before qk_norm, softcap and parallel ----------


def _attention_as_before(attn: MultiHeadAttention, x: torch.Tensor) -> torch.Tensor:
    """MultiHeadAttention.forward as it was before qk_norm and softcap existed (commit
    f68694d), kept here so the default path can be compared with it bit for bit."""
    B, T, C = x.shape
    q, k, v = attn.qkv(x).split(C, dim=2)
    q, k, v = (t.view(B, T, attn.n_heads, C // attn.n_heads).transpose(1, 2) for t in (q, k, v))
    att = (q @ k.transpose(-2, -1)) / math.sqrt(k.size(-1))
    if attn.causal:
        future = torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1)
        att = att.masked_fill(future, float("-inf"))
    att = attn.attn_dropout(att.softmax(dim=-1))
    return attn.proj((att @ v).transpose(1, 2).reshape(B, T, C))


@pytest.mark.parametrize("causal", [False, True])
def test_default_attention_and_block_are_unchanged(causal, device):
    """Same random draws at construction (qkv then proj, nothing more), the same parameters,
    and outputs equal bit for bit to the code before the new axes (dropout on, so the random
    stream must match too)."""
    torch.manual_seed(0)
    attn = MultiHeadAttention(D, H, dropout=0.1, causal=causal)
    torch.manual_seed(0)
    qkv, proj = nn.Linear(D, 3 * D), nn.Linear(D, D)
    assert list(attn.state_dict()) == ["qkv.weight", "qkv.bias", "proj.weight", "proj.bias"]
    assert torch.equal(attn.qkv.weight, qkv.weight) and torch.equal(attn.proj.weight, proj.weight)
    attn = attn.to(device).train()
    x = torch.randn(2, 7, D, device=device)
    torch.manual_seed(1)
    y = attn(x)
    torch.manual_seed(1)
    assert torch.equal(y, _attention_as_before(attn, x))
    block = Block(D, H, FF, dropout=0.1, causal=causal).to(device).train()
    modules = ["attn.sublayer.qkv", "attn.sublayer.proj", "attn.norm_in"]
    modules += ["mlp.sublayer.fc", "mlp.sublayer.proj", "mlp.norm_in"]
    assert list(block.state_dict()) == [f"{m}.{p}" for m in modules for p in ("weight", "bias")]
    torch.manual_seed(2)
    y = block(x)
    torch.manual_seed(2)
    assert torch.equal(y, block.mlp(block.attn(x)))


# --- Derf (Chen et al. 2025, arXiv 2512.10938) --------------------------------------------------


def test_derf_shapes_and_init():
    """As the authors' code (zlab-princeton/Derf at 8dd9ea3, ViT/dynamic_erf.py and language
    model/model_derf.patch): alpha and shift one scalar each, 0.5 and 0 by default; weight
    and bias one per channel, 1 and 0."""
    derf = make_norm("derf", D)
    assert isinstance(derf, Derf)
    shapes = {n: tuple(p.shape) for n, p in derf.named_parameters()}
    assert shapes == {"alpha": (1,), "weight": (D,), "bias": (D,), "shift": (1,)}
    assert derf.alpha.item() == 0.5 and derf.shift.item() == 0.0
    assert torch.equal(derf.weight, torch.ones(D)) and torch.equal(derf.bias, torch.zeros(D))
    assert Derf(D, alpha_init=1.0, shift_init=0.25).shift.item() == 0.25
    assert [n for n, _ in Derf(D, bias=False).named_parameters()] == ["alpha", "weight", "shift"]


def test_derf_formula_and_gradient(device):
    """Derf(x) = γ erf(αx + s) + β, and d/dx = γ α (2/√π) exp(-(αx + s)²): the derivative of
    erf. gradcheck compares autograd with finite differences in float64 for every input."""
    derf = Derf(D).double().to(device)
    randomize(derf)
    x = torch.randn(3, 5, D, dtype=torch.float64, device=device, requires_grad=True)
    a, s, g, b = derf.alpha, derf.shift, derf.weight, derf.bias
    z = a * x + s
    torch.testing.assert_close(derf(x), g * torch.erf(z) + b, atol=1e-12, rtol=1e-12)
    (grad,) = torch.autograd.grad(derf(x).sum(), x)
    expected = g * a * 2 / math.sqrt(math.pi) * torch.exp(-(z**2))
    torch.testing.assert_close(grad, expected, atol=1e-12, rtol=1e-12)
    assert torch.autograd.gradcheck(derf, (x[:1, :2],))
    derf(x).square().sum().backward()
    assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in derf.parameters())
    assert not torch.allclose(derf(x), DyT(D).double().to(device)(x))  # erf is not tanh


@pytest.mark.parametrize("position", STACK_POSITIONS)
def test_derf_runs_in_every_placement(position, device):
    """As DyT: any placement, a training step reaches every parameter of every Derf."""
    torch.manual_seed(0)
    final = True if position == "rezero" else None  # ReZero's only norm is a final one
    stack = Stack(3, D, H, FF, norm_position=position, norm="derf", causal=True, final_norm=final)
    stack = stack.to(device)
    x = torch.randn(2, 5, D, device=device)
    y = stack(x)
    assert y.shape == x.shape and torch.isfinite(y).all()
    y.square().mean().backward()
    derfs = [m for m in stack.modules() if isinstance(m, Derf)]
    assert len(derfs) == sum(
        r is not None for layer in stack.layers for c in (layer.attn, layer.mlp) for r in _norms(c)
    ) + (stack.norm_f is not None)
    for m in derfs:
        assert all(p.grad is not None for p in m.parameters())


# --- Norms on queries and keys: MultiHeadAttention(qk_norm=...) ----------------------------------


def _rms(t: torch.Tensor, eps: float) -> torch.Tensor:
    return t / torch.sqrt(t.pow(2).mean(-1, keepdim=True) + eps)


def _attention_by_formula(attn: MultiHeadAttention, x: torch.Tensor) -> torch.Tensor:
    """softmax(s) V with s written out per qk_norm: RMS(t) = t / sqrt(mean(t²) + eps), over one
    head (head*) or all heads (proj); l2: the cosine of q and k times g; then the softcap."""
    B, T, C = x.shape
    Wq, Wk, Wv = attn.qkv.weight.split(C)
    bq, bk, bv = attn.qkv.bias.split(C)
    q, k, v = x @ Wq.T + bq, x @ Wk.T + bk, x @ Wv.T + bv  # (B, T, C)
    mode, eps = attn.qk_norm, attn.eps
    if mode == "proj":
        q, k = _rms(q, eps) * attn.q_norm.weight, _rms(k, eps) * attn.k_norm.weight
    q, k, v = (t.reshape(B, T, H, C // H).transpose(1, 2) for t in (q, k, v))
    if mode in ("head", "head_1p", "head_noweight"):
        scale = {
            "head": lambda n: n.weight,
            "head_1p": lambda n: 1 + n.weight,
            "head_noweight": lambda n: 1.0,
        }[mode]
        q, k = _rms(q, eps) * scale(attn.q_norm), _rms(k, eps) * scale(attn.k_norm)
    if mode == "l2":
        q, k = q / q.norm(dim=-1, keepdim=True), k / k.norm(dim=-1, keepdim=True)
        s = attn.qk_scale * q @ k.transpose(-1, -2)
    else:
        s = q @ k.transpose(-1, -2) / math.sqrt(C // H)
    if attn.softcap is not None:
        s = attn.softcap * torch.tanh(s / attn.softcap)
    s = s.masked_fill(torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1), float("-inf"))
    y = (s.softmax(-1) @ v).transpose(1, 2).reshape(B, T, C)
    return y @ attn.proj.weight.T + attn.proj.bias


@pytest.mark.parametrize("softcap", [None, 2.0])
@pytest.mark.parametrize("qk_norm", [None, *QK_NORMS])
def test_qk_norm_computes_its_formula(qk_norm, softcap, device):
    torch.manual_seed(0)
    kwargs = dict(qk_norm=qk_norm, softcap=softcap, eps=1e-6 if qk_norm else None)
    if qk_norm == "l2":
        kwargs["qk_scale"] = math.log2(16**2 - 16)  # QKNorm's init for a length of 16
    attn = MultiHeadAttention(D, H, causal=True, **kwargs).double().to(device)
    randomize(attn)
    x = torch.randn(2, 6, D, dtype=torch.float64, device=device)
    expected = _attention_by_formula(attn, x)
    torch.testing.assert_close(attn(x), expected, atol=1e-12, rtol=1e-12)
    n_norm = {None: 0, "head": 2 * D // H, "head_1p": 2 * D // H, "head_noweight": 0}
    n_norm |= {"proj": 2 * D, "l2": 1}
    assert sum(p.numel() for p in attn.parameters()) == 4 * D * D + 4 * D + n_norm[qk_norm]


def test_l2_qk_norm_is_qknorm():
    """Henry et al. 2020 (arXiv 2010.04245, abstract): ℓ2-normalize each head's queries and keys,
    then scale up by a learnable parameter in place of dividing by √d. The authors' code
    (CyndxAI/QKNorm at d0eed01, QKNorm/layers.py): one scalar g per attention layer
    (ScaleUp), started at log2(L² − L), L the 97.5th percentile of training lengths; then
    the logits lie in [−g, g] whatever the size of q and k."""
    attn = MultiHeadAttention(D, H, qk_norm="l2", qk_scale=math.log2(50**2 - 50)).double()
    assert attn.qk_scale.shape == ()  # one scalar, as ScaleUp's torch.tensor(scale)
    assert attn.qk_scale.item() == pytest.approx(math.log2(2450), rel=1e-7)  # float32 at init
    randomize(attn)
    x = 1e3 * torch.randn(2, 5, D, dtype=torch.float64)  # large q and k: plain logits would be huge
    logits = []
    attn.attn_dropout.register_forward_hook(lambda m, i, o: logits.append(i[0].log()))
    attn(x).sum().backward()
    s = logits[0]  # log softmax: the logits less their log-sum-exp, row by row
    spread = s.max(-1).values - s.min(-1).values
    assert (spread <= 2 * attn.qk_scale.item() + 1e-9).all()
    plain = MultiHeadAttention(D, H).double()  # the same q and k, scaled by 1/√d instead
    plain.load_state_dict({k: v for k, v in attn.state_dict().items() if k != "qk_scale"})
    plain.attn_dropout.register_forward_hook(lambda m, i, o: logits.append(i[0].log()))
    plain(x)
    assert (logits[1].max(-1).values - logits[1].min(-1).values).max() > 2 * attn.qk_scale
    assert attn.qk_scale.grad is not None and attn.qk_scale.grad != 0


def test_softcap_bounds_the_logits():
    """c tanh(s / c): about s for |s| ≪ c, never beyond c (Gemma 2's attn_logit_softcapping)."""
    torch.manual_seed(0)
    capped = MultiHeadAttention(D, H, softcap=2.0).double()
    randomize(capped)
    x = 10 * torch.randn(2, 5, D, dtype=torch.float64)
    probs = []
    capped.attn_dropout.register_forward_hook(lambda m, i, o: probs.append(i[0]))
    capped(x)
    s = probs[0].log()
    assert (s.max(-1).values - s.min(-1).values <= 4.0 + 1e-9).all()  # within (-c, c)
    loose = MultiHeadAttention(D, H, softcap=1e6).double()
    loose.load_state_dict(capped.state_dict())
    plain = MultiHeadAttention(D, H).double()
    plain.load_state_dict(capped.state_dict())
    torch.testing.assert_close(loose(x), plain(x), atol=1e-6, rtol=1e-6)  # c ≫ s: no cap
    assert (capped(x) - plain(x)).abs().max() > 1e-2


def test_weightless_head_norm_commutes_with_rope():
    """RoPE rotates pairs of a head's coordinates, which keeps the head's ℓ2 norm, so an
    unweighted RMSNorm over the head gives the same before or after it: Llama 4's
    Llama4TextL2Norm after RoPE equals it before. A weighted norm (Qwen3's, before RoPE) does
    not commute: its weight scales the two coordinates of a pair differently. RoPE here is
    Llama 4's apply_rotary_emb with random angles; head_noweight is Llama4TextL2Norm."""
    torch.manual_seed(0)
    q, k = torch.randn(2, 2, 6, H, D // H, dtype=torch.float64)  # (B, T, heads, head_size)
    angles = torch.rand(2, 6, D // H // 2, dtype=torch.float64) * 2 * math.pi
    freqs_cis = torch.polar(torch.ones_like(angles), angles)

    def rope(a, b):
        return hf_llama4.apply_rotary_emb(a, b, freqs_cis)

    weightless = MultiHeadAttention(D, H, qk_norm="head_noweight", eps=1e-5).double()
    llama4 = hf_llama4.Llama4TextL2Norm(eps=1e-5)
    torch.testing.assert_close(weightless.q_norm(q), llama4(q), atol=1e-7, rtol=1e-7)
    n = weightless.q_norm
    after, before = rope(n(q), n(k)), (n(t) for t in rope(q, k))
    for a, b in zip(after, before, strict=True):
        torch.testing.assert_close(a, b, atol=1e-7, rtol=1e-7)  # Llama4's RoPE runs in float32
    weighted = MultiHeadAttention(D, H, qk_norm="head", eps=1e-5).double()
    randomize(weighted)
    n = weighted.q_norm
    assert (rope(n(q), n(k))[0] - n(rope(q, k)[0])).abs().max() > 0.1


def test_one_plus_rmsnorm_is_rmsnorm_with_weight_plus_one():
    """Gemma 3's (1 + w): the same function as RMSNorm with weight 1 + w, the identity scale
    at init (w = 0), and the same gradient in w as RMSNorm's in its weight."""
    norm = OnePlusRMSNorm(D, eps=1e-6).double()
    assert torch.equal(norm.weight, torch.zeros(D, dtype=torch.float64))
    randomize(norm)
    plain = nn.RMSNorm(D, eps=1e-6).double()
    with torch.no_grad():
        plain.weight.copy_(1 + norm.weight)
    x = torch.randn(3, D, dtype=torch.float64)
    torch.testing.assert_close(norm(x), plain(x), atol=1e-14, rtol=1e-14)
    norm(x).square().sum().backward()
    plain(x).square().sum().backward()
    torch.testing.assert_close(norm.weight.grad, plain.weight.grad, atol=1e-12, rtol=1e-12)


# --- qk_norm and softcap against Hugging Face transformers 5.24.0 ---------------------------------
# src/transformers/models/<model>/modeling_<model>.py in .venv (transformers==5.24.0, commit
# 361455895daf94ca66f78cf6792b09af397b4b30). Every config below is built small, random init,
# nothing downloaded; num_key_value_heads = num_attention_heads (no grouped queries, which the
# handbook's attention does not have), attention_bias=False (the models' default), eager
# attention. The handbook's attention has no RoPE: HF's layers get RoPE's identity,
# position_embeddings cos = 1, sin = 0 (a rotation by 0), so a norm "before RoPE" sees the
# same q and k as ours. The causal mask is the additive (1, 1, T, T) mask that HF's eager
# attention adds to the logits, -inf above the diagonal.
# HF casts its norms (and the softmax) to float32 even for float64 input: in float64 the two
# agree to float32's rounding (measured up to 1.4e-6 on outputs of size ~10); in float32 HF's
# additions run in another order. Hence one tolerance for both.
HF_ATTN_TOL = 1e-5
BF16_TOL = 2e-2  # bfloat16 keeps 8 bits: 2^-8 ≈ 4e-3 per rounding, a few roundings deep


def _hf_attention_kwargs(**extra) -> dict:
    return dict(
        hidden_size=D, num_attention_heads=H, num_key_value_heads=H, num_hidden_layers=1,
        rms_norm_eps=1e-6, attention_bias=False, attn_implementation="eager", **extra,
    )  # fmt: skip


def _copy_hf_attention(ours: MultiHeadAttention, theirs: nn.Module) -> None:
    """q_proj, k_proj, v_proj stacked into qkv's rows [W_q; W_k; W_v]; o_proj; q_norm, k_norm."""
    with torch.no_grad():
        ours.qkv.weight.copy_(
            torch.cat([theirs.q_proj.weight, theirs.k_proj.weight, theirs.v_proj.weight])
        )
        ours.proj.weight.copy_(theirs.o_proj.weight)
        if ours.qk_norm is not None:
            ours.q_norm.weight.copy_(theirs.q_norm.weight)
            ours.k_norm.weight.copy_(theirs.k_norm.weight)


def _assert_same_attention(ours, theirs, x, rope_dim=D // H):
    """Outputs and input gradients of the handbook's module and HF's, on one x."""
    x_theirs = x.detach().clone().requires_grad_()
    x = x.detach().clone().requires_grad_()
    y = ours(x)
    y_theirs = theirs(
        x_theirs, position_embeddings=rope_identity(x, rope_dim), attention_mask=hf_causal_mask(x)
    )
    y_theirs = y_theirs[0] if isinstance(y_theirs, tuple) else y_theirs  # attention: (out, weights)
    torch.testing.assert_close(y, y_theirs, atol=HF_ATTN_TOL, rtol=HF_ATTN_TOL)
    g = torch.randn_like(y)
    y.backward(g)
    y_theirs.backward(g)
    torch.testing.assert_close(x.grad, x_theirs.grad, atol=HF_ATTN_TOL, rtol=HF_ATTN_TOL)


# (qk_norm, HF attention class, HF config class, config extras): Gemma's scaling is
# query_pre_attn_scalar ** -0.5, set to head_dim to be 1 / sqrt(head_dim) as ours.
HF_QK_NORMS = {
    "head": (hf_qwen3.Qwen3Attention, transformers.Qwen3Config, dict(head_dim=D // H)),
    "proj": (hf_olmo2.Olmo2Attention, transformers.Olmo2Config, {}),
    "head_1p": (
        hf_gemma3.Gemma3Attention,
        transformers.Gemma3TextConfig,
        dict(head_dim=D // H, query_pre_attn_scalar=D // H, layer_types=["full_attention"]),
    ),
}


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("qk_norm", list(HF_QK_NORMS))
def test_qk_norm_equals_hugging_face(qk_norm, dtype, device):
    """head ↔ Qwen3Attention (models/qwen3/modeling_qwen3.py): q_norm, k_norm =
      Qwen3RMSNorm(head_dim, eps=rms_norm_eps) on q_proj(x).view(..., head_dim), before RoPE;
      x * rsqrt(mean(x²) + eps), then weight * (cast back).
    proj ↔ Olmo2Attention (models/olmo2/modeling_olmo2.py): q_norm = Olmo2RMSNorm(
      num_heads * head_dim), k_norm over num_key_value_heads * head_dim, on the whole q_proj(x)
      and k_proj(x) before the split into heads and before RoPE.
    head_1p ↔ Gemma3Attention (models/gemma3/modeling_gemma3.py): q_norm, k_norm =
      Gemma3RMSNorm(head_dim) per head, output * (1 + weight), weight zero at init, before RoPE.
    eps = rms_norm_eps = 1e-6 on both sides."""
    attention, config_class, extra = HF_QK_NORMS[qk_norm]
    torch.manual_seed(0)
    theirs = attention(config_class(**_hf_attention_kwargs(**extra)), 0)
    if qk_norm == "head_1p":
        assert isinstance(theirs.q_norm, hf_gemma3.Gemma3RMSNorm) and not theirs.q_norm.weight.any()
    randomize(theirs)
    theirs = theirs.to(device=device, dtype=dtype).eval()
    ours = MultiHeadAttention(D, H, causal=True, bias=False, qk_norm=qk_norm, eps=1e-6)
    ours = ours.to(device=device, dtype=dtype)
    _copy_hf_attention(ours, theirs)
    assert {tuple(m.weight.shape) for m in (ours.q_norm, ours.k_norm)} == {
        tuple(theirs.q_norm.weight.shape)
    }
    _assert_same_attention(ours, theirs, torch.randn(2, 6, D, device=device, dtype=dtype))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_softcap_equals_gemma2_attention(dtype, device):
    """softcap ↔ Gemma2Attention (models/gemma2/modeling_gemma2.py) with attn_logit_softcapping
    = 2: its eager_attention_forward scales the logits, then softcap * tanh(s / softcap), then
    adds the mask. Gemma 2 has no q/k norm. c = 2 is below the logits' size with these weights
    (the capped output differs from the uncapped by more than 1e-2, checked)."""
    torch.manual_seed(0)
    extra = dict(head_dim=D // H, query_pre_attn_scalar=D // H, attn_logit_softcapping=2.0)
    theirs = hf_gemma2.Gemma2Attention(
        transformers.Gemma2Config(**_hf_attention_kwargs(**extra, layer_types=["full_attention"])),
        0,
    )
    randomize(theirs)
    theirs = theirs.to(device=device, dtype=dtype).eval()
    ours = MultiHeadAttention(D, H, causal=True, bias=False, softcap=2.0).to(
        device=device, dtype=dtype
    )
    _copy_hf_attention(ours, theirs)
    x = torch.randn(2, 6, D, device=device, dtype=dtype)
    _assert_same_attention(ours, theirs, x)
    plain = MultiHeadAttention(D, H, causal=True, bias=False).to(device=device, dtype=dtype)
    plain.load_state_dict(ours.state_dict())
    assert (plain(x) - ours(x)).abs().max() > 1e-2


# --- Gated attention: MultiHeadAttention(output_gate=...) ---------------------------------------


def _gated_attention_by_formula(attn: MultiHeadAttention, x: torch.Tensor) -> torch.Tensor:
    """Qiu et al.'s gate after attention: O_h = softmax(q_h k_hᵀ / √d) v_h for each head h,
    then proj(concat_h O_h ⊙ sigmoid(x W_g + b_g)), the gate one value per feature of each
    head (elementwise) or one per head (headwise), read from the attention's input x."""
    B, T, C = x.shape
    hs = C // attn.n_heads
    q, k, v = (t.view(B, T, H, hs).transpose(1, 2) for t in attn.qkv(x).split(C, dim=2))
    future = torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1)
    att = ((q @ k.transpose(-2, -1)) / math.sqrt(hs)).masked_fill(future, float("-inf"))
    heads = (att.softmax(dim=-1) @ v).transpose(1, 2)  # (B, T, H, hs)
    g = torch.sigmoid(x @ attn.gate.weight.T + attn.gate.bias)
    g = g.view(B, T, H, hs) if attn.output_gate == "elementwise" else g.unsqueeze(-1)
    return attn.proj((heads * g).reshape(B, T, C))


@pytest.mark.parametrize("output_gate", OUTPUT_GATES)
def test_output_gate_computes_its_formula(output_gate, device):
    torch.manual_seed(0)
    attn = MultiHeadAttention(D, H, causal=True, output_gate=output_gate).to(device)
    randomize(attn)
    n_gates = D if output_gate == "elementwise" else H
    assert tuple(attn.gate.weight.shape) == (n_gates, D)
    x = torch.randn(2, 7, D, device=device)
    y = attn(x)
    torch.testing.assert_close(y, _gated_attention_by_formula(attn, x))
    ungated = MultiHeadAttention(D, H, causal=True).to(device)
    ungated.load_state_dict(attn.state_dict(), strict=False)  # all but the gate
    assert (y - ungated(x)).abs().max() > 1e-2  # the gate acts


def test_headwise_gate_is_an_elementwise_gate_constant_over_each_head():
    """A headwise gate equals the elementwise gate whose rows repeat each head's one row
    head_size times: the two forms differ only in how many values the gate has."""
    torch.manual_seed(0)
    headwise = MultiHeadAttention(D, H, causal=True, output_gate="headwise")
    randomize(headwise)
    elementwise = MultiHeadAttention(D, H, causal=True, output_gate="elementwise")
    state = headwise.state_dict()
    state["gate.weight"] = state["gate.weight"].repeat_interleave(D // H, dim=0)
    state["gate.bias"] = state["gate.bias"].repeat_interleave(D // H)
    elementwise.load_state_dict(state)
    x = torch.randn(2, 7, D)
    torch.testing.assert_close(elementwise(x), headwise(x))


@pytest.mark.parametrize("output_gate", OUTPUT_GATES)
def test_output_gate_leaves_the_default_and_its_draws_alone(output_gate):
    """output_gate=None is the default attention bit for bit, without a gate module or a new
    state_dict entry; with a gate, qkv and proj get the random draws they get without one
    (the gate is built after them). Block and Stack pass the flag to every attention."""
    torch.manual_seed(0)
    plain = MultiHeadAttention(D, H, causal=True)
    torch.manual_seed(0)
    none = MultiHeadAttention(D, H, causal=True, output_gate=None)
    torch.manual_seed(0)
    gated = MultiHeadAttention(D, H, causal=True, output_gate=output_gate)
    assert list(none.state_dict()) == list(plain.state_dict()) and not hasattr(none, "gate")
    x = torch.randn(2, 7, D)
    assert torch.equal(none(x), _attention_as_before(plain, x))
    for name, p in plain.state_dict().items():
        assert torch.equal(gated.state_dict()[name], p)
    assert list(gated.state_dict())[-2:] == ["gate.weight", "gate.bias"]
    assert Block(D, H, FF, causal=True, output_gate=output_gate).attn.sublayer.gate.bias is not None
    assert Block(D, H, FF, bias=False, output_gate=output_gate).attn.sublayer.gate.bias is None
    stack = Stack(2, D, H, FF, causal=True, output_gate=output_gate)
    assert all(layer.attn.sublayer.output_gate == output_gate for layer in stack.layers)


@pytest.mark.parametrize("bad", ["head", "Elementwise", "sigmoid", True, 1])
def test_bad_output_gate_is_named(bad):
    message = re.escape(f"output_gate must be None or one of {OUTPUT_GATES}, got {bad!r}")
    builds = (
        lambda: MultiHeadAttention(D, H, output_gate=bad),
        lambda: Block(D, H, FF, output_gate=bad),
        lambda: Stack(2, D, H, FF, output_gate=bad),
    )
    for build in builds:
        with pytest.raises(ValueError, match=message):
            build()


# Qwen3-Next's and Qwen3.5's attention: one code, two classes (transformers 5.24.0).
HF_GATED = {
    "qwen3_next": (hf_qwen3_next.Qwen3NextAttention, transformers.Qwen3NextConfig),
    "qwen3_5": (hf_qwen3_5.Qwen3_5Attention, transformers.Qwen3_5TextConfig),
}


def _copy_qwen3_next_attention(ours: MultiHeadAttention, theirs: nn.Module) -> None:
    """q_proj's rows come per head as [the query's head_dim rows; the gate's head_dim rows]
    (forward: q_proj(x).view(..., -1, head_dim * 2), then chunk(2, dim=-1)): the query's go to
    qkv with k_proj and v_proj, the gate's to gate."""
    w = theirs.q_proj.weight.view(H, 2, D // H, D)
    with torch.no_grad():
        ours.qkv.weight.copy_(
            torch.cat([w[:, 0].reshape(D, D), theirs.k_proj.weight, theirs.v_proj.weight])
        )
        ours.gate.weight.copy_(w[:, 1].reshape(D, D))
        ours.proj.weight.copy_(theirs.o_proj.weight)
        ours.q_norm.weight.copy_(theirs.q_norm.weight)
        ours.k_norm.weight.copy_(theirs.k_norm.weight)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("model", list(HF_GATED))
def test_output_gate_equals_qwen3_next_attention(model, dtype, device):
    """elementwise ↔ Qwen3NextAttention (models/qwen3_next/modeling_qwen3_next.py) and
    Qwen3_5Attention (models/qwen3_5/modeling_qwen3_5.py): attn_output * sigmoid(gate) before
    o_proj, one gate value per feature, the gate's weights inside q_proj (see
    _copy_qwen3_next_attention). Their q_norm and k_norm (Qwen3NextRMSNorm, Qwen3_5RMSNorm)
    are per-head RMSNorms scaled by 1 + w, w zero at init, computed in float32: qk_norm=
    "head_1p". eps = rms_norm_eps = 1e-6 on both sides; RoPE is the identity. In bfloat16 the
    two round at different places (HF: the softmax in float32, then cast), so outputs agree to
    bfloat16's precision."""
    attention, config_class = HF_GATED[model]
    torch.manual_seed(0)
    config = config_class(**_hf_attention_kwargs(head_dim=D // H, layer_types=["full_attention"]))
    theirs = attention(config, 0)
    assert not theirs.q_norm.weight.any()  # (1 + w), w zero at init
    assert tuple(theirs.q_proj.weight.shape) == (2 * D, D)
    randomize(theirs)
    theirs = theirs.to(device=device, dtype=dtype).eval()
    ours = MultiHeadAttention(
        D, H, causal=True, bias=False, qk_norm="head_1p", eps=1e-6, output_gate="elementwise"
    ).to(device=device, dtype=dtype)
    _copy_qwen3_next_attention(ours, theirs)
    x = torch.randn(2, 6, D, device=device, dtype=dtype)
    if dtype == torch.float32:
        _assert_same_attention(ours, theirs, x)
        return
    with torch.no_grad():
        y = ours(x)
        y_theirs = theirs(
            x, position_embeddings=rope_identity(x, D // H), attention_mask=hf_causal_mask(x)
        )[0]
    torch.testing.assert_close(y, y_theirs, atol=BF16_TOL, rtol=BF16_TOL)


# --- Parallel blocks: Block(parallel=...) ---------------------------------------------------------


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("parallel", PARALLEL)
def test_parallel_block_computes_its_formula(parallel, norm, device):
    """one_norm: x + Attn(N(x)) + MLP(N(x)), one norm module; two_norms: x + Attn(N1(x)) +
    MLP(N2(x)). The one-norm block has one norm's parameters fewer than the sequential one."""
    torch.manual_seed(0)
    block = Block(D, H, FF, causal=True, norm=norm, parallel=parallel).double().to(device)
    randomize(block)
    x = torch.randn(2, 5, D, dtype=torch.float64, device=device)
    n1, n2 = block.attn.norm_in, block.mlp.norm_in
    attn, mlp = block.attn.sublayer, block.mlp.sublayer
    torch.testing.assert_close(block(x), x + attn(n1(x)) + mlp(n2(x)), atol=1e-12, rtol=1e-12)
    assert (n1 is n2) == (parallel == "one_norm")
    serial = Block(D, H, FF, causal=True, norm=norm)
    n_norm = sum(p.numel() for p in n1.parameters())
    count = sum(p.numel() for p in block.parameters())
    assert count == sum(p.numel() for p in serial.parameters()) - n_norm * (parallel == "one_norm")


@pytest.mark.parametrize("residual", ["add", "denseformer"])
def test_parallel_blocks_train_in_a_stack(residual, device):
    torch.manual_seed(0)
    stack = Stack(3, D, H, FF, residual=residual, parallel="one_norm", dropout=0.1, causal=True)
    stack = stack.to(device)
    x = torch.randn(2, 5, D, device=device)
    stack(x).square().mean().backward()
    assert all(p.grad is not None for p in stack.parameters())
    lns = Stack(3, D, H, FF, norm_position="lns", parallel="two_norms").to(device)
    assert torch.isfinite(lns(x)).all()


def test_cohere_layer_norm_has_no_bias():
    """CohereLayerNorm (models/cohere/modeling_cohere.py) takes bias=False and holds only a
    weight; it centres and scales as LayerNorm: nn.LayerNorm(bias=False) is the same."""
    theirs = hf_cohere.CohereLayerNorm(D, eps=1e-5).double()
    assert [n for n, _ in theirs.named_parameters()] == ["weight"]
    randomize(theirs)
    ours = make_norm("layernorm", D, eps=1e-5, bias=False).double()
    ours.load_state_dict(theirs.state_dict())
    x = torch.randn(3, D, dtype=torch.float64)
    torch.testing.assert_close(ours(x), theirs(x), atol=1e-6, rtol=1e-6)  # HF: float32 inside


def _assert_same_layer(ours: Block, theirs: nn.Module, x: torch.Tensor, rope_dim: int) -> None:
    x_theirs = x.detach().clone().requires_grad_()
    x = x.detach().clone().requires_grad_()
    y = ours(x)
    y_theirs = theirs(
        x_theirs, attention_mask=hf_causal_mask(x), position_embeddings=rope_identity(x, rope_dim)
    )
    torch.testing.assert_close(y, y_theirs, atol=HF_ATTN_TOL, rtol=HF_ATTN_TOL)
    g = torch.randn_like(y)
    y.backward(g)
    y_theirs.backward(g)
    torch.testing.assert_close(x.grad, x_theirs.grad, atol=HF_ATTN_TOL, rtol=HF_ATTN_TOL)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_parallel_one_norm_equals_cohere_decoder_layer(dtype, device):
    """Block(parallel="one_norm", bias=False) ↔ CohereDecoderLayer (models/cohere/
    modeling_cohere.py): h = input_layernorm(x); x + self_attn(h) + mlp(h), one CohereLayerNorm
    (no bias, eps = layer_norm_eps = 1e-5) read by both sublayers.
    Configured on the HF side: use_qk_norm=False (its default), attention_bias=False (default),
    RoPE's identity (Cohere's RoPE is interleaved; cos = 1, sin = 0 is the identity all the same).
    Stubbed: Cohere's MLP is gated (down(silu(gate(h)) * up(h)), no biases), which the handbook's
    FeedForward is not; the block's feed-forward sublayer is that same CohereMLP module, so both
    sides run one MLP and the test checks the norm, the attention and the parallel sum."""
    torch.manual_seed(0)
    config = transformers.CohereConfig(**_hf_attention_kwargs(intermediate_size=FF))
    assert (config.use_qk_norm, config.layer_norm_eps) == (False, 1e-5)
    theirs = hf_cohere.CohereDecoderLayer(config, 0)
    randomize(theirs)
    theirs = theirs.to(device=device, dtype=dtype).eval()
    ours = Block(D, H, FF, causal=True, bias=False, parallel="one_norm", eps=config.layer_norm_eps)
    ours = ours.to(device=device, dtype=dtype).eval()
    _copy_hf_attention(ours.attn.sublayer, theirs.self_attn)
    with torch.no_grad():
        ours.attn.norm_in.weight.copy_(theirs.input_layernorm.weight)
    ours.mlp.sublayer = theirs.mlp
    _assert_same_layer(ours, theirs, torch.randn(2, 6, D, device=device, dtype=dtype), D // H)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("use_parallel_residual", [True, False])
def test_parallel_two_norms_equals_gpt_neox_layer(use_parallel_residual, dtype, device):
    """Block(parallel="two_norms") ↔ GPTNeoXLayer (models/gpt_neox/modeling_gpt_neox.py) with
    use_parallel_residual=True: x + attention(input_layernorm(x)) +
    mlp(post_attention_layernorm(x)), two nn.LayerNorm (eps = layer_norm_eps = 1e-5). With
    use_parallel_residual=False the same layer is the sequential Pre-LN block, Block's default.
    Nothing stubbed: GPTNeoXMLP is Linear, GELU (hidden_act "gelu", exact), Linear, with biases,
    as FeedForward; attention_bias=True (its default). Configured: hidden_dropout =
    attention_dropout = 0 (their defaults) and RoPE's identity over its rotary_ndims. Its
    query_key_value holds each head's [q; k; v] rows together: regrouped into [W_q; W_k; W_v]."""
    torch.manual_seed(0)
    config = transformers.GPTNeoXConfig(
        hidden_size=D, num_attention_heads=H, intermediate_size=FF, num_hidden_layers=1,
        use_parallel_residual=use_parallel_residual, attn_implementation="eager",
    )  # fmt: skip
    assert (config.hidden_act, config.layer_norm_eps, config.hidden_dropout) == ("gelu", 1e-5, 0)
    theirs = hf_neox.GPTNeoXLayer(config, 0)
    randomize(theirs)
    theirs = theirs.to(device=device, dtype=dtype).eval()
    parallel = "two_norms" if use_parallel_residual else None
    ours = Block(D, H, FF, causal=True, parallel=parallel).to(device=device, dtype=dtype).eval()
    qkv, hs = theirs.attention.query_key_value, D // H
    with torch.no_grad():
        ours.attn.sublayer.qkv.weight.copy_(
            qkv.weight.view(H, 3, hs, D).transpose(0, 1).reshape(3 * D, D)
        )
        ours.attn.sublayer.qkv.bias.copy_(qkv.bias.view(H, 3, hs).transpose(0, 1).reshape(3 * D))
    pairs = {
        ours.attn.sublayer.proj: theirs.attention.dense,
        ours.attn.norm_in: theirs.input_layernorm,
        ours.mlp.norm_in: theirs.post_attention_layernorm,
        ours.mlp.sublayer.fc: theirs.mlp.dense_h_to_4h,
        ours.mlp.sublayer.proj: theirs.mlp.dense_4h_to_h,
    }
    for mine, hf in pairs.items():
        mine.load_state_dict(hf.state_dict())
    x = torch.randn(2, 6, D, device=device, dtype=dtype)
    _assert_same_layer(ours, theirs, x, theirs.attention.rotary_ndims)


# --- Norms in attention and parallel blocks: bad input --------------------------------------------


def test_bad_attention_and_parallel_configuration_is_named():
    with pytest.raises(ValueError, match=r"d_model \(18\) must be divisible by n_heads \(4\)"):
        MultiHeadAttention(18, 4, qk_norm="head")
    with pytest.raises(ValueError, match=r"d_model \(18\) must be divisible by n_heads \(4\)"):
        Block(18, 4, FF, parallel="one_norm")
    with pytest.raises(
        ValueError,
        match=r"qk_norm must be None or one of \('head', 'head_1p', 'head_noweight', 'proj', "
        r"'l2'\), got 'layernorm'",
    ):
        MultiHeadAttention(D, H, qk_norm="layernorm")
    with pytest.raises(ValueError, match=r"qk_norm must be None or one of .* got 'rms'"):
        Block(D, H, FF, qk_norm="rms")
    with pytest.raises(ValueError, match=r"qk_norm='l2' needs qk_scale, .* got None"):
        MultiHeadAttention(D, H, qk_norm="l2")
    with pytest.raises(ValueError, match="qk_scale is for qk_norm='l2', got qk_norm='head'"):
        MultiHeadAttention(D, H, qk_norm="head", qk_scale=10.0)
    with pytest.raises(
        ValueError,
        match="eps is for a qk_norm, v_norm or o_norm, got qk_norm=None, v_norm=False, "
        "o_norm=False and eps=1e-06",
    ):
        MultiHeadAttention(D, H, eps=1e-6)
    for bad in (0, -1.0, float("nan"), float("inf"), True, "2"):
        with pytest.raises(ValueError, match=f"softcap must be a positive float, got {bad!r}"):
            MultiHeadAttention(D, H, softcap=bad)
    with pytest.raises(
        ValueError, match=r"parallel must be None or one of \('one_norm', 'two_norms'\), got True"
    ):
        Block(D, H, FF, parallel=True)
    with pytest.raises(ValueError, match=r"parallel must be None or one of .* got 'gptj'"):
        Block(D, H, FF, parallel="gptj")
    for position in ("post", "sandwich", "output", "deepnorm", "rezero"):
        with pytest.raises(
            ValueError, match=f"parallel='two_norms' needs norm_position='pre', got '{position}'"
        ):
            Block(D, H, FF, norm_position=position, parallel="two_norms")
    with pytest.raises(ValueError, match="needs norm_position='pre', got 'post'"):
        Stack(4, D, H, FF, norm_position="mixln", parallel="one_norm")  # Mix-LN's Post-LN layers
    for residual in BRANCH_RESIDUALS:
        with pytest.raises(
            ValueError,
            match=re.escape(
                f"residual='{residual}' needs parallel in (None,), got 'one_norm': "
                "it calls the sublayers in turn"
            ),
        ):
            Stack(2, D, H, FF, residual=residual, parallel="one_norm")
    with pytest.raises(
        ValueError, match=r"norm must be one of \(.*'rmsnorm_noweight'\), got 'erf'"
    ):
        Block(D, H, FF, norm="erf")
    with pytest.raises(ValueError, match="Derf has no eps, got eps=1e-06"):
        make_norm("derf", D, eps=1e-6)
    with pytest.raises(ValueError, match="normalized_shape must be a positive int, got 0"):
        Derf(0)
    with pytest.raises(
        ValueError, match=r"expected input of shape \(batch, seq_len, 16\), got \(2, 8\)"
    ):
        Block(D, H, FF, parallel="one_norm")(torch.randn(2, 8))


# --- Settings reach every submodule; numbers that can only give NaN are refused ------------------
# An outside suite compared the module with transformers and found settings that stopped short
# of a submodule with the same knob, numeric arguments that could only give NaN, meaningless
# combinations that ran, and errors that named a value the caller never gave.


def _norm_eps(stack: nn.Module) -> list:
    """The eps of every norm in a module: the layers', and the mixing norm of each connection."""
    found = [m.eps for m in stack.modules() if isinstance(m, (nn.LayerNorm, nn.RMSNorm))]
    return found + [m.norm_eps for m in stack.modules() if isinstance(m, HyperConnection)]


def test_stack_eps_reaches_every_norm():
    for residual in RESIDUALS:
        for norm in ("layernorm", "rmsnorm"):
            stack = Stack(2, D, H, FF, residual=residual, norm=norm, eps=1e-3, qk_norm="head")
            found = _norm_eps(stack)
            assert len(found) > 4 and set(found) == {1e-3}, (residual, norm, found)


def test_stack_eps_reaches_the_mhc_norm_as_deepseek_v4s_one_rms_norm_eps():
    """DeepSeek-V4 uses one rms_norm_eps for its layer norms and the mixing norm. At inputs of
    scale 1e-3 the eps matters: with the old 1e-6 kept, the output was 8% away."""
    torch.manual_seed(0)
    config = _v4_config()
    config.rms_norm_eps = 1e-5
    theirs = hf_v4.DeepseekV4HyperConnection(config).double()
    randomize(theirs)
    ours = Stack(1, D, H, FF, residual="mhc", norm="rmsnorm", eps=1e-5).double()
    _copy_mhc(ours.connections[0], theirs)
    h = 1e-3 * torch.randn(3, 5, 4, D, dtype=torch.float64)
    post, comb, collapsed = theirs(h)
    x, our_post, our_comb = ours.connections[0].collapse(h)
    tol = HF_TOL[torch.float64]
    torch.testing.assert_close(our_post, post.to(our_post.dtype), atol=tol, rtol=tol)
    torch.testing.assert_close(our_comb, comb.to(our_comb.dtype), atol=tol, rtol=tol)
    torch.testing.assert_close(x, collapsed, atol=tol, rtol=tol)
    assert ours.head.norm_eps == 1e-5


def test_stack_bias_and_hyper_connection_settings_arrive():
    hc = Stack(2, D, H, FF, residual="hc", bias=False)
    assert not [name for name, _ in hc.named_parameters() if name.endswith(".bias")]
    assert HyperConnection(D, norm_eps=1e-3).norm.eps == 1e-3  # HC's LayerNorm
    assert HyperConnection(D, bias=False).norm.bias is None
    # defaults as before: DeepSeek-V4's for mHC, nn.LayerNorm's for HC
    assert HyperConnection(D).norm.eps == 1e-5 and HyperConnection(D).norm.bias is not None
    mhc = HyperConnection(D, constrained=True)
    assert (mhc.eps, mhc.norm_eps, mhc.sinkhorn_iters) == (1e-6, 1e-6, 20)
    assert Stack(2, D, H, FF, residual="hc").n_streams == 4


def test_hyper_connection_refuses_settings_its_variant_does_not_have():
    cases = [
        (dict(eps=1e-3), "HC has no eps, got eps=0.001"),
        (dict(sinkhorn_iters=5), "HC has no sinkhorn_iters, got sinkhorn_iters=5"),
        (dict(constrained=True, layer_index=3), "mHC has no layer_index, got layer_index=3"),
        (dict(constrained=True, bias=False), "mHC has no bias, got bias=False"),
        (
            dict(constrained=True, head=True, sinkhorn_iters=5),
            "mHC's head has no sinkhorn_iters, got sinkhorn_iters=5",
        ),
        (dict(dynamic=False, norm_eps=1e-5), "static HC has no norm_eps, got norm_eps=1e-05"),
        (dict(dynamic=False, bias=False), "static HC has no bias, got bias=False"),
    ]
    for kwargs, message in cases:
        with pytest.raises(ValueError, match=f"^{message}$"):
            HyperConnection(D, **kwargs)


def test_stack_refuses_a_setting_it_would_overwrite_or_drop():
    with pytest.raises(
        ValueError, match=r"a 'deepnorm' stack sets DeepNet's alpha itself, got alpha=3\.0"
    ):
        Stack(2, D, H, FF, norm_position="deepnorm", alpha=3.0)
    with pytest.raises(ValueError, match=r"sets pre_scale per layer .* got pre_scale=0\.5"):
        Stack(2, D, H, FF, norm_position="lns", pre_scale=0.5)
    # ReZero has no norm: its eps is refused unless a final norm or a qk_norm takes it
    with pytest.raises(ValueError, match=r"norm_position='rezero' has no norm, got eps=0\.001"):
        Stack(2, D, H, FF, norm_position="rezero", eps=1e-3)
    with pytest.raises(ValueError, match=r"norm_position='rezero' has no norm, got eps=0\.001"):
        Block(D, H, FF, norm_position="rezero", eps=1e-3)
    assert Stack(2, D, H, FF, norm_position="rezero", final_norm=True, eps=1e-3).norm_f.eps == 1e-3
    block = Block(D, H, FF, norm_position="rezero", qk_norm="head", eps=1e-3)
    assert _norm_eps(block) == [1e-3, 1e-3]  # q_norm, k_norm


def test_one_plus_rms_norm_forms_its_scale_in_float32():
    """Gemma3RMSNorm forms 1 + w in float32: in bfloat16, 1 + 0.003 rounds to 1."""
    torch.manual_seed(0)
    ours, theirs = OnePlusRMSNorm(64, eps=1e-6), hf_gemma3.Gemma3RMSNorm(64, eps=1e-6)
    ours, theirs = ours.to(torch.bfloat16), theirs.to(torch.bfloat16)
    with torch.no_grad():
        ours.weight.fill_(0.003)
        theirs.weight.fill_(0.003)
    x = torch.randn(8, 64)
    scale = ours(x) / F.rms_norm(x, (64,), eps=1e-6)
    torch.testing.assert_close(scale, torch.full_like(x, 1 + ours.weight[0].item()))
    assert abs(scale.mean().item() - 1.003) < 1e-4  # not 1.0
    torch.testing.assert_close(ours(x), theirs(x), atol=0, rtol=1e-6)
    xb = x.bfloat16()
    assert ours(xb).dtype == torch.bfloat16 and torch.equal(ours(xb), theirs(xb))
    # float32 and float64, the defaults: the same numbers as before, bit for bit
    for dtype in (torch.float32, torch.float64):
        norm = OnePlusRMSNorm(64, eps=1e-6).to(dtype)
        with torch.no_grad():
            norm.weight.normal_(0.0, 0.05)
        xd = x.to(dtype)
        assert torch.equal(norm(xd), F.rms_norm(xd, (64,), 1 + norm.weight, 1e-6))


BAD_EPS = [0, 0.0, -1e-6, float("nan"), float("inf")]


def _eps_takers(eps):
    """Every constructor that takes an eps a norm divides by, as (name, build)."""
    yield "make_norm layernorm", lambda: make_norm("layernorm", D, eps=eps)
    yield "make_norm rmsnorm", lambda: make_norm("rmsnorm", D, eps=eps)
    yield "Residual", lambda: Residual(nn.Identity(), D, eps=eps)
    yield "Block", lambda: Block(D, H, FF, norm="rmsnorm", eps=eps)
    yield "Stack", lambda: Stack(2, D, H, FF, eps=eps)
    for qk_norm in QK_NORMS:
        extra = {"qk_scale": 10.0} if qk_norm == "l2" else {}
        yield (
            f"qk_norm={qk_norm}",
            lambda q=qk_norm, e=extra: MultiHeadAttention(D, H, qk_norm=q, eps=eps, **e),
        )
    yield "v_norm", lambda: MultiHeadAttention(D, H, v_norm=True, eps=eps)
    yield "OnePlusRMSNorm", lambda: OnePlusRMSNorm(D, eps=eps)
    yield "DepthAttention", lambda: DepthAttention(D, eps=eps)
    yield "HC norm_eps", lambda: HyperConnection(D, norm_eps=eps)
    yield "mHC norm_eps", lambda: HyperConnection(D, constrained=True, norm_eps=eps)
    yield "mHC eps", lambda: HyperConnection(D, constrained=True, eps=eps)


@pytest.mark.parametrize("eps", BAD_EPS, ids=repr)
def test_every_eps_is_a_finite_number_above_zero(eps):
    """eps <= 0 gives 0/0 on a zero input, NaN or inf everywhere: each is refused, naming the
    argument and the value given."""
    for where, build in _eps_takers(eps):
        with pytest.raises(ValueError, match=rf"eps must be .*finite number > 0, got {eps!r}$"):
            build()
            pytest.fail(f"{where} took eps={eps!r}")
    with pytest.raises(TypeError, match="eps must be None or a finite number > 0, got str '1e-5'"):
        make_norm("rmsnorm", D, eps="1e-5")


def test_other_numeric_settings_refuse_nan_and_meaningless_values():
    nan, inf = float("nan"), float("inf")
    cases = [
        (lambda v: MultiHeadAttention(D, H, qk_norm="l2", qk_scale=v), "qk_scale", [nan, inf, 0]),
        (lambda v: Residual(nn.Identity(), D, "post", alpha=v), "alpha", [nan, inf, 0.0]),
        (lambda v: Residual(nn.Identity(), D, "pre", pre_scale=v), "pre_scale", [nan, inf, 0.0]),
        (lambda v: Residual(nn.Identity(), D, dropout=v), "dropout", [nan, -0.1, 1.5]),
        (lambda v: MultiHeadAttention(D, H, dropout=v), "dropout", [nan]),
        (lambda v: FeedForward(D, FF, dropout=v), "dropout", [nan]),
        (lambda v: Stack(2, D, H, FF, dropout=v), "dropout", [nan]),
        (lambda v: DyT(D, alpha_init=v), "alpha_init", [nan, 0.0]),
        (lambda v: Derf(D, shift_init=v), "shift_init", [nan, inf]),
    ]
    for build, name, values in cases:
        for v in values:
            with pytest.raises(
                ValueError, match=rf"^{name} must be (None or )?a finite number.* got {v!r}$"
            ):
                build(v)
    with pytest.raises(
        ValueError,
        match=r"^alpha must be a finite number > 0 in every entry, got alpha\[1\] = nan$",
    ):
        Residual(nn.Identity(), 2, "post", alpha=torch.tensor([1.0, nan]))


# --- A tensor alpha is checked as strictly as a float one ----------------------------------------


def _alpha_with(entries: dict[int, float]) -> torch.Tensor:
    """One alpha per feature, 1 except at the given entries."""
    alpha = torch.ones(D)
    for i, v in entries.items():
        alpha[i] = v
    return alpha


_SHAPES = f"a float or a floating tensor of shape (), (1,) or ({D},)"
# label -> (the alpha, error type, the whole message); labels are the test ids
BAD_ALPHA_TENSORS = {
    "negative scalar": (lambda: torch.tensor(-1.0), ValueError,
                        "alpha must be a finite number > 0 in every entry, got alpha = -1.0"),
    "zero scalar": (lambda: torch.tensor(0.0), ValueError,
                    "alpha must be a finite number > 0 in every entry, got alpha = 0.0"),
    "negative (1,)": (lambda: torch.tensor([-2.0]), ValueError,
                      "alpha must be a finite number > 0 in every entry, got alpha[0] = -2.0"),
    "one negative, one zero feature": (
        lambda: _alpha_with({3: -2.0, 7: 0.0}), ValueError,
        "alpha must be a finite number > 0 in every entry, got alpha[3] = -2.0, alpha[7] = 0.0"),
    "every feature negative": (
        lambda: torch.full((D,), -0.5), ValueError,
        "alpha must be a finite number > 0 in every entry, got alpha[0] = -0.5, "
        "alpha[1] = -0.5, alpha[2] = -0.5, alpha[3] = -0.5 and 12 more"),
    "nan and infinite features": (
        lambda: _alpha_with({1: NAN, 2: INF, 5: -INF}), ValueError,
        "alpha must be a finite number > 0 in every entry, got alpha[1] = nan, alpha[2] = inf, "
        "alpha[5] = -inf"),
    "nan scalar": (lambda: torch.tensor(NAN), ValueError,
                   "alpha must be a finite number > 0 in every entry, got alpha = nan"),
    "(d_model, 1), which broadcasts": (lambda: torch.ones(D, 1), ValueError,
                                       f"alpha must be {_SHAPES}, got a tensor of shape ({D}, 1)"),
    "(1, d_model)": (lambda: torch.ones(1, D), ValueError,
                     f"alpha must be {_SHAPES}, got a tensor of shape (1, {D})"),
    "(2, d_model)": (lambda: torch.ones(2, D), ValueError,
                     f"alpha must be {_SHAPES}, got a tensor of shape (2, {D})"),
    "too long": (lambda: torch.ones(D + 1), ValueError,
                 f"alpha must be {_SHAPES}, got a tensor of shape ({D + 1},)"),
    "too short": (lambda: torch.ones(D // 2), ValueError,
                  f"alpha must be {_SHAPES}, got a tensor of shape ({D // 2},)"),
    "empty": (lambda: torch.ones(0), ValueError,
              f"alpha must be {_SHAPES}, got a tensor of shape (0,)"),
    "int64": (lambda: torch.ones(D, dtype=torch.long), TypeError,
              f"alpha must be {_SHAPES}, got a tensor of dtype torch.int64, shape ({D},)"),
    "int32 scalar": (lambda: torch.tensor(2, dtype=torch.int32), TypeError,
                     f"alpha must be {_SHAPES}, got a tensor of dtype torch.int32, shape ()"),
    "bool": (lambda: torch.ones(D, dtype=torch.bool), TypeError,
             f"alpha must be {_SHAPES}, got a tensor of dtype torch.bool, shape ({D},)"),
    "complex": (lambda: torch.ones(D, dtype=torch.complex64), TypeError,
                f"alpha must be {_SHAPES}, got a tensor of dtype torch.complex64, shape ({D},)"),
    "int64 of a wrong shape": (
        lambda: torch.ones(D, 1, dtype=torch.long), TypeError,
        f"alpha must be {_SHAPES}, got a tensor of dtype torch.int64, shape ({D}, 1)"),
}  # fmt: skip
# every placement that takes alpha, and the classes that hand it on
ALPHA_TAKERS = {
    "Residual post": lambda a: Residual(nn.Identity(), D, "post", alpha=a),
    "Residual deepnorm": lambda a: Residual(nn.Identity(), D, "deepnorm", alpha=a),
    "Residual normed_skip": lambda a: Residual(nn.Identity(), D, "normed_skip", alpha=a),
    "Block post": lambda a: Block(D, H, FF, norm_position="post", alpha=a),
    "Block normed_skip": lambda a: Block(D, H, FF, norm_position="normed_skip", alpha=a),
    "Stack post": lambda a: Stack(2, D, H, FF, norm_position="post", alpha=a),
    "Stack normed_skip": lambda a: Stack(2, D, H, FF, norm_position="normed_skip", alpha=a),
}


@pytest.mark.parametrize("case", list(BAD_ALPHA_TENSORS))
@pytest.mark.parametrize("taker", list(ALPHA_TAKERS))
def test_a_bad_tensor_alpha_is_refused_naming_what_came(taker, case):
    """A negative or zero tensor would flip or drop the skip, as -1.0 and 0.0 would; a (d_model, 1)
    tensor would broadcast (B, 1, C) into (B, C, C); a wrong length or an integer dtype would fail
    inside torch. Each is refused, naming what was expected and what came."""
    make, error, message = BAD_ALPHA_TENSORS[case]
    with pytest.raises(error, match=f"^{re.escape(message)}$"):
        ALPHA_TAKERS[taker](make())


def test_tensors_are_refused_where_only_a_float_acts():
    """pre_scale, branch_scale and layer_scalar take numbers only, a tensor is refused by type."""
    cases = [
        (lambda: Residual(nn.Identity(), D, "pre", pre_scale=torch.tensor(0.5)),
         "pre_scale must be a float, got Tensor"),
        (lambda: Residual(nn.Identity(), D, "normed_skip", branch_scale=torch.ones(D)),
         "branch_scale must be a finite number > 0, got Tensor tensor("),
        (lambda: Block(D, H, FF, norm_position="normed_skip", branch_scale=torch.tensor(-1.0)),
         "branch_scale must be a finite number > 0, got Tensor tensor(-1.)"),
        (lambda: Block(D, H, FF, layer_scalar=torch.tensor(0.0)),
         "layer_scalar must be None or a finite number, got Tensor tensor(0.)"),
    ]  # fmt: skip
    for build, message in cases:
        with pytest.raises(TypeError, match=f"^{re.escape(message)}"):
            build()


@pytest.mark.parametrize("position", ["post", "deepnorm", "normed_skip"])
def test_a_float_alpha_equals_a_scalar_and_a_per_feature_tensor(position, device):
    """alpha = 1.7, tensor(1.7), tensor([1.7]) and 1.7 in each of d_model features give the same
    output, on a (3, 1, d_model) input as on any: the shape comes out as it went in."""
    forms = {
        "float": 1.7,
        "()": torch.tensor(1.7),
        "(1,)": torch.tensor([1.7]),
        "(d_model,)": torch.full((D,), 1.7),
        "(d_model,) float64": torch.full((D,), 1.7, dtype=torch.float64),
        "(d_model,) bfloat16": torch.full((D,), 1.7, dtype=torch.bfloat16),
    }
    x = torch.randn(3, 1, D, device=device)
    outputs = {}
    for name, alpha in forms.items():
        torch.manual_seed(0)
        r = Residual(nn.Linear(D, D), D, position, norm="rmsnorm", alpha=alpha).to(device)
        randomize(r.sublayer)
        if isinstance(alpha, torch.Tensor):  # a parameter in the module's dtype, as Admin's omega
            assert isinstance(r.alpha, nn.Parameter) and r.alpha.dtype == torch.float32
            assert r.alpha.shape == alpha.shape
        outputs[name] = r(x)
        assert outputs[name].shape == x.shape and outputs[name].dtype == x.dtype
    bf16 = outputs.pop("(d_model,) bfloat16")  # 1.7 in bfloat16 is 1.703125
    for name, y in outputs.items():
        torch.testing.assert_close(y, outputs["float"], atol=0, rtol=0, msg=name)
    assert not torch.equal(bf16, outputs["float"])
    r = Residual(nn.Identity(), D, position, alpha=torch.full((D,), 1.7)).double()
    assert r.alpha.dtype == torch.float64  # .to() moves alpha with the other parameters


def test_a_tensor_alpha_reaches_every_layer_as_given():
    """Through Block and Stack a good tensor alpha arrives, checked, in each Residual, which
    trains its own copy."""
    alpha = torch.linspace(1.0, 2.0, D)
    stack = Stack(2, D, H, FF, norm_position="normed_skip", alpha=alpha)
    residuals = [r for layer in stack.layers for r in (layer.attn, layer.mlp)]
    assert all(torch.equal(r.alpha, alpha) for r in residuals)
    assert len({id(r.alpha) for r in residuals}) == 4
    block = Block(D, H, FF, norm_position="post", alpha=torch.tensor([1.5]))
    assert block.attn.alpha.shape == (1,) and block.mlp.alpha.item() == 1.5


def test_sinkhorn_refuses_an_eps_that_divides_by_zero():
    for bad in (float("inf"), float("nan"), -1.0):
        with pytest.raises(ValueError, match=f"eps must be .*>= 0, got {bad}"):
            sinkhorn_knopp(torch.zeros(3, 3), eps=bad)
    with pytest.raises(TypeError, match="eps must be a finite number >= 0, got str"):
        sinkhorn_knopp(torch.zeros(3, 3), eps="0")
    logits = torch.zeros(2, 3, 3)
    logits[1, :, 0] = -200.0  # float32 exp(-200) is 0: column 0 of the softmax is all zeros
    with pytest.raises(ValueError, match=r"eps=0 divides by 0 on these logits.* use eps > 0"):
        sinkhorn_knopp(logits, eps=0.0)
    assert torch.isfinite(sinkhorn_knopp(logits)).all()  # the default eps copes
    assert torch.isfinite(sinkhorn_knopp(torch.randn(3, 3), eps=0)).all()  # the plain iteration


def _stack_is_meaningful(residual, position, parallel, n_streams, block_size) -> bool:
    """The rule the combinations of Stack's flags follow: every flag given must act."""
    if n_streams is not None and residual not in ("hc", "mhc", "ihc", "gated_streams"):
        return False
    if residual == "gated_streams" and position != "pre":
        return False  # its connections are F's input norm (Qwen4-Exp)
    if block_size is not None and residual != "attnres":
        return False
    if residual in BRANCH_RESIDUALS and position not in BRANCH_POSITIONS:
        return False  # the sublayers see only their branches
    if parallel is not None:  # both sublayers read x; every layer Pre-LN (lns: scaled Pre-LN)
        return residual in ("add", "denseformer") and position in ("pre", "lns")
    return True


def test_stack_refuses_every_meaningless_combination_naming_what_was_given():
    """Every combination of Stack's flags is built or refused; a refusal names a value the
    caller gave, never a placement the caller did not choose."""
    combinations = itertools.product(
        RESIDUALS, STACK_POSITIONS, (None, *PARALLEL), (None, 4), (None, 2)
    )
    for flags in combinations:
        names = ("residual", "norm_position", "parallel", "n_streams", "block_size")
        given = {k: v for k, v in zip(names, flags, strict=True) if v is not None}
        if _stack_is_meaningful(*flags):
            Stack(4, D, H, FF, **given)
            continue
        with pytest.raises(ValueError) as err:
            Stack(4, D, H, FF, **given)
            pytest.fail(f"accepted {given}")
        message, position = str(err.value), given["norm_position"]
        assert any(repr(v) in message for v in given.values()), (given, message)
        for other in STACK_POSITIONS:  # Mix-LN's message may add where its 'post' comes from
            if f"got {other!r}" in message:
                assert other == position or repr(position) in message, (given, message)


def test_errors_name_the_value_that_was_given():
    with pytest.raises(ValueError, match=r"parallel='one_norm' with norm_position='mixln'"):
        Stack(4, D, H, FF, norm_position="mixln", parallel="one_norm")
    for position in ("mixln", "lns", "pre"):
        with pytest.raises(ValueError, match=f"alpha scales the skip .* only, got '{position}'"):
            Stack(4, D, H, FF, norm_position=position, alpha=2.0)
    with pytest.raises(ValueError, match="norm_eps must be a finite number > 0, got -1"):
        HyperConnection(D, constrained=True, norm_eps=-1)
    attn = MultiHeadAttention(D, H)  # called directly, it checks its input as Block does
    with pytest.raises(
        ValueError, match=r"expected input of shape \(batch, seq_len, 16\), got \(2, 16\)"
    ):
        attn(torch.randn(2, D))
    with pytest.raises(
        ValueError, match=r"expected input of shape \(batch, seq_len, 16\), got \(2, 3, 8\)"
    ):
        attn(torch.randn(2, 3, 8))
    with pytest.raises(
        TypeError, match=r"expected a floating-point tensor, got dtype torch\.int64"
    ):
        attn(torch.zeros(2, 3, D, dtype=torch.long))


def test_sinkhorn_accuracy_is_what_the_docstrings_state():
    """The rows of 20 iterations are off by what sinkhorn_knopp's docstring states; the
    columns, normalized last, hold to about eps. So the spectral norm exceeds 1 a little,
    while each new stream stays a convex combination of the old ones."""
    measured = {}
    for std in (1.0, 10.0):
        logits = std * torch.randn(100_000, 4, 4, generator=torch.Generator().manual_seed(0))
        p = sinkhorn_knopp(logits)
        rows, cols = (p.sum(-1) - 1).abs().amax().item(), (p.sum(-2) - 1).abs().amax().item()
        spectral = torch.linalg.matrix_norm(p.double(), ord=2).amax().item()
        measured[std] = rows, cols, spectral
        assert cols < 2e-6
    assert measured[1.0][0] <= 0.0015 and round(100 * measured[10.0][0], 1) == 8.3
    assert round(measured[10.0][2], 3) == 1.021
    doc = " ".join(sinkhorn_knopp.__doc__.split())
    assert "std 1, rows off by at most 0.15%; std 10, by up to 8.3%" in doc
    assert "the spectral norm reaches 1.021 instead of 1" in doc
    assert "spectral norm 1, so" not in " ".join(HyperConnection.__doc__.split())


def test_attention_states_what_eps_none_means():
    """eps=None leaves the qk_norm's RMSNorm with torch's default, float32's machine epsilon
    for float32, float16 and bfloat16 input alike; the docstring says so."""
    doc = " ".join(MultiHeadAttention.__doc__.split())
    assert "eps=None keeps PyTorch's default" in doc and "1.19e-7" in doc
    attn = MultiHeadAttention(D, H, qk_norm="head_noweight", eps=None)
    tiny = torch.full((1, 1, 1, D // H), 1e-4)
    expected = 1e-4 / math.sqrt(1e-8 + torch.finfo(torch.float32).eps)
    for dtype in (torch.float32, torch.bfloat16):
        got = attn.q_norm(tiny.to(dtype)).float()
        torch.testing.assert_close(got, torch.full_like(got, expected), rtol=4e-3, atol=0)
    assert round(torch.finfo(torch.float32).eps, 9) == 1.19e-7


# --- Gemma 4 and MiniMax: v_norm, scale, layer_scalar, normed_skip -------------------------------
# Reference code: transformers 5.24.0, models/gemma4/modeling_gemma4.py (Gemma4RMSNorm,
# Gemma4TextAttention, Gemma4TextDecoderLayer) and models/minimax/modeling_minimax.py
# (MiniMaxRMSNorm, MiniMaxAttention, MiniMaxDecoderLayer, MiniMaxModel).


def _residual_as_before(r: Residual, x: torch.Tensor) -> torch.Tensor:
    """Residual.forward as it was before normed_skip and branch_scale existed."""
    h = r.branch(x)
    if r.norm_position == "rezero":
        return x + r.alpha * h
    if r.norm_out is not None:
        skip = x if isinstance(r.alpha, float) and r.alpha == 1.0 else r.alpha * x
        return r.norm_out(skip + h)
    return x + h


@pytest.mark.parametrize("position", [p for p in POSITIONS if p != "normed_skip"])
def test_placements_before_normed_skip_are_unchanged_bit_for_bit(position):
    """The new arguments at their defaults (branch_scale=1, v_norm=False, scale=None,
    layer_scalar=None) leave every earlier placement's output as it was, bit for bit, and add
    nothing to the state_dict."""
    torch.manual_seed(0)
    alpha = 1.7 if position == "deepnorm" else 1.0
    r = Residual(nn.Linear(D, D), D, position, alpha=alpha, dropout=0.1).train()
    randomize(r)
    x = torch.randn(2, 5, D)
    torch.manual_seed(1)
    y = r(x)
    torch.manual_seed(1)
    assert torch.equal(y, _residual_as_before(r, x))
    torch.manual_seed(0)
    plain = Block(D, H, FF, norm_position=position, causal=True)
    torch.manual_seed(0)
    given = Block(
        D, H, FF, norm_position=position, causal=True, v_norm=False, scale=None,
        branch_scale=1.0, layer_scalar=None,
    )  # fmt: skip
    assert list(given.state_dict()) == list(plain.state_dict())
    assert given.layer_scalar is None and given.attn.sublayer.v_norm is None
    assert torch.equal(given(x), plain(x))


def _attention_with_sdpa(attn: MultiHeadAttention, x: torch.Tensor) -> torch.Tensor:
    """The same attention through F.scaled_dot_product_attention: scale is SDPA's argument of
    that name; v_norm an unweighted RMSNorm over each head's values."""
    B, T, C = x.shape
    q, k, v = (t.view(B, T, H, C // H).transpose(1, 2) for t in attn.qkv(x).split(C, dim=2))
    if attn.qk_norm is not None:
        q, k = attn.q_norm(q), attn.k_norm(k)
    if attn.v_norm is not None:
        v = F.rms_norm(v, (C // H,), eps=attn.eps)
    y = F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=attn.scale)
    return attn.proj(y.transpose(1, 2).reshape(B, T, C))


@pytest.mark.parametrize("scale", [None, 1.0, 0.3])
@pytest.mark.parametrize("v_norm", [False, True])
def test_v_norm_and_scale_compute_their_formula(v_norm, scale, device):
    """As PyTorch's own attention computes it: F.scaled_dot_product_attention with its scale
    (None: 1 / sqrt(head_size)), the values under an unweighted RMSNorm per head."""
    torch.manual_seed(0)
    attn = MultiHeadAttention(
        D, H, causal=True, qk_norm="head", eps=1e-6, v_norm=v_norm, scale=scale
    )
    attn = attn.double().to(device)
    randomize(attn)
    x = torch.randn(2, 6, D, dtype=torch.float64, device=device)
    torch.testing.assert_close(attn(x), _attention_with_sdpa(attn, x), atol=1e-12, rtol=1e-12)
    n_params = sum(p.numel() for p in attn.parameters())
    assert n_params == 4 * D * D + 4 * D + 2 * D // H  # q and k norm weights; none for v
    if v_norm:  # each head's values have RMS 1 (within eps) before attention mixes them
        v = attn.qkv(x).split(D, dim=2)[2].view(2, 6, H, D // H)
        rms = attn.v_norm(v).pow(2).mean(-1).sqrt()
        torch.testing.assert_close(rms, torch.ones_like(rms), atol=1e-5, rtol=0)


def test_attention_eps_reaches_the_v_norm():
    """One eps for the attention's norms, as Gemma 4 gives q_norm, k_norm and v_norm its one
    rms_norm_eps; with the v_norm alone, eps is the v_norm's. Through Block and Stack too, and in
    a ReZero block, which has no norm of its own, eps is the attention's alone."""
    assert MultiHeadAttention(D, H, v_norm=True, eps=1e-3).v_norm.eps == 1e-3
    attn = MultiHeadAttention(D, H, qk_norm="head", v_norm=True, eps=1e-3)
    assert [attn.q_norm.eps, attn.k_norm.eps, attn.v_norm.eps] == [1e-3] * 3
    assert MultiHeadAttention(D, H, v_norm=True).v_norm.eps is None  # PyTorch's default
    block = Block(D, H, FF, norm="rmsnorm", eps=1e-3, v_norm=True)
    assert block.attn.sublayer.v_norm.eps == 1e-3 and block.attn.norm_in.eps == 1e-3
    stack = Stack(2, D, H, FF, v_norm=True, scale=1.0, eps=1e-4, norm="rmsnorm")
    assert all(layer.attn.sublayer.v_norm.eps == 1e-4 for layer in stack.layers)
    assert all(layer.attn.sublayer.scale == 1.0 for layer in stack.layers)
    rezero = Block(D, H, FF, norm_position="rezero", v_norm=True, eps=1e-3)
    assert _norm_eps(rezero) == [1e-3]  # the v_norm: the block has no other norm
    stack = Stack(2, D, H, FF, norm_position="rezero", final_norm=True, v_norm=True, eps=1e-3)
    assert stack.norm_f.eps == 1e-3 and stack.layers[0].attn.sublayer.v_norm.eps == 1e-3


@pytest.mark.parametrize("parallel", [None, "one_norm"])
def test_layer_scalar_multiplies_the_block_output(parallel, device):
    """Gemma 4: hidden_states *= self.layer_scalar after the layer's residual sums, a buffer of
    shape (1,): in the state_dict, moved by .to(), not trained."""
    torch.manual_seed(0)
    plain = Block(D, H, FF, causal=True, parallel=parallel).to(device)
    scaled = Block(D, H, FF, causal=True, parallel=parallel, layer_scalar=0.25).to(device)
    scaled.load_state_dict(plain.state_dict() | {"layer_scalar": torch.tensor([0.25])})
    x = torch.randn(2, 5, D, device=device)
    torch.testing.assert_close(scaled(x), 0.25 * plain(x), atol=0, rtol=0)
    assert "layer_scalar" in dict(scaled.named_buffers())
    assert "layer_scalar" not in dict(scaled.named_parameters())
    assert scaled.double().layer_scalar.dtype == torch.float64
    stack = Stack(2, D, H, FF, residual="denseformer", layer_scalar=0.5)
    assert [layer.layer_scalar.item() for layer in stack.layers] == [0.5, 0.5]


@pytest.mark.parametrize("alpha", [1.0, 3.5, torch.linspace(1.0, 2.0, D)])
def test_normed_skip_computes_its_formula(alpha, device):
    """y = alpha * n + beta * F(n), n = Norm(x): the skip carries the normed input. A tensor
    alpha is trained per feature, as in the other placements that take one."""
    torch.manual_seed(0)
    f = nn.Linear(D, D)
    r = Residual(f, D, "normed_skip", norm="rmsnorm", alpha=alpha, branch_scale=0.7).to(device)
    randomize(r)
    x = torch.randn(2, 3, D, device=device)
    n = r.norm_in(x)
    a = r.alpha if isinstance(alpha, torch.Tensor) else alpha
    torch.testing.assert_close(r(x), a * n + 0.7 * f(n))
    assert r.norm_branch is None and r.norm_out is None
    assert needs_final_norm("normed_skip")  # the last layer's sum is not normalized
    assert "normed_skip" not in BRANCH_POSITIONS  # its skip is not x: no branch alone
    assert layer_placements("normed_skip", 3) == [("normed_skip", 1.0)] * 3


NAN, INF = float("nan"), float("inf")
# (build, error type, the whole message): every new flag's bad values, each named with what came
NEW_FLAG_ERRORS = [
    (lambda: MultiHeadAttention(D, H, v_norm="yes"), TypeError,
     "v_norm must be True or False, got 'yes'"),
    (lambda: Block(D, H, FF, v_norm=1), TypeError, "v_norm must be True or False, got 1"),
    (lambda: MultiHeadAttention(D, H, eps=1e-6, v_norm=False), ValueError,
     "eps is for a qk_norm, v_norm or o_norm, got qk_norm=None, v_norm=False, o_norm=False and "
     "eps=1e-06"),
    (lambda: MultiHeadAttention(D, H, qk_norm="l2", qk_scale=10.0, scale=1.0), ValueError,
     "qk_norm='l2' scales the logits by its learned qk_scale, got scale=1.0"),
    *[
        (lambda v=v: MultiHeadAttention(D, H, scale=v), ValueError,
         f"scale must be None or a finite number > 0, got {v!r}")
        for v in (0, -1.0, NAN, INF)
    ],
    (lambda: Block(D, H, FF, scale="1"), TypeError,
     "scale must be None or a finite number > 0, got str '1'"),
    (lambda: Block(D, H, FF, scale=True), TypeError,
     "scale must be None or a finite number > 0, got bool True"),
    *[
        (lambda v=v: Block(D, H, FF, layer_scalar=v), ValueError,
         f"layer_scalar must be None or a nonzero number, got {v!r}")
        for v in (0, 0.0)
    ],
    *[
        (lambda v=v: Block(D, H, FF, layer_scalar=v), ValueError,
         f"layer_scalar must be None or a finite number, got {v!r}")
        for v in (NAN, INF)
    ],
    (lambda: Block(D, H, FF, layer_scalar="1"), TypeError,
     "layer_scalar must be None or a finite number, got str '1'"),
    *[
        (lambda r=r: Stack(2, D, H, FF, residual=r, layer_scalar=0.5), ValueError,
         f"residual={r!r} needs layer_scalar in (None,), got 0.5: it forms no block output to "
         "scale")
        for r in BRANCH_RESIDUALS
    ],
    *[
        (lambda p=p: Residual(nn.Identity(), D, p, branch_scale=0.5), ValueError,
         f"branch_scale scales F in 'normed_skip' only, got {p!r}")
        for p in ("pre", "post", "deepnorm", "rezero")
    ],
    *[  # the stack names the placement given, not the layers' 'post' and 'pre'
        (lambda p=p: Stack(4, D, H, FF, norm_position=p, branch_scale=0.5), ValueError,
         f"branch_scale scales F in 'normed_skip' only, got {p!r}")
        for p in ("mixln", "lns", "pre")
    ],
    *[
        (lambda v=v: Residual(nn.Identity(), D, "normed_skip", branch_scale=v), ValueError,
         f"branch_scale must be a finite number > 0, got {v!r}")
        for v in (0.0, -1.0, NAN, INF)
    ],
    (lambda: Stack(2, D, H, FF, norm_position="normed_skip", branch_scale="1"), TypeError,
     "branch_scale must be a finite number > 0, got str '1'"),
    *[
        (lambda v=v: Residual(nn.Identity(), D, "normed_skip", alpha=v), ValueError,
         f"alpha must be a finite number > 0, got {v!r}")
        for v in (0.0, NAN)
    ],
    (lambda: Block(D, H, FF, norm_position="minimax"), ValueError,
     f"norm_position must be one of {POSITIONS}, got 'minimax'"),
    (lambda: Block(D, H, FF, norm_position="normed_skip", parallel="one_norm"), ValueError,
     "parallel='one_norm' needs norm_position='pre', got 'normed_skip'"),
    (lambda: Stack(2, D, H, FF, residual="attnres", norm_position="normed_skip"), ValueError,
     f"residual='attnres' needs norm_position in {BRANCH_POSITIONS}, got 'normed_skip': it sees "
     "only each sublayer's branch, so the norms must sit in the branch"),
    (lambda: Block(D, H, FF, norm_position="rezero", v_norm=False, eps=1e-3), ValueError,
     "norm_position='rezero' has no norm, got eps=0.001"),
]  # fmt: skip


# ids from the messages: a lambda's repr holds its address, which differs between
# processes, so pytest-xdist's workers would collect different tests
@pytest.mark.parametrize(
    ("build", "error", "message"), NEW_FLAG_ERRORS, ids=[m for *_, m in NEW_FLAG_ERRORS]
)
def test_new_flags_refuse_bad_input_naming_what_came(build, error, message):
    with pytest.raises(error, match=f"^{re.escape(message)}$"):
        build()


# float32 as the other HF tests; bfloat16 (8 significant bits) to 8 units in its last place,
# 2^-5: the two sides round at different points (MiniMaxRMSNorm casts to bfloat16 before its
# weight, nn.RMSNorm after; HF's eager softmax runs in float32, ours in bfloat16).
LAYER_TOL = {
    torch.float32: dict(atol=HF_ATTN_TOL, rtol=HF_ATTN_TOL),
    torch.bfloat16: dict(atol=2**-5, rtol=2**-5),
}


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_gemma4_rmsnorm_is_torch_rmsnorm(dtype):
    """Gemma4RMSNorm stores its scale as w (ones at init), not Gemma 2/3's 1 + w, and computes in
    float32 for bfloat16 input, as nn.RMSNorm does: the handbook's rmsnorm is the same layer,
    bit for bit here. Its with_scale=False form, the v_norm, is nn.RMSNorm without a weight."""
    theirs = hf_gemma4.Gemma4RMSNorm(D, eps=1e-6)
    assert torch.equal(theirs.weight, torch.ones(D))  # w, not 1 + w: ones at init
    randomize(theirs)
    ours = make_norm("rmsnorm", D, eps=1e-6)
    ours.load_state_dict(theirs.state_dict())
    ours, theirs = ours.to(dtype), theirs.to(dtype)
    x = 3 * torch.randn(4, 5, D, dtype=dtype)
    assert ours(x).dtype == dtype
    torch.testing.assert_close(ours(x), theirs(x), atol=0, rtol=0)
    unweighted = hf_gemma4.Gemma4RMSNorm(D // H, eps=1e-6, with_scale=False)
    assert not list(unweighted.parameters())
    v = x.view(4, 5, H, D // H)
    torch.testing.assert_close(F.rms_norm(v, (D // H,), eps=1e-6), unweighted(v), atol=0, rtol=0)


def _gemma4_config(**extra):
    """A dense Gemma 4 text layer: full attention with head_dim = D / H (global_head_dim), as many
    key-value heads as query heads, no k = v sharing, no MoE block, no per-layer input."""
    config = transformers.Gemma4TextConfig(
        **_hf_attention_kwargs(intermediate_size=FF, head_dim=D // H, global_head_dim=D // H),
        layer_types=["full_attention"], hidden_size_per_layer_input=0, **extra,
    )  # fmt: skip
    assert (config.attention_k_eq_v, config.enable_moe_block, config.num_kv_shared_layers) == (
        False, False, 0,
    )  # fmt: skip
    return config


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_v_norm_and_scale_equal_gemma4_attention(dtype):
    """MultiHeadAttention(qk_norm="head", v_norm=True, scale=1.0) ↔ Gemma4TextAttention: q_norm
    and k_norm = Gemma4RMSNorm(head_dim) weighted, v_norm = Gemma4RMSNorm(head_dim,
    with_scale=False), all with eps = rms_norm_eps = 1e-6, on each head before RoPE (RoPE's
    identity here); self.scaling = 1.0; eager attention. HF's softmax runs in float32, ours in
    the input's dtype: bfloat16 agrees to bfloat16's rounding."""
    torch.manual_seed(0)
    theirs = hf_gemma4.Gemma4TextAttention(_gemma4_config(), 0)
    assert theirs.scaling == 1.0 and not list(theirs.v_norm.parameters())
    randomize(theirs)
    theirs = theirs.to(dtype).eval()
    ours = MultiHeadAttention(
        D, H, causal=True, bias=False, qk_norm="head", eps=1e-6, v_norm=True, scale=1.0
    ).to(dtype)
    _copy_hf_attention(ours, theirs)
    x = torch.randn(2, 6, D, dtype=dtype)
    y = ours(x)
    y_theirs, _ = theirs(
        x, position_embeddings=rope_identity(x, D // H), attention_mask=hf_causal_mask(x),
        shared_kv_states={},
    )  # fmt: skip
    torch.testing.assert_close(y, y_theirs, **LAYER_TOL[dtype])
    plain = MultiHeadAttention(D, H, causal=True, bias=False, qk_norm="head", eps=1e-6).to(dtype)
    plain.load_state_dict(ours.state_dict())
    assert (plain(x) - y).abs().max() > 0.1  # v_norm and scale change the output


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_block_equals_gemma4_decoder_layer(dtype):
    """Block(norm_position="sandwich", norm="rmsnorm", qk_norm="head", v_norm=True, scale=1.0,
    layer_scalar=...) ↔ Gemma4TextDecoderLayer: x + post_attention_layernorm(self_attn(
    input_layernorm(x))), then the same around the MLP with pre_ and post_feedforward_layernorm,
    then hidden_states *= layer_scalar (a buffer, ones at init; set to 0.37 here).
    Configured as a dense layer (see _gemma4_config): no MoE, no per-layer input, RoPE's
    identity, eager attention. Stubbed: Gemma 4's MLP is gated (down(gelu_tanh(gate(h)) *
    up(h)), no biases), which the handbook's FeedForward is not; the block's feed-forward
    sublayer is that same Gemma4TextMLP module, so both sides run one MLP and the test checks
    the four norms, the attention, the residual sums and the layer scalar."""
    torch.manual_seed(0)
    config = _gemma4_config()
    theirs = hf_gemma4.Gemma4TextDecoderLayer(config, 0)
    assert dict(theirs.named_buffers())["layer_scalar"].tolist() == [1.0]
    assert "layer_scalar" not in dict(theirs.named_parameters())
    randomize(theirs)
    with torch.no_grad():
        theirs.layer_scalar.fill_(0.37)
    theirs = theirs.to(dtype).eval()
    ours = Block(
        D, H, FF, causal=True, bias=False, norm_position="sandwich", norm="rmsnorm",
        eps=config.rms_norm_eps, qk_norm="head", v_norm=True, scale=1.0, layer_scalar=0.37,
    ).to(dtype).eval()  # fmt: skip
    _copy_hf_attention(ours.attn.sublayer, theirs.self_attn)
    pairs = {
        ours.attn.norm_in: theirs.input_layernorm,
        ours.attn.norm_branch: theirs.post_attention_layernorm,
        ours.mlp.norm_in: theirs.pre_feedforward_layernorm,
        ours.mlp.norm_branch: theirs.post_feedforward_layernorm,
    }
    for mine, hf in pairs.items():
        mine.load_state_dict(hf.state_dict())
    ours.mlp.sublayer = theirs.mlp
    assert torch.equal(ours.layer_scalar, theirs.layer_scalar)
    x = torch.randn(2, 6, D, dtype=dtype)
    with torch.no_grad():
        # From 5.24.0 a layer that stores its keys and values for later layers writes them
        # into the dict it is given; the model passes one, so the test does too.
        y_theirs = theirs(
            x,
            attention_mask=hf_causal_mask(x),
            position_embeddings=rope_identity(x, D // H),
            shared_kv_states={},
        )
        torch.testing.assert_close(ours(x), y_theirs, **LAYER_TOL[dtype])


def _minimax_config(layer_types, alpha, beta, **extra):
    """MiniMax with one alpha and one beta for every sublayer, as a Block takes them (the config
    has one per attention kind and one for the MLP)."""
    factors = {
        f"{kind}_{ab}_factor": value
        for kind in ("full_attn", "linear_attn", "mlp")
        for ab, value in (("alpha", alpha), ("beta", beta))
    }
    kwargs = _hf_attention_kwargs(intermediate_size=FF, head_dim=D // H, **extra)
    kwargs.update(num_hidden_layers=len(layer_types), rms_norm_eps=1e-5)  # M1's rms_norm_eps
    return transformers.MiniMaxConfig(
        **kwargs, layer_types=layer_types, num_local_experts=2, block_size=8, **factors
    )


# MiniMax-M1's released config (MiniMax-AI/MiniMax-M1 at 2abb4f4, config.json): postnorm true,
# every layernorm_*_alpha 3.5565588200778455 = (2 · 80)^(1/4) for its 80 layers, every beta 1.0.
M1_ALPHA = deepnorm_alpha_beta(80)[0]


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("beta", [1.0, 0.6])
def test_normed_skip_equals_minimax_decoder_layers(beta, dtype):
    """Stack(norm_position="normed_skip", norm="rmsnorm", alpha, branch_scale) ↔ two
    MiniMaxDecoderLayers and the final MiniMaxRMSNorm, as MiniMaxModel.forward chains them. Each
    layer: h = input_layernorm(x); h = h * alpha + self_attn(h) * beta; h2 =
    post_attention_layernorm(h); h2 * alpha + mlp(h2) * beta: the skip is taken after the norm
    (MiniMax-M1's "postnorm": true; transformers' port has only this form). eps = rms_norm_eps
    = 1e-5, alpha = M1's 3.5565588.
    Layer 0 is a full-attention layer, compared whole: MiniMaxAttention (as many key-value heads
    as heads, RoPE's identity, scaling head_dim^-0.5, no biases) is the handbook's attention.
    Layer 1 is a lightning (linear) attention layer, outside the handbook: its self_attn is
    stubbed on both sides (_Stub, one instance), and so is each layer's MoE feed-forward."""
    torch.manual_seed(0)
    config = _minimax_config(["full_attention", "linear_attention"], M1_ALPHA, beta)
    assert config.rms_norm_eps == 1e-5
    theirs = [hf_minimax.MiniMaxDecoderLayer(config, i) for i in range(2)]
    norm = hf_minimax.MiniMaxRMSNorm(D, eps=config.rms_norm_eps)
    assert isinstance(theirs[1].self_attn, hf_minimax.MiniMaxLightningAttention)
    for module in (*theirs, norm):
        randomize(module)
    ours = Stack(
        2, D, H, FF, norm_position="normed_skip", norm="rmsnorm", eps=config.rms_norm_eps,
        alpha=M1_ALPHA, branch_scale=beta, causal=True, bias=False,
    )  # fmt: skip
    assert ours.norm_f is not None  # MiniMaxModel ends with self.norm
    cores = [nn.Linear(D, D) for _ in range(3)]
    for i, core in enumerate(cores):
        randomize(core, seed=10 + i)
    _copy_hf_attention(ours.layers[0].attn.sublayer, theirs[0].self_attn)
    theirs[1].self_attn = _KeywordStub(cores[0], returns_tuple=True)
    ours.layers[1].attn.sublayer = _Stub(cores[0])
    for i in range(2):
        theirs[i].mlp = _Stub(cores[1 + i])
        ours.layers[i].mlp.sublayer = _Stub(cores[1 + i])
        ours.layers[i].attn.norm_in.load_state_dict(theirs[i].input_layernorm.state_dict())
        ours.layers[i].mlp.norm_in.load_state_dict(theirs[i].post_attention_layernorm.state_dict())
    ours.norm_f.load_state_dict(norm.state_dict())
    ours = ours.to(dtype).eval()
    theirs, norm = [layer.to(dtype).eval() for layer in theirs], norm.to(dtype)
    x = torch.randn(2, 6, D, dtype=dtype)
    kw = dict(attention_mask=hf_causal_mask(x), position_embeddings=rope_identity(x, D // H))
    with torch.no_grad():
        h = x
        for layer in theirs:
            h = layer(h, **kw)
        layer0 = theirs[0](x, **kw)
        torch.testing.assert_close(ours.layers[0](x), layer0, **LAYER_TOL[dtype])
        torch.testing.assert_close(ours(x), norm(h), **LAYER_TOL[dtype])


# --- Muse Spark: the variance-preserving residual gate and its norms ------------------------------
# Reference code: transformers 5.24.0, models/muse_spark/modeling_muse_spark.py (MuseSparkRMSNorm,
# MuseSparkTextCenteredRMSNorm, MuseSparkTextInputScaledRMSNorm, MuseSparkResidualGate,
# MuseSparkTextAttention, MuseSparkTextDecoderLayer) and configuration_muse_spark.py. Built small,
# random init, nothing downloaded.
MD, MH, MFF = 64, 4, 96  # head_dim 16: 1 / sqrt(16) is exact, as HF's head_dim ** -0.5


def _muse_config(**extra):
    """One dense layer, as many key-value heads as heads. With one layer, layer 0 is the last
    one: Muse makes it full attention and NoPE (layer_rope_theta 0), so MuseSparkTextModel
    passes it position_embeddings=None, as these tests do."""
    config = transformers.MuseSparkTextConfig(
        hidden_size=MD, intermediate_size=MFF, num_hidden_layers=1, num_attention_heads=MH,
        num_key_value_heads=MH, head_dim=MD // MH, mlp_layer_types=["dense"], vocab_size=32,
        bos_token_id=None, eos_token_id=None, attn_implementation="eager", **extra,
    )  # fmt: skip
    assert config.layer_types == ["full_attention"] and config.layer_rope_theta == [0]
    return config


def test_muse_spark_config_defaults_are_the_handbooks():
    """The defaults the handbook's flags take for Muse Spark, read from the config."""
    config = transformers.MuseSparkTextConfig()
    assert config.residual_gate_temperature == 0.3
    assert config.qk_scale_factor == 5.4730064863875
    assert (config.rms_norm_eps, config.post_norm_eps) == (1e-5, 1e-8)
    assert config.final_logit_softcapping == 20.0
    theirs = hf_muse.MuseSparkResidualGate(_muse_config())
    ours = ResidualGate(MD)
    assert (ours.temperature, ours.eps) == (theirs.temperature, theirs.eps) == (0.3, 1e-3)
    stack = Stack(1, MD, MH, MFF, residual="vp_gate", norm_position="sandwich")
    assert {(g.temperature, g.eps) for g in stack.connections} == {(0.3, 1e-3)}
    # the 1 + w norms start at w = 0, as MuseSparkPreTrainedModel._init_weights sets them
    assert not make_norm("rmsnorm_1p", MD).weight.any()
    assert not make_norm("rmsnorm_1p_input", MD).weight.any()
    assert not hf_muse.MuseSparkTextCenteredRMSNorm(MD).weight.any()


def _muse_norm_pairs(eps=1e-5):
    """(ours, theirs) with the same random weights."""
    m = hf_muse
    pairs = [
        (make_norm("rmsnorm_1p", MD, eps), m.MuseSparkTextCenteredRMSNorm(MD, eps)),
        (make_norm("rmsnorm_1p_input", MD, eps), m.MuseSparkTextInputScaledRMSNorm(MD, eps)),
        (make_norm("rmsnorm_noweight", MD, eps), m.MuseSparkRMSNorm(eps=eps, with_scale=False)),
    ]
    for i, (ours, theirs) in enumerate(pairs):
        randomize(theirs, seed=i)
        with torch.no_grad():
            for p in theirs.parameters():
                p.sub_(1.0)  # w of 1 + w around 0, where training keeps it
        ours.load_state_dict(theirs.state_dict())
    return pairs


@pytest.mark.parametrize("eps", [1e-5, 1e-8])
def test_muse_norms_equal_hugging_face_in_float32(eps):
    """rmsnorm_1p ↔ MuseSparkTextCenteredRMSNorm, rmsnorm_1p_input ↔
    MuseSparkTextInputScaledRMSNorm, rmsnorm_noweight ↔ MuseSparkRMSNorm(with_scale=False), eps
    rms_norm_eps (1e-5) and post_norm_eps (1e-8): the same arithmetic in the same order, bit for
    bit. x has a mean of 3: the "centered" norm subtracts none."""
    x = torch.randn(3, 5, MD) + 3.0
    for ours, theirs in _muse_norm_pairs(eps):
        torch.testing.assert_close(ours(x), theirs(x), rtol=0, atol=0)
    centered = hf_muse.MuseSparkTextCenteredRMSNorm(MD, eps)  # w = 0 at init
    rms = x.pow(2).mean(-1, keepdim=True).add(eps).sqrt()
    torch.testing.assert_close(centered(x), x / rms)  # no mean taken away
    assert centered(x).mean().item() > 0.9


def test_muse_norms_in_bfloat16():
    """In bfloat16 Muse forms 1 + w in w's dtype, bfloat16 (rounded to 8 bits), the handbook in
    float32 (as OnePlusRMSNorm does for Gemma 3): with any w they agree to one bfloat16 rounding
    of the scale, 2^-7 relative; with w whose 1 + w bfloat16 holds exactly, bit for bit. The
    weightless norm agrees bit for bit."""
    x = (torch.randn(3, 5, MD) + 1.0).to(torch.bfloat16)
    for ours, theirs in _muse_norm_pairs():
        ours, theirs = ours.to(torch.bfloat16), theirs.to(torch.bfloat16)
        torch.testing.assert_close(ours(x), theirs(x), rtol=2**-7, atol=2**-7)
        for m in (ours, theirs):
            for p in m.parameters():  # 1 + w on bfloat16's grid: both scales are exact
                p.data = torch.round(p.data.float() * 64) / 64
                p.data = p.data.to(torch.bfloat16)
        torch.testing.assert_close(ours(x), theirs(x), rtol=0, atol=0)


def test_rmsnorm_1p_input_scales_before_the_norm():
    """RMSNorm(x * (1 + w)): the output's RMS is 1 whatever w is, up to eps."""
    norm = make_norm("rmsnorm_1p_input", MD, 1e-8).double()
    randomize(norm)
    x = torch.randn(4, 3, MD, dtype=torch.float64)
    s = x * (1 + norm.weight)
    expected = s / s.pow(2).mean(-1, keepdim=True).add(1e-8).sqrt()
    torch.testing.assert_close(norm(x), expected, rtol=1e-12, atol=1e-12)
    rms = norm(x).pow(2).mean(-1).sqrt()
    torch.testing.assert_close(rms, torch.ones_like(rms), rtol=1e-6, atol=1e-6)
    after = make_norm("rmsnorm_1p", MD, 1e-8).double()
    after.load_state_dict(norm.state_dict())
    assert (after(x) - norm(x)).abs().max() > 0.1  # the order matters


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_residual_gate_equals_muse_spark(dtype):
    """ResidualGate ↔ MuseSparkResidualGate: w / T, beta = sigmoid, alpha = sqrt(clamp(
    sigmoid(-w / T) (1 + beta), eps)), alpha * residual + beta * hidden in float32, cast to the
    residual's dtype. w stays float32 on both sides (Muse's _keep_in_fp32_modules_strict); x and
    F(x) in dtype. Bit for bit in both dtypes. w over [-3, 3] reaches the floor (w / T > 3.45)."""
    theirs = hf_muse.MuseSparkResidualGate(_muse_config())
    ours = ResidualGate(MD)
    with torch.no_grad():
        theirs.gate.copy_(torch.linspace(-3, 3, MD))
    ours.load_state_dict({"weight": theirs.gate.detach()})
    x, h = torch.randn(2, 5, MD).to(dtype), torch.randn(2, 5, MD).to(dtype)
    y = ours(x, h)
    assert y.dtype == dtype
    torch.testing.assert_close(y, theirs(x, h), rtol=0, atol=0)


def test_residual_gate_keeps_alpha2_plus_beta2_one():
    """alpha² + beta² = 1 for every w where the floor does not act (beta² <= 1 - eps); beyond
    it alpha = sqrt(eps). Then y = alpha x + beta F(x) keeps unit variance for x, F(x)
    uncorrelated with unit variance (sampled: 200,000 draws per feature)."""
    gate = ResidualGate(201).double()
    with torch.no_grad():
        gate.weight.copy_(torch.linspace(-4, 4, 201, dtype=torch.float64))
    alpha, beta = gate.coefficients(torch.float64)
    free = beta**2 <= 1 - gate.eps
    assert free.sum() > 150 and (~free).any()
    total = alpha**2 + beta**2
    torch.testing.assert_close(total[free], torch.ones_like(total[free]), rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(alpha[~free], torch.full_like(alpha[~free], gate.eps**0.5))
    g = torch.Generator().manual_seed(0)
    x = torch.randn(200_000, 1, 201, generator=g, dtype=torch.float64)
    h = torch.randn(200_000, 1, 201, generator=g, dtype=torch.float64)
    var = gate(x, h).var(dim=0).squeeze(0)
    torch.testing.assert_close(var[free], torch.ones_like(var[free]), rtol=0.02, atol=0.02)


def _muse_layer_pair(config):
    """MuseSparkTextDecoderLayer with random weights (norm weights around 0, the gates' w
    N(0, 0.3)) and the handbook's one-layer Stack with the same weights. Muse's dense MLP is
    gated (down(silu(gate(h)) * up(h))), which FeedForward is not: the stack's feed-forward is
    that same MuseSparkTextMLP module, so the test checks the norms, the attention, the gates and
    their order."""
    torch.manual_seed(0)
    theirs = hf_muse.MuseSparkTextDecoderLayer(config, 0)
    randomize(theirs)
    with torch.no_grad():
        for name, p in theirs.named_parameters():
            if name.endswith(("layernorm.weight", "residual_gate.gate")):
                p.sub_(1.0)
    ours = Stack(
        1, MD, MH, MFF, residual="vp_gate", gate_temperature=config.residual_gate_temperature,
        norm_position="sandwich", norm="rmsnorm_1p", eps=config.rms_norm_eps,
        branch_norm=("rmsnorm_noweight", "rmsnorm_1p_input"), branch_eps=config.post_norm_eps,
        qk_norm="head_noweight", scale=config.qk_scale_factor / math.sqrt(MD // MH),
        o_norm=True, output_gate="elementwise", causal=True, bias=False, final_norm=False,
    )  # fmt: skip
    layer, attn = ours.layers[0], theirs.self_attn
    with torch.no_grad():
        layer.attn.sublayer.qkv.weight.copy_(
            torch.cat([attn.q_proj.weight, attn.k_proj.weight, attn.v_proj.weight])
        )
        layer.attn.sublayer.proj.weight.copy_(attn.o_proj.weight)
        layer.attn.sublayer.gate.weight.copy_(attn.gate_proj.weight)
    layer.attn.norm_in.load_state_dict(theirs.input_layernorm.state_dict())
    layer.mlp.norm_in.load_state_dict(theirs.pre_feedforward_layernorm.state_dict())
    layer.mlp.norm_branch.load_state_dict(theirs.post_feedforward_layernorm.state_dict())
    assert not list(layer.attn.norm_branch.parameters())  # weightless, as post_attention_layernorm
    for gate, hf_gate in zip(
        ours.connections,
        (theirs.post_attention_residual_gate, theirs.post_feedforward_residual_gate),
        strict=True,
    ):
        gate.load_state_dict({"weight": hf_gate.gate.detach()})
    layer.mlp.sublayer = theirs.mlp
    return ours, theirs


def _muse_outputs(ours, theirs, dtype, seed=0):
    ours, theirs = ours.to(dtype), theirs.to(dtype)
    gates = (theirs.post_attention_residual_gate, theirs.post_feedforward_residual_gate)
    for gate in (*ours.connections, *gates):
        gate.float()  # as Muse loads them: _keep_in_fp32_modules_strict
    x = torch.randn(2, 7, MD, generator=torch.Generator().manual_seed(seed)).to(dtype)
    with torch.no_grad():
        return ours(x), theirs(x, position_embeddings=None, attention_mask=hf_causal_mask(x))


def test_muse_layer_equals_hugging_face_bit_for_bit_with_a_unit_q_factor():
    """With qk_scale_factor = 1 the handbook's layer and MuseSparkTextDecoderLayer run the same
    float32 arithmetic in the same order: input_layernorm (1 + w), attention with weightless
    q and k norms, o_norm and a sigmoid gate from the attention's input, the weightless
    post_attention_layernorm, the gate; pre_feedforward_layernorm (1 + w), the MLP,
    post_feedforward_layernorm RMSNorm(h * (1 + w)), the gate."""
    ours, theirs = _muse_layer_pair(_muse_config(qk_scale_factor=1.0))
    torch.testing.assert_close(*_muse_outputs(ours, theirs, torch.float32), rtol=0, atol=0)


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_muse_layer_equals_hugging_face(dtype, seed):
    """With Muse's qk_scale_factor 5.473: HF multiplies q by it, then q·k by head_dim^-0.5;
    the handbook multiplies q·k by their product (scale), one rounding fewer. float32: within
    2e-6 (measured: 50 inputs hold). bfloat16: q and k of RMS 1 times 5.473 make logits up to
    5.473 · 4 ≈ 22, where bfloat16's spacing is 2^-3, and Muse rounds 1 + w to bfloat16: the
    two layers agree to 2^-3 absolute plus 2^-3 relative (held on 60 inputs, 2^-4 failed on 5),
    and the handbook's is no farther from the float32 layer than twice HF's bfloat16 layer is
    (on 10 inputs: closer on 8, at most 1.24 times as far on 2)."""
    ours, theirs = _muse_layer_pair(_muse_config())
    y, y_theirs = _muse_outputs(ours, theirs, dtype, seed)
    if dtype == torch.float32:
        torch.testing.assert_close(y, y_theirs, rtol=2e-6, atol=2e-6)
        return
    torch.testing.assert_close(y, y_theirs, rtol=2**-3, atol=2**-3)
    ref, _ = _muse_outputs(*_muse_layer_pair(_muse_config()), torch.float32, seed)
    ours_err = (y.float() - ref).abs().max()
    theirs_err = (y_theirs.float() - ref).abs().max()
    assert ours_err <= 2 * theirs_err, (ours_err, theirs_err)


def test_o_norm_normalizes_each_heads_output_before_the_gate():
    """o_norm: a weightless RMSNorm over head_size on the attention's output, before the gate."""
    torch.manual_seed(0)
    attn = MultiHeadAttention(D, H, causal=True, qk_norm="head_noweight", eps=1e-6, o_norm=True)
    plain = MultiHeadAttention(D, H, causal=True, qk_norm="head_noweight", eps=1e-6)
    plain.load_state_dict(attn.state_dict())
    seen = {}
    attn.proj.register_forward_pre_hook(lambda m, args: seen.setdefault("y", args[0]))
    plain.proj.register_forward_pre_hook(lambda m, args: seen.setdefault("plain", args[0]))
    x = torch.randn(2, 5, D)
    attn(x), plain(x)
    heads = seen["plain"].view(2, 5, H, D // H)
    expected = F.rms_norm(heads, (D // H,), eps=1e-6).reshape(2, 5, D)
    torch.testing.assert_close(seen["y"], expected)
    assert attn.o_norm.eps == 1e-6 and not list(attn.o_norm.parameters())


def test_vp_gate_stack_trains_and_refuses_no_good_placement():
    for position in BRANCH_POSITIONS:
        stack = Stack(2, D, H, FF, residual="vp_gate", norm_position=position)
        x = torch.randn(2, 5, D)
        stack(x).square().mean().backward()
        assert all(g.weight.grad is not None for g in stack.connections)


MUSE_ERRORS = [
    *[
        (lambda p=p: Stack(2, D, H, FF, residual="vp_gate", norm_position=p), ValueError,
         f"residual='vp_gate' needs norm_position in {BRANCH_POSITIONS}, got {p!r}: it sees "
         "only each sublayer's branch, so the norms must sit in the branch")
        for p in ("post", "deepnorm", "rezero", "normed_skip", "mixln")
    ],
    (lambda: Stack(2, D, H, FF, residual="vp_gate", parallel="two_norms"), ValueError,
     "residual='vp_gate' needs parallel in (None,), got 'two_norms': it calls the sublayers in "
     "turn"),
    *[
        (lambda r=r, k=k: Stack(2, D, H, FF, residual=r, **{k: 0.5}), ValueError,
         f"{k}=0.5 needs residual in ('vp_gate',), got {r!r}: only its gates have one")
        for r in ("add", "hc") for k in ("gate_temperature", "gate_eps")
    ],
    *[
        (lambda v=v: Stack(2, D, H, FF, residual="vp_gate", gate_temperature=v), ValueError,
         f"temperature must be a finite number > 0, got {v!r}")
        for v in (0.0, -0.3, NAN, INF)
    ],
    (lambda: ResidualGate(D, temperature="0.3"), TypeError,
     "temperature must be a finite number > 0, got str '0.3'"),
    *[
        (lambda v=v: ResidualGate(D, eps=v), ValueError,
         f"eps must be a finite number in (0, 1), got {v!r}")
        for v in (0.0, 1.0, -1e-3, NAN)
    ],
    (lambda: ResidualGate(0), ValueError, "d_model must be a positive int, got 0"),
    (lambda: ResidualGate(D)(torch.randn(2, 3, D), torch.randn(2, 3, 8)), ValueError,
     "expected a branch of the stream's shape (2, 3, 16), got (2, 3, 8)"),
    (lambda: ResidualGate(D)(torch.randn(2, 3, 8), torch.randn(2, 3, 8)), ValueError,
     "expected input of shape (batch, seq_len, 16), got (2, 3, 8)"),
    (lambda: ResidualGate(D)(torch.randn(2, 3, D), None), ValueError,
     "expected a branch of the stream's shape (2, 3, 16), got NoneType"),
    *[
        (lambda p=p: Residual(nn.Identity(), D, p, branch_norm="rmsnorm_noweight"), ValueError,
         f"branch_norm='rmsnorm_noweight' needs norm_position in ('sandwich', 'output'), got "
         f"{p!r}: only these put a norm on F's output")
        for p in ("pre", "post", "deepnorm", "normed_skip")
    ],
    (lambda: Block(D, H, FF, branch_eps=1e-8), ValueError,
     "branch_eps=1e-08 needs norm_position in ('sandwich', 'output'), got 'pre': only these put "
     "a norm on F's output"),
    (lambda: Stack(2, D, H, FF, norm_position="mixln", branch_norm="rmsnorm"), ValueError,
     "branch_norm='rmsnorm' needs norm_position in ('sandwich', 'output'), got 'mixln': only "
     "these put a norm on F's output"),
    (lambda: Residual(nn.Identity(), D, "rezero", branch_norm="rmsnorm"), ValueError,
     "branch_norm='rmsnorm' needs norm_position in ('sandwich', 'output'), got 'rezero': only "
     "these put a norm on F's output"),
    (lambda: Residual(nn.Identity(), D, "sandwich", branch_norm="centered"), ValueError,
     f"branch_norm must be one of {NORM_CHOICES}, got 'centered'"),
    (lambda: Block(D, H, FF, norm_position="sandwich", norm="rms_1p"), ValueError,
     f"norm must be one of {NORM_CHOICES}, got 'rms_1p'"),
    (lambda: Block(D, H, FF, norm_position="output", branch_norm=("rmsnorm",)), ValueError,
     "branch_norm must be a norm kind or a pair (attention's, feed-forward's), got 1 entries: "
     "('rmsnorm',)"),
    *[
        (lambda v=v: Residual(nn.Identity(), D, "sandwich", branch_eps=v), ValueError,
         f"branch_eps must be None or a finite number > 0, got {v!r}")
        for v in (0.0, -1e-8, NAN)
    ],
    (lambda: make_norm("rmsnorm_1p_input", D, eps=0.0), ValueError,
     "eps must be None or a finite number > 0, got 0.0"),
    (lambda: make_norm("rmsnorm_noweight", D, eps="1e-5"), TypeError,
     "eps must be None or a finite number > 0, got str '1e-5'"),
    (lambda: MultiHeadAttention(D, H, o_norm="yes"), TypeError,
     "o_norm must be True or False, got 'yes'"),
    (lambda: Block(D, H, FF, o_norm=1), TypeError, "o_norm must be True or False, got 1"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("build", "error", "message"), MUSE_ERRORS, ids=[m for *_, m in MUSE_ERRORS]
)
def test_muse_flags_refuse_bad_input_naming_what_came(build, error, message):
    with pytest.raises(error, match=f"^{re.escape(message)}$"):
        build()
