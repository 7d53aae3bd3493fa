"""snippets/transformer.py against PyTorch's Transformer layers and against the formulas."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from snippets.transformer import (
    GPT,
    NORMS,
    POSITIONS,
    Block,
    DyT,
    FeedForward,
    GPTConfig,
    MultiHeadAttention,
    Residual,
    Stack,
    admin_init_,
    deepnorm_alpha_beta,
    from_torch_encoder_layer,
    layer_placements,
    make_norm,
    needs_final_norm,
)

D, H, FF = 16, 4, 48


def _randomize(module: nn.Module, seed: int = 0) -> None:
    """Non-trivial values everywhere (norm weights included), so a wrong wiring shows."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.randn(p.shape, generator=g) * 0.3 + (1.0 if p.dim() == 1 else 0.0))


# --- The sublayer connection ------------------------------------------------------


@pytest.mark.parametrize("position", POSITIONS)
@pytest.mark.parametrize("norm", NORMS)
def test_residual_computes_its_formula(position, norm, device):
    torch.manual_seed(0)
    f = nn.Linear(D, D)
    alpha = 1.7 if position == "deepnorm" else 1.0
    r = Residual(f, D, norm_position=position, norm=norm, alpha=alpha).to(device)
    _randomize(r)
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
    }[position]()
    torch.testing.assert_close(r(x), expected)


def test_each_placement_has_only_the_norms_it_uses():
    counts = {
        p: sum(n is not None for n in _norms(Residual(nn.Identity(), D, p))) for p in POSITIONS
    }
    assert counts == {"post": 1, "pre": 1, "sandwich": 2, "output": 1, "deepnorm": 1, "rezero": 0}


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
    _randomize(dyt)
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
    _randomize(ref)
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
    _randomize(ref)
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


@pytest.mark.parametrize("position", ["post", "pre", "sandwich", "mixln", "lns", "deepnorm"])
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
    with pytest.raises(ValueError, match="activation must be 'relu' or 'gelu', got 'tanh'"):
        FeedForward(D, FF, activation="tanh")
