"""A Transformer whose norm placement is one flag.

One sublayer connection, ``Residual``, covers every placement the handbook
discusses (``norm_position``), with LayerNorm, RMSNorm, DyT or Derf as the norm. The
attention (with its own norms on queries and keys, ``qk_norm``), feed-forward, block
(sequential or ``parallel``), stack and GPT classes are built from it, in the manner of
nanoGPT's ``model.py``. Pages include the sections they need.
"""

# --8<-- [start:imports]
import math
import numbers
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

# --8<-- [end:imports]


# --8<-- [start:norms]
def check_size(name: str, value) -> int:
    """Sizes (widths, heads, layers) are positive ints: a 0, -4 or 2.0 would fail later, far
    from the mistake, or build something empty without a word."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be a positive int, got {value!r} ({type(value).__name__})")
    if value <= 0:
        raise ValueError(f"{name} must be a positive int, got {value}")
    return value


def check_number(name: str, value, rule: str = "> 0", none_ok: bool = False):
    """A numeric setting: a finite real number that obeys ``rule`` ("> 0", ">= 0", "in [0, 1]",
    "in (0, 1)" or "" for any), or None where None has a meaning. One rule for every such
    setting: a NaN, an inf or an eps <= 0 (0/0 on a zero input) can only give NaN or a wrong
    answer."""
    if value is None and none_ok:
        return None
    want = f"{'None or ' if none_ok else ''}a finite number{' ' + rule if rule else ''}"
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be {want}, got {type(value).__name__} {value!r}")
    ok = {
        "> 0": 0 < value, ">= 0": 0 <= value, "in [0, 1]": 0 <= value <= 1,
        "in (0, 1)": 0 < value < 1, "": True,
    }[rule]  # fmt: skip
    if not (ok and math.isfinite(value)):
        raise ValueError(f"{name} must be {want}, got {value!r}")
    return value


def check_scale(name: str, value, d_model: int):
    """A multiplier of a (batch, seq_len, d_model) tensor: a finite number > 0 (check_number),
    or a floating tensor of such numbers, one for all features (shape () or (1,)) or one per
    feature (d_model,). A tensor obeys the float's rule: an entry <= 0 flips or drops what it
    scales, and any other shape broadcasts, (d_model, 1) turning (B, 1, C) into (B, C, C)."""
    if not isinstance(value, torch.Tensor):
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise TypeError(f"{name} must be a float or a tensor, got {type(value).__name__}")
        return float(check_number(name, value))
    want = f"a float or a floating tensor of shape (), (1,) or ({d_model},)"
    shape = tuple(value.shape)
    if not value.is_floating_point():  # an int tensor fails inside torch, a complex one too
        raise TypeError(
            f"{name} must be {want}, got a tensor of dtype {value.dtype}, shape {shape}"
        )
    if shape not in ((), (1,), (d_model,)):
        raise ValueError(f"{name} must be {want}, got a tensor of shape {shape}")
    flat = value.detach().reshape(-1)
    bad = (~(torch.isfinite(flat) & (flat > 0))).nonzero().flatten().tolist()
    if bad:  # name the entries, at most 4: a (d_model,) tensor may hold thousands
        where = [
            f"{name}[{i}] = {flat[i].item()}" if shape else f"{name} = {flat[i].item()}"
            for i in bad[:4]
        ]
        more = f" and {len(bad) - 4} more" if len(bad) > 4 else ""
        raise ValueError(
            f"{name} must be a finite number > 0 in every entry, got {', '.join(where)}{more}"
        )
    return value


def check_input(x, shape: tuple | None = None) -> torch.Tensor:
    """x is a floating-point tensor of ``shape``, whose str entries ("batch") take any size."""
    if not isinstance(x, torch.Tensor) or not x.is_floating_point():
        what = f"dtype {x.dtype}" if isinstance(x, torch.Tensor) else type(x).__name__
        raise TypeError(f"expected a floating-point tensor, got {what}")
    if shape is not None and (
        x.dim() != len(shape)
        or any(isinstance(s, int) and s != n for s, n in zip(shape, x.shape, strict=True))
    ):
        want = ", ".join(map(str, shape))
        raise ValueError(f"expected input of shape ({want}), got {tuple(x.shape)}")
    return x


def check_sources(sources, d_model: int) -> torch.Tensor:
    """The representations a depth mixer reads, stacked: (n_sources, B, T, C)."""
    if not isinstance(sources, (list, tuple)):
        raise TypeError(f"expected a list of tensors, got {type(sources).__name__}")
    if not sources:
        raise ValueError("expected at least one source, got an empty list")
    for v in sources:
        check_input(v, ("batch", "seq_len", d_model))
    if len({v.shape for v in sources}) > 1:
        raise ValueError(f"expected sources of one shape, got {[tuple(v.shape) for v in sources]}")
    return torch.stack(sources)


class DyT(nn.Module):
    """Dynamic Tanh, a norm-free stand-in for a norm layer: weight * tanh(alpha * x) + bias.

    Zhu, Chen, He, LeCun, Liu 2025 (arXiv 2503.10622): alpha is one learnable
    scalar (0.5 at init in the official code); no statistics are computed.
    """

    def __init__(self, normalized_shape: int, alpha_init: float = 0.5, bias: bool = True):
        super().__init__()
        check_size("normalized_shape", normalized_shape)
        check_number("alpha_init", alpha_init)  # tanh(0 * x) = 0: the layer would output bias
        self.alpha = nn.Parameter(torch.full((1,), float(alpha_init)))
        self.weight = nn.Parameter(torch.ones(normalized_shape))
        self.bias = nn.Parameter(torch.zeros(normalized_shape)) if bias else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.weight * torch.tanh(self.alpha * x)
        return y + self.bias if self.bias is not None else y


class Derf(DyT):
    """Dynamic erf: weight * erf(alpha * x + shift) + bias, DyT with erf and a learned shift.

    Chen, Lu, Zhu, Sun, Liu 2025 (arXiv 2512.10938): Derf(x) = erf(alpha x + s), alpha and s
    learnable scalars. Shapes and init as the authors' code (zlab-princeton/Derf,
    ViT/dynamic_erf.py): alpha 0.5, shift 0, weight 1 and bias 0 per channel.
    """

    def __init__(
        self, normalized_shape: int, alpha_init: float = 0.5, shift_init: float = 0.0, bias=True
    ):
        super().__init__(normalized_shape, alpha_init, bias)
        check_number("shift_init", shift_init, "")
        self.shift = nn.Parameter(torch.full((1,), float(shift_init)))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.weight * torch.erf(self.alpha * x + self.shift)
        return y + self.bias if self.bias is not None else y


NORMS = ("layernorm", "rmsnorm", "dyt", "derf")
# RMSNorm's other weight conventions, kinds of norm of their own:
# rmsnorm_1p        RMSNorm(x) * (1 + w), w zero at init   Gemma 3, Muse Spark's "centered" norm
# rmsnorm_1p_input  RMSNorm(x * (1 + w)): scaled first     Muse Spark's post-feed-forward norm
# rmsnorm_noweight  RMSNorm(x), no weight                  Muse Spark's post-attention norm
RMSNORM_FORMS = ("rmsnorm_1p", "rmsnorm_1p_input", "rmsnorm_noweight")
NORM_CHOICES = (*NORMS, *RMSNORM_FORMS)


def make_norm(norm: str, d_model: int, eps: float | None = None, bias: bool = True) -> nn.Module:
    """The norm layer named by ``norm``; eps None keeps each layer's PyTorch default, a given
    eps is a finite number > 0 (check_number).

    ``bias=False`` drops the norm's shift, as nn.LayerNorm(bias=False); RMSNorm has none.
    """
    check_size("d_model", d_model)
    if norm in ("layernorm", "rmsnorm", *RMSNORM_FORMS):
        check_number("eps", eps, none_ok=True)
    if norm == "layernorm":
        return nn.LayerNorm(d_model, eps=1e-5 if eps is None else eps, bias=bias)
    if norm == "rmsnorm":
        return nn.RMSNorm(d_model, eps=eps)  # eps None: PyTorch picks machine epsilon
    if norm in RMSNORM_FORMS:
        forms = {"rmsnorm_1p": OnePlusRMSNorm, "rmsnorm_1p_input": InputScaledRMSNorm}
        if norm == "rmsnorm_noweight":
            return nn.RMSNorm(d_model, eps=eps, elementwise_affine=False)
        return forms[norm](d_model, eps=eps)
    if norm in ("dyt", "derf"):
        cls = DyT if norm == "dyt" else Derf
        if eps is not None:  # no statistics are computed, so there is nothing to guard
            raise ValueError(f"{cls.__name__} has no eps, got eps={eps!r}")
        return cls(d_model, bias=bias)
    raise ValueError(f"norm must be one of {NORM_CHOICES}, got {norm!r}")


# --8<-- [end:norms]


# --8<-- [start:residual]
POSITIONS = ("post", "pre", "sandwich", "output", "deepnorm", "rezero", "normed_skip")


class Residual(nn.Module):
    """One sublayer F with its residual connection; ``norm_position`` says where the norm goes.

    post         y = Norm(x + F(x))                 Vaswani et al. 2017, BERT
    pre          y = x + F(Norm(x))                 GPT-2, LLaMA (a stack adds a final norm)
    sandwich     y = x + Norm(F(Norm(x)))           CogView's Sandwich-LN, Peri-LN, Gemma 2
    output       y = x + Norm(F(x))                 OLMo 2
    deepnorm     y = Norm(alpha * x + F(x))         DeepNet (alpha > 1)
    rezero       y = x + alpha * F(x), alpha = 0    ReZero (no norm at all)
    normed_skip  y = alpha * n + beta * F(n),       MiniMax-Text-01, MiniMax-M1 ("postnorm":
                 n = Norm(x)                        the skip carries the normed input)

    In normed_skip, beta is ``branch_scale``, a multiplier in the forward pass (MiniMax's
    *_beta_factor); DeepNet's beta (deepnorm_alpha_beta) is an init gain, not this.
    ``branch_norm`` and ``branch_eps`` give the norm on F's output (sandwich, output) a kind
    and an eps of its own; None: ``norm``'s and ``eps``. Muse Spark's layers use a weightless
    RMSNorm there after attention, RMSNorm(F * (1 + w)) after the feed-forward, eps 1e-8.
    Dropout acts on the sublayer's output before it joins the residual sum, as
    in Vaswani et al. 2017, §5.4.
    """

    def __init__(
        self,
        sublayer: nn.Module,
        d_model: int,
        norm_position: str = "pre",
        norm: str | None = None,  # None: LayerNorm, or no norm for rezero
        dropout: float = 0.0,
        eps: float | None = None,
        alpha: float | torch.Tensor = 1.0,
        pre_scale: float = 1.0,
        bias: bool | None = None,  # None: True, or nothing for rezero
        branch_scale: float = 1.0,
        branch_norm: str | None = None,  # None: norm
        branch_eps: float | None = None,  # None: eps
    ):
        super().__init__()
        if norm_position not in POSITIONS:
            raise ValueError(f"norm_position must be one of {POSITIONS}, got {norm_position!r}")
        check_size("d_model", d_model)
        p = norm_position
        # 0 drops the skip, a NaN spreads to every output: a tensor alpha as a float one
        alpha = check_scale("alpha", alpha, d_model)
        # alpha, pre_scale and branch_scale act only where their placement puts them: refuse,
        # never ignore.
        skips = ("post", "deepnorm", "normed_skip")
        if (isinstance(alpha, torch.Tensor) or alpha != 1.0) and p not in skips:
            raise ValueError(
                f"alpha scales the skip in 'post', 'deepnorm' and 'normed_skip' only, got {p!r}"
            )
        if not isinstance(pre_scale, (int, float)) or isinstance(pre_scale, bool):
            raise TypeError(f"pre_scale must be a float, got {type(pre_scale).__name__}")
        if pre_scale != 1.0 and p not in ("pre", "sandwich"):
            raise ValueError(f"pre_scale scales Norm(x) in 'pre' and 'sandwich' only, got {p!r}")
        check_number("pre_scale", pre_scale)
        check_number("branch_scale", branch_scale)  # 0 would drop F, a NaN spread everywhere
        if branch_scale != 1.0 and p != "normed_skip":
            raise ValueError(f"branch_scale scales F in 'normed_skip' only, got {p!r}")
        check_number("dropout", dropout, "in [0, 1]")
        for name, value in (("norm", norm), ("eps", eps), ("bias", bias)):
            if p == "rezero" and value is not None:  # refuse, never ignore
                raise ValueError(f"norm_position='rezero' has no norm, got {name}={value!r}")
        check_combinations(dict(norm_position=p, branch_norm=branch_norm, branch_eps=branch_eps))
        check_number("branch_eps", branch_eps, none_ok=True)
        norm = "layernorm" if norm is None else norm
        bias = True if bias is None else bias
        self.sublayer = sublayer
        self.d_model = d_model
        self.norm_position = norm_position
        self.dropout = nn.Dropout(dropout)
        self.pre_scale = pre_scale  # LayerNorm Scaling multiplies Norm(x) by 1/sqrt(layer)
        self.branch_scale = float(branch_scale)
        for name, kind in (("norm", norm), ("branch_norm", branch_norm)):
            if kind is not None and kind not in NORM_CHOICES:
                raise ValueError(f"{name} must be one of {NORM_CHOICES}, got {kind!r}")
        # Only the norms this placement uses exist, so parameter counts are honest.
        args = (norm, d_model, eps, bias)
        self.norm_in = make_norm(*args) if p in ("pre", "sandwich", "normed_skip") else None
        branch_args = (
            norm if branch_norm is None else branch_norm, d_model,
            eps if branch_eps is None else branch_eps, bias,
        )  # fmt: skip
        self.norm_branch = make_norm(*branch_args) if p in ("sandwich", "output") else None
        self.norm_out = make_norm(*args) if p in ("post", "deepnorm") else None
        if p == "rezero":
            self.alpha = nn.Parameter(torch.zeros(1))  # the block starts as the identity
        elif isinstance(alpha, torch.Tensor):  # Admin's omega: per feature, trained
            # in the dtype of the other parameters, which .to() then moves together: a float64
            # alpha in a float32 module would break Post-LN's norm and turn normed_skip float64
            self.alpha = nn.Parameter(alpha.detach().to(torch.get_default_dtype(), copy=True))
        else:
            self.alpha = float(alpha)  # DeepNet's up-weighting of x; 1 means plain x

    def branch(self, x: torch.Tensor, **kwargs) -> torch.Tensor:
        """The sublayer with the norms this placement puts on the branch, without the skip."""
        h = x
        if self.norm_in is not None:
            h = self.norm_in(h)
            if self.pre_scale != 1.0:
                h = h * self.pre_scale
        h = self.sublayer(h, **kwargs)
        if self.norm_branch is not None:
            h = self.norm_branch(h)
        return self.dropout(h)

    def forward(self, x: torch.Tensor, **kwargs) -> torch.Tensor:
        check_input(x, ("batch", "seq_len", self.d_model))
        if self.norm_position == "normed_skip":  # MiniMax: F and the skip both read Norm(x)
            x = self.norm_in(x)
            h = self.dropout(self.sublayer(x, **kwargs))
            h = h if self.branch_scale == 1.0 else self.branch_scale * h
        else:
            h = self.branch(x, **kwargs)
        if self.norm_position == "rezero":
            return x + self.alpha * h
        skip = x if isinstance(self.alpha, float) and self.alpha == 1.0 else self.alpha * x
        if self.norm_out is not None:  # post, deepnorm: the norm sits on the residual path
            return self.norm_out(skip + h)
        return skip + h


# --8<-- [end:residual]


# --8<-- [start:sublayers]
class OnePlusRMSNorm(nn.RMSNorm):
    """RMSNorm with its scale stored as 1 + weight, weight 0 at init (Gemma3RMSNorm): the same
    function, but weight decay pulls the scale toward 1, not 0."""

    def __init__(
        self, normalized_shape, eps=None, elementwise_affine=True, device=None, dtype=None
    ):
        check_number("eps", eps, none_ok=True)
        if elementwise_affine is not True:  # the layer is its weight w: without it, nn.RMSNorm
            raise ValueError(
                f"OnePlusRMSNorm needs its weight, got elementwise_affine={elementwise_affine!r}"
            )
        super().__init__(normalized_shape, eps, True, device, dtype)

    def reset_parameters(self) -> None:
        nn.init.zeros_(self.weight)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # 1 + w in float32 at least, as Gemma3RMSNorm: in bfloat16 (8 bits) a |w| < 2^-8
        # vanishes next to 1. The input too, and the output is cast back once.
        dtype = torch.promote_types(torch.promote_types(x.dtype, self.weight.dtype), torch.float32)
        scale = 1 + self.weight.to(dtype)
        return F.rms_norm(x.to(dtype), self.normalized_shape, scale, self.eps).to(x.dtype)


class InputScaledRMSNorm(OnePlusRMSNorm):
    """RMSNorm(x * (1 + w)), w zero at init: the scale acts before the norm, not after
    (MuseSparkTextInputScaledRMSNorm, transformers 5.24.0). The output's RMS is 1 whatever w
    is (up to eps): w weighs the features against each other, never the output's size."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        dtype = torch.promote_types(torch.promote_types(x.dtype, self.weight.dtype), torch.float32)
        # rounded to x's dtype between the scale and the norm, as Muse Spark's code does
        scaled = (x.to(dtype) * (1 + self.weight.to(dtype))).to(x.dtype)
        return F.rms_norm(scaled.to(dtype), self.normalized_shape, None, self.eps).to(x.dtype)


# Where a norm acts on queries and keys. (1 + w) is a value here, not a flag of its own: only
# the per-head weighted norm has that choice, so a separate flag would mean nothing for the rest.
QK_NORMS = ("head", "head_1p", "head_noweight", "proj", "l2")
# A clip caps the lengths of q and k in place of fixing them (Inkling 2): a value of qk_norm too,
# kept apart because it is not a norm (a short vector passes unchanged).
QK_CLIPS = ("l2_clip",)
# A sigmoid gate on each head's output, the two forms of Qiu et al.'s code.
OUTPUT_GATES = ("elementwise", "headwise")


class L2Clip(nn.Module):
    """t * min(1, threshold / (|t| + eps)) over the last dim: a longer vector is scaled down to
    length threshold, a shorter one passes unchanged. With ``shape`` a learned scale, ones at
    init, multiplies t first (Inkling 2's query: Inkling2ScaledL2Clip; its key: Inkling2L2Clip,
    transformers 5.24.0), so the cap holds whatever the scale learns. In float32 at least."""

    def __init__(self, threshold: float, shape: tuple[int, ...] | None = None, eps: float = 1e-6):
        super().__init__()
        self.threshold, self.eps = float(threshold), float(eps)
        self.weight = None if shape is None else nn.Parameter(torch.ones(shape))

    def forward(self, t: torch.Tensor) -> torch.Tensor:
        dtype = torch.promote_types(t.dtype, torch.float32)
        scaled = t.to(dtype) if self.weight is None else t.to(dtype) * self.weight.to(dtype)
        length = torch.linalg.vector_norm(scaled, dim=-1, keepdim=True)
        return (scaled * (self.threshold / (length + self.eps)).clamp(max=1.0)).to(t.dtype)


class MultiHeadAttention(nn.Module):
    """Multi-head self-attention; ``causal=True`` masks the future (a decoder).

    ``qk_norm`` normalizes queries and keys before their dot product (RoPE, which these
    models apply, is not part of this attention):
    head           RMSNorm over each head's head_size, weighted    Qwen3 (before RoPE)
    head_1p        the same, its scale stored as 1 + w             Gemma 3 (before RoPE)
    head_noweight  RMSNorm over each head, no weight               Llama 4 (after RoPE; the
                   same before it: RoPE rotates pairs, which keeps each head's norm)
    proj           RMSNorm over all heads of q, and of k           OLMo 2 (before RoPE)
    l2             q / |q|, k / |k| per head, logits times a learned scalar g in place of
                   1 / sqrt(head_size): QKNorm (Henry et al. 2020, arXiv 2010.04245), whose
                   code starts g at log2(L² - L), L a long training length: ``qk_scale``
    l2_clip        q * min(1, τ / |q|) per head, the same for k: a length above
                   ``clip_threshold`` τ is cut to τ, so |s| <= τ² · (the logits' scale);
                   q times a learned scale per head and feature first (ones at init):
                   Inkling 2 (Inkling2ScaledL2Clip on q, Inkling2L2Clip on k; τ = 16√2)
    ``softcap`` c bounds the logits s to (-c, c) as c * tanh(s / c) (Gemma 2).
    ``output_gate`` multiplies each head's output by sigmoid(x W_g + b_g) before ``proj``, W_g
    a Linear ``gate`` of its own reading the attention's input x (Qiu et al. 2025, arXiv
    2505.06708; code qiuzh20/gated_attention, modeling_qwen3.py):
    elementwise    one gate per feature of each head    Qwen3-Next, Qwen3.5 (their q_proj
                   holds W_g: per head, the query's rows then the gate's), Kimi K3's MLA
    headwise       one gate per head                    the paper's headwise variant
    ``v_norm=True`` puts a weightless RMSNorm over each head's values too (Gemma 3n, Gemma 4).
    ``o_norm=True`` puts one over each head's output, before the output gate (Muse Spark).
    ``scale`` multiplies q·k in place of 1 / sqrt(head_size) (None), as PyTorch SDPA's ``scale``:
    Gemma 3n and Gemma 4 use 1.0, their q and k norms setting the size of the logits. Muse
    Spark multiplies q by a fixed qk_scale_factor after its weightless norm (head_noweight),
    then q·k by 1 / sqrt(head_size): one constant, scale = qk_scale_factor / sqrt(head_size).
    ``k_eq_v=True`` reads the values from the key projection (one W_k, no W_v): v is k before
    k's norm, so the two differ by their norms alone (Gemma 4's global layers, attention_k_eq_v:
    a weighted k_norm, a weightless v_norm; qk_norm="head", v_norm=True). qkv then has 2 ·
    d_model rows, [W_q; W_k].
    ``eps`` is the eps of the attention's norms, the qk_norm's, the v_norm's and the o_norm's
    (Gemma 4 gives all three its rms_norm_eps, Muse Spark both its). eps=None keeps PyTorch's
    default: in the RMSNorms torch's machine epsilon of the dtype they compute in (float32's,
    1.19e-7, for float16 and bfloat16 input too), in l2 F.normalize's 1e-12, in l2_clip the
    1e-6 that Inkling2L2Clip adds to the length. The models above
    set their own (rms_norm_eps in transformers 5.24.0: 1e-6 in Qwen3 and Gemma 3, 1e-5 in
    OLMo 2, Llama 4 and Muse Spark): pass it.
    """

    def __init__(
        self,
        d_model: int,
        n_heads: int,
        dropout: float = 0.0,
        causal: bool = False,
        bias=True,
        qk_norm: str | None = None,
        eps: float | None = None,
        qk_scale: float | None = None,
        softcap: float | None = None,
        v_norm: bool = False,
        scale: float | None = None,
        output_gate: str | None = None,
        o_norm: bool = False,
        clip_threshold: float | None = None,
        k_eq_v: bool = False,
    ):
        super().__init__()
        check_size("d_model", d_model)
        check_size("n_heads", n_heads)
        if d_model % n_heads != 0:
            raise ValueError(f"d_model ({d_model}) must be divisible by n_heads ({n_heads})")
        if qk_norm is not None and qk_norm not in QK_NORMS + QK_CLIPS:
            raise ValueError(
                f"qk_norm must be None or one of {QK_NORMS}, got {qk_norm!r} (or a clip in "
                f"place of a norm: {', '.join(map(repr, QK_CLIPS))})"
            )
        if output_gate is not None and output_gate not in OUTPUT_GATES:
            raise ValueError(
                f"output_gate must be None or one of {OUTPUT_GATES}, got {output_gate!r}"
            )
        for name, value in (("v_norm", v_norm), ("o_norm", o_norm), ("k_eq_v", k_eq_v)):
            if not isinstance(value, bool):
                raise TypeError(f"{name} must be True or False, got {value!r}")
        if eps is not None and qk_norm is None and not v_norm and not o_norm:  # refuse it
            raise ValueError(
                "eps is for a qk_norm, v_norm or o_norm, got qk_norm=None, v_norm=False, "
                f"o_norm=False and eps={eps!r}"
            )
        check_number("eps", eps, none_ok=True)
        if scale is not None and qk_norm == "l2":  # l2 learns its own scale, g
            raise ValueError(
                f"qk_norm='l2' scales the logits by its learned qk_scale, got scale={scale!r}"
            )
        check_number("scale", scale, none_ok=True)  # <= 0 flattens or inverts attention
        check_number("dropout", dropout, "in [0, 1]")
        if qk_norm == "l2" and qk_scale is None:
            raise ValueError(
                "qk_norm='l2' needs qk_scale, g at init (QKNorm: log2(L² - L)), got None"
            )
        if qk_scale is not None and qk_norm != "l2":
            raise ValueError(f"qk_scale is for qk_norm='l2', got qk_norm={qk_norm!r}")
        check_number("qk_scale", qk_scale, none_ok=True)  # g <= 0 flattens or inverts attention
        if qk_norm == "l2_clip" and clip_threshold is None:  # no length suits every head size
            raise ValueError(
                "qk_norm='l2_clip' needs clip_threshold, the largest length of q and k "
                "(Inkling 2: 16√2 ≈ 22.63 at head_dim 128), got None"
            )
        if clip_threshold is not None and qk_norm != "l2_clip":
            raise ValueError(f"clip_threshold is for qk_norm='l2_clip', got qk_norm={qk_norm!r}")
        check_number("clip_threshold", clip_threshold, none_ok=True)  # <= 0 erases q and k
        if softcap is not None and (
            isinstance(softcap, bool)
            or not isinstance(softcap, (int, float))
            or not 0 < softcap < math.inf
        ):
            raise ValueError(f"softcap must be a positive float, got {softcap!r}")
        self.d_model, self.n_heads, self.causal = d_model, n_heads, causal
        self.k_eq_v = k_eq_v  # rows: [W_q; W_k; W_v], or [W_q; W_k] when v reads k's projection
        self.qkv = nn.Linear(d_model, (2 if k_eq_v else 3) * d_model, bias=bias)
        self.proj = nn.Linear(d_model, d_model, bias=bias)
        self.attn_dropout = nn.Dropout(dropout)
        self.qk_norm, self.eps, self.softcap = qk_norm, eps, softcap
        self.scale = None if scale is None else float(scale)
        hs = d_model // n_heads
        norms = {
            "head": lambda: nn.RMSNorm(hs, eps),
            "head_1p": lambda: OnePlusRMSNorm(hs, eps),
            "head_noweight": lambda: nn.RMSNorm(hs, eps, elementwise_affine=False),
            "proj": lambda: nn.RMSNorm(d_model, eps),
        }
        if qk_norm in norms:
            self.q_norm, self.k_norm = norms[qk_norm](), norms[qk_norm]()
        if qk_norm == "l2":
            self.qk_scale = nn.Parameter(torch.tensor(float(qk_scale)))  # one g per layer
        if qk_norm == "l2_clip":  # a learned scale on q alone, as Inkling 2
            clip_eps = 1e-6 if eps is None else eps
            self.q_norm = L2Clip(clip_threshold, (n_heads, hs), clip_eps)
            self.k_norm = L2Clip(clip_threshold, None, clip_eps)
        self.v_norm = nn.RMSNorm(hs, eps, elementwise_affine=False) if v_norm else None
        self.o_norm = nn.RMSNorm(hs, eps, elementwise_affine=False) if o_norm else None
        # Its own Linear, after proj, so the default's qkv, proj and their random draws stay.
        self.output_gate = output_gate
        if output_gate is not None:
            n_gates = d_model if output_gate == "elementwise" else n_heads
            self.gate = nn.Linear(d_model, n_gates, bias=bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, C = check_input(x, ("batch", "seq_len", self.d_model)).shape
        if self.k_eq_v:  # Gemma 4's global layers: the values are k before its norm
            q, k = self.qkv(x).split(C, dim=2)
            v = k
        else:
            q, k, v = self.qkv(x).split(C, dim=2)
        if self.qk_norm == "proj":  # OLMo 2: over the whole projection, before the split
            q, k = self.q_norm(q), self.k_norm(k)
        # (B, T, C) -> (B, T, n_heads, head_size)
        q, k, v = (t.view(B, T, self.n_heads, C // self.n_heads) for t in (q, k, v))
        if self.qk_norm in ("head", "head_1p", "head_noweight", "l2_clip"):  # over head_size
            q, k = self.q_norm(q), self.k_norm(k)
        if self.v_norm is not None:  # Gemma 4: over head_size, no weight
            v = self.v_norm(v)
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))  # (B, n_heads, T, head_size)
        if self.qk_norm == "l2":
            eps = 1e-12 if self.eps is None else self.eps  # F.normalize's default
            q, k = F.normalize(q, dim=-1, eps=eps), F.normalize(k, dim=-1, eps=eps)
            att = self.qk_scale * (q @ k.transpose(-2, -1))  # cosines times g, in [-g, g]
        elif self.scale is not None:
            att = (q @ k.transpose(-2, -1)) * self.scale
        else:
            att = (q @ k.transpose(-2, -1)) / math.sqrt(k.size(-1))  # (B, nh, T, T)
        if self.softcap is not None:
            att = self.softcap * torch.tanh(att / self.softcap)
        if self.causal:
            future = torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1)
            att = att.masked_fill(future, float("-inf"))  # softmax gives the future weight 0
        att = self.attn_dropout(att.softmax(dim=-1))
        y = (att @ v).transpose(1, 2)  # (B, T, n_heads, head_size)
        if self.o_norm is not None:  # Muse Spark: each head's output, before the gate
            y = self.o_norm(y)
        if self.output_gate is not None:  # (B, T, n_heads, head_size or 1): read from x
            y = y * torch.sigmoid(self.gate(x)).view(B, T, self.n_heads, -1)
        return self.proj(y.reshape(B, T, C))  # heads side by side again


# gelu_tanh: GELU's tanh approximation, the gelu of GPT-2 (openai/gpt-2 src/model.py)
ACTIVATIONS = ("relu", "gelu", "gelu_tanh")


class FeedForward(nn.Module):
    """Position-wise MLP: Linear -> activation -> dropout -> Linear."""

    def __init__(self, d_model: int, d_ff: int, dropout=0.0, activation="gelu", bias=True):
        super().__init__()
        check_size("d_model", d_model)
        check_size("d_ff", d_ff)
        if activation not in ACTIVATIONS:
            raise ValueError(f"activation must be one of {ACTIVATIONS}, got {activation!r}")
        check_number("dropout", dropout, "in [0, 1]")
        self.fc = nn.Linear(d_model, d_ff, bias=bias)
        acts = {"relu": nn.ReLU(), "gelu": nn.GELU(), "gelu_tanh": nn.GELU(approximate="tanh")}
        self.act = acts[activation]
        self.dropout = nn.Dropout(dropout)
        self.proj = nn.Linear(d_ff, d_model, bias=bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.proj(self.dropout(self.act(self.fc(x))))


# --8<-- [end:sublayers]


# --8<-- [start:block]
PARALLEL = ("one_norm", "two_norms")


class Block(nn.Module):
    """A Transformer layer: self-attention then feed-forward, each in its own Residual.

    ``causal=False`` is an encoder layer, ``causal=True`` a decoder-only block.
    ``parallel`` feeds both sublayers the same x and adds both outputs to it (Pre-LN only):
    one_norm   x + Attn(N(x)) + MLP(N(x))     GPT-J, PaLM, Cohere: one norm for both
    two_norms  x + Attn(N1(x)) + MLP(N2(x))   GPT-NeoX (use_parallel_residual=True)
    ``qk_norm``, ``qk_scale``, ``softcap``, ``v_norm``, ``scale``, ``output_gate`` and
    ``o_norm`` go to the attention; so does ``eps`` with a qk_norm, v_norm or o_norm.
    ``alpha``, ``branch_scale`` and ``branch_eps`` go to both Residuals; ``branch_norm`` too, or
    a pair (attention's, feed-forward's) gives each its own (Muse Spark:
    ("rmsnorm_noweight", "rmsnorm_1p_input")).
    ``layer_scalar`` s multiplies the block's output, s * Block(x): Gemma 4's ``layer_scalar``,
    a buffer (loaded with the weights, not trained; ones at init in transformers 5.24.0).
    None, the default, multiplies by nothing.
    """

    def __init__(
        self,
        d_model: int,
        n_heads: int,
        d_ff: int,
        dropout: float = 0.0,
        norm_position: str = "pre",
        norm: str | None = None,  # None: LayerNorm, or no norm for rezero
        activation: str = "gelu",
        causal: bool = False,
        bias: bool = True,
        eps: float | None = None,
        alpha: float | torch.Tensor = 1.0,
        pre_scale: float = 1.0,
        parallel: str | None = None,
        qk_norm: str | None = None,
        qk_scale: float | None = None,
        softcap: float | None = None,
        v_norm: bool = False,
        scale: float | None = None,
        branch_scale: float = 1.0,
        layer_scalar: float | None = None,
        output_gate: str | None = None,
        o_norm: bool = False,
        branch_norm: str | tuple[str, str] | None = None,
        branch_eps: float | None = None,
    ):
        super().__init__()
        if parallel is not None and parallel not in PARALLEL:
            raise ValueError(f"parallel must be None or one of {PARALLEL}, got {parallel!r}")
        if parallel is not None and norm_position != "pre":  # a norm on the sum has no branch
            raise ValueError(
                f"parallel={parallel!r} needs norm_position='pre', got {norm_position!r}"
            )
        # With a qk_norm, v_norm or o_norm and no norm of its own (rezero), eps is the attention's.
        attn_norms = qk_norm is not None or v_norm or o_norm
        if isinstance(branch_norm, (tuple, list)):
            if len(branch_norm) != 2:
                raise ValueError(
                    "branch_norm must be a norm kind or a pair (attention's, feed-forward's), "
                    f"got {len(branch_norm)} entries: {tuple(branch_norm)!r}"
                )
            attn_branch_norm, mlp_branch_norm = branch_norm
        else:
            attn_branch_norm = mlp_branch_norm = branch_norm
        conn_eps = None if norm_position == "rezero" and attn_norms else eps
        conn = dict(norm_position=norm_position, norm=norm, dropout=dropout, eps=conn_eps)
        # bias reaches the linears, and the norms where there are any
        conn.update(
            alpha=alpha, pre_scale=pre_scale, bias=None if norm_position == "rezero" else bias
        )
        conn.update(branch_scale=branch_scale, branch_eps=branch_eps)
        attn_eps = eps if attn_norms else None
        attn = MultiHeadAttention(
            d_model, n_heads, dropout, causal, bias, qk_norm, attn_eps, qk_scale, softcap,
            v_norm, scale, output_gate=output_gate, o_norm=o_norm,
        )  # fmt: skip
        self.attn = Residual(attn, d_model, **conn, branch_norm=attn_branch_norm)
        mlp = FeedForward(d_model, d_ff, dropout, activation, bias)
        self.mlp = Residual(mlp, d_model, **conn, branch_norm=mlp_branch_norm)
        self.parallel = parallel
        if parallel == "one_norm":
            self.mlp.norm_in = self.attn.norm_in  # one module, one set of weights
        check_number("layer_scalar", layer_scalar, "", none_ok=True)
        if layer_scalar == 0:  # it would erase the residual stream
            raise ValueError(f"layer_scalar must be None or a nonzero number, got {layer_scalar!r}")
        s = None if layer_scalar is None else torch.full((1,), float(layer_scalar))
        self.register_buffer("layer_scalar", s)  # None: no entry in the state_dict

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.parallel is None:
            y = self.mlp(self.attn(x))
        else:
            check_input(x, ("batch", "seq_len", self.attn.d_model))
            y = x + self.attn.branch(x) + self.mlp.branch(x)
        return y if self.layer_scalar is None else y * self.layer_scalar


# --8<-- [end:block]


# --8<-- [start:sinkhorn]
def sinkhorn_knopp(logits: torch.Tensor, n_iters: int = 20, eps: float = 1e-6) -> torch.Tensor:
    """A doubly stochastic matrix (rows and columns sum to 1) over the last two dims, to the
    accuracy that n_iters iterations reach.

    Sinkhorn-Knopp as DeepSeek-V4's mHC runs it (transformers 5.24.0,
    DeepseekV4HyperConnection; deepseek-ai/TileKernels sinkhorn_normalize_ref): a row
    softmax plus eps, the columns normalized, then rows and columns n_iters - 1 more
    times. eps keeps every entry and every division away from zero; eps=0, the plain
    iteration, is refused on logits where it would divide 0 by 0.

    The columns (sums over dim -2), normalized last, sum to 1 within about eps; the rows
    only approach 1. Measured with the defaults on 100,000 float32 4 x 4 matrices of logits
    std * N(0, 1) (seed 0, in the tests): std 1, rows off by at most 0.15%; std 10, by up
    to 8.3%, and the spectral norm reaches 1.021 instead of 1.
    """
    check_input(logits)
    if logits.dim() < 2 or logits.shape[-1] != logits.shape[-2]:
        raise ValueError(f"expected square matrices (..., n, n), got shape {tuple(logits.shape)}")
    check_size("n_iters", n_iters)
    if isinstance(eps, numbers.Real) and not eps >= 0:
        raise ValueError(f"eps must be >= 0, got {eps}")
    check_number("eps", eps, ">= 0")  # a str or inf: inf / inf is NaN
    if not torch.isfinite(logits).all():  # one inf or NaN would spread over its whole matrix
        raise ValueError("expected finite logits, got inf or NaN")
    p = logits.softmax(dim=-1) + eps
    if eps == 0 and (p.sum(dim=-2) == 0).any():  # the column normalization would be 0 / 0
        raise ValueError(
            "eps=0 divides by 0 on these logits: a column of their row softmax underflows to 0 "
            f"(logits from {logits.min().item():.3g} to {logits.max().item():.3g}); use eps > 0"
        )
    p = p / (p.sum(dim=-2, keepdim=True) + eps)  # columns
    for _ in range(n_iters - 1):
        p = p / (p.sum(dim=-1, keepdim=True) + eps)  # rows
        p = p / (p.sum(dim=-2, keepdim=True) + eps)  # columns
    return p


# --8<-- [end:sinkhorn]


# --8<-- [start:hyper_connection]
class HyperConnection(nn.Module):
    """One connection of n residual streams h_1..h_n around one sublayer F.

    x    = Σ_j pre_j h_j                        collapse: F's input, (B, T, C)
    h'_k = post_k F(x) + Σ_j comb_jk h_j        expand F(x) into the streams, mix them

    constrained=False: Hyper-Connections (Zhu et al. 2024, arXiv 2409.19606, Eqs. 10-14 and
      Appendix J). A static [pre | comb] and post, plus (dynamic) tanh corrections read from
      each stream's LayerNorm, scaled by 0.01; sublayer k starts reading stream k mod n.
    constrained=True: mHC as DeepSeek-V4 runs it (transformers 5.24.0, models/deepseek_v4/
      modeling_deepseek_v4.py, DeepseekV4HyperConnection). One projection of the flattened
      streams under an unweighted RMSNorm gives pre = sigmoid + eps, post = 2 sigmoid and
      comb = Sinkhorn. comb is doubly stochastic only to Sinkhorn's accuracy: each new stream
      is a convex combination of the old ones (sum_j comb_jk = 1 within about eps), so no
      stream outgrows the largest, but the other sums are off by up to 8% on large logits
      (see sinkhorn_knopp), so the spectral norm is about 1, not 1, and the streams' sum is
      kept only as closely.
    independent=True: the independent HC of Tencent's Hy4 (transformers 5.24.0, models/hy_v4/
      modeling_hy_v4.py, HYV4HyperConnection): DeepSeek-V4's form without comb, so
      h'_k = post_k F(x) + h_k (H_res = I, no Sinkhorn). pre = sigmoid + eps and
      post = magnitude sigmoid + eps, the RMS of the flattened streams scaling the projection's
      output; all in float32 whatever the streams' dtype, autocast off, as Hy4 computes them.
    head=True (mHC, iHC): only the collapse, DeepseekV4HyperHead's or HYV4HyperHead's, before
      the final norm.
    n_fracs=m > 1: Frac-Connections (Zhu et al. 2025, arXiv 2503.14125, Eqs. 6-15 and
      Algorithms 1-3): the HC above on one stream split into m fractions h_j of width C/m,
      with pre an (m, m) matrix whose outputs are concatenated (x_i = Σ_j pre_ji h_j) and
      post_k scaling fraction k of F(x); pre and comb start as the identity.
    """

    def __init__(
        self,
        d_model: int,
        n_streams: int | None = None,  # None: 4, or 1 with n_fracs > 1
        constrained: bool = False,
        dynamic: bool = True,
        layer_index: int | None = None,  # HC: None is 0
        head: bool = False,
        eps: float | None = None,  # mHC: pre's floor, Sinkhorn's
        norm_eps: float | None = None,  # the norm the mixing reads: mHC's RMSNorm, HC's LayerNorm
        sinkhorn_iters: int | None = None,  # mHC
        bias: bool | None = None,  # HC's LayerNorm; None: True
        n_fracs: int = 1,  # HC: split the one stream into n_fracs fractions (Frac-Connections)
        independent: bool = False,  # iHC: no mixing of the streams (Hy4)
        magnitude: float | None = None,  # iHC: post's largest value; None: Hy4's hc_magnitude 2
    ):
        super().__init__()
        m = self.n_fracs = check_size("n_fracs", n_fracs)
        if n_streams is None:
            n_streams = 1 if m > 1 else 4
        n = self.n_streams = check_size("n_streams", n_streams)
        self.d_model = check_size("d_model", d_model)
        if m > 1:  # the paper defines fractions for HC only, of one stream, read from pre = I
            wrong = {"constrained": constrained, "independent": independent, "head": head}
            wrong["layer_index"] = layer_index
            wrong = {k: v for k, v in wrong.items() if v not in (False, None)}
            if n != 1:
                wrong["n_streams"] = n
            for name, value in wrong.items():
                want = "1 or unset" if name == "n_streams" else "unset"
                raise ValueError(
                    f"Frac-Connections (n_fracs={m}) split one HC stream and start from pre = I: "
                    f"{name} must be {want}, got {name}={value!r}"
                )
            if d_model % m:
                raise ValueError(f"n_fracs must divide d_model, got d_model={d_model}, n_fracs={m}")
        self.width = d_model // m  # one stream's width: C for HC, C/m for a fraction
        self.rows = m if m > 1 else n  # the streams are (B, T, rows, width)
        for name, flag in (("constrained", constrained), ("independent", independent)):
            if not isinstance(flag, bool):
                raise TypeError(f"{name} must be True or False, got {flag!r}")
        if constrained and independent:
            raise ValueError(
                "independent=True drops comb, the mixing that constrained=True constrains: "
                "choose one, got constrained=True, independent=True"
            )
        self.constrained, self.dynamic, self.head = constrained, dynamic, head
        self.independent = independent
        deepseek_form = constrained or independent  # one projection of the flattened streams
        if deepseek_form and not dynamic:
            flag = "constrained" if constrained else "independent"
            raise ValueError(f"dynamic=False is Zhu et al.'s static HC, got {flag}=True")
        if head and not deepseek_form:
            raise ValueError(
                "Zhu et al. sum the streams at the end: head=True needs constrained or independent"
            )
        # Each setting acts in one variant only: refuse it elsewhere, never ignore it.
        variant = "mHC" if constrained else "iHC" if independent else None
        variant = variant + "'s head" if head else variant
        variant = variant or ("HC" if dynamic else "static HC")
        unused = {"layer_index": layer_index} if deepseek_form else {"eps": eps}
        if head or not constrained:
            unused["sinkhorn_iters"] = sinkhorn_iters  # the heads, HC and iHC run no Sinkhorn
        if deepseek_form or not dynamic:
            unused["bias"] = bias  # only HC's LayerNorm has a bias
        if not dynamic:
            unused["norm_eps"] = norm_eps  # static HC reads no norm
        if head or not independent:
            unused["magnitude"] = magnitude  # only iHC's post has one
        for name, value in unused.items():
            if value is not None:
                raise ValueError(f"{variant} has no {name}, got {name}={value!r}")
        self.magnitude = None
        if independent:  # None: Hy4's hc_eps, rms_norm_eps and hc_magnitude
            eps = check_number("eps", 1e-6 if eps is None else eps)
            norm_eps = 1e-5 if norm_eps is None else norm_eps
            if not head:
                self.magnitude = check_number("magnitude", 2.0 if magnitude is None else magnitude)
        if constrained:  # None: DeepSeek-V4's hc_eps, rms_norm_eps and hc_sinkhorn_iters
            eps = check_number("eps", 1e-6 if eps is None else eps)
            norm_eps = 1e-6 if norm_eps is None else norm_eps
            if not head:
                sinkhorn_iters = 20 if sinkhorn_iters is None else sinkhorn_iters
                check_size("sinkhorn_iters", sinkhorn_iters)
        elif dynamic and norm_eps is None:
            norm_eps = 1e-5  # nn.LayerNorm's
        if norm_eps is not None:  # None only in static HC, which has no norm
            check_number("norm_eps", norm_eps)
        self.eps, self.norm_eps = eps, norm_eps
        self.sinkhorn_iters = sinkhorn_iters
        if constrained:
            self.sizes = [n] if head else [n, n, n * n]  # pre, post, comb
            # init as transformers' DeepseekV4PreTrainedModel._init_weights: N(0, 0.02), 0, 1
            self.fn = nn.Parameter(0.02 * torch.randn(sum(self.sizes), n * d_model))
            self.base = nn.Parameter(torch.zeros(sum(self.sizes)))
            self.scale = nn.Parameter(torch.ones(len(self.sizes)))
            return
        if independent:
            self.sizes = [n] if head else [n, n]  # pre, post
            # init as transformers' HYV4PreTrainedModel._init_weights, initializer_range 0.006:
            # pre starts at sigmoid(-log(n - 1)) = 1/n, post at magnitude / 2
            self.fn = nn.Parameter(0.006 * torch.randn(sum(self.sizes), n * d_model))
            base = torch.zeros(sum(self.sizes))
            base[:n] = -math.log(max(n - 1, 1))
            self.base = nn.Parameter(base)
            self.scale = nn.Parameter(torch.full((len(self.sizes),), 0.01))
            return
        layer_index = 0 if layer_index is None else layer_index
        if isinstance(layer_index, bool) or not isinstance(layer_index, int) or layer_index < 0:
            raise ValueError(f"layer_index must be an int >= 0, got {layer_index!r}")
        pre = torch.zeros(n, 1)
        pre[layer_index % n] = 1.0
        if m > 1:  # Frac-Connections, Eq. 15: pre = comb = I, so F reads h itself
            pre, n = torch.eye(m), m
        self.static_alpha = nn.Parameter(torch.cat([pre, torch.eye(n)], dim=1))  # [pre | comb]
        self.static_beta = nn.Parameter(torch.ones(n))  # post
        if dynamic:  # zero projections: the dynamic part starts at 0
            w = self.width
            self.norm = nn.LayerNorm(w, eps=norm_eps, bias=True if bias is None else bias)
            self.dynamic_alpha_fn = nn.Parameter(torch.zeros(w, pre.shape[1] + n))
            self.dynamic_alpha_scale = nn.Parameter(torch.full((1,), 0.01))
            self.dynamic_beta_fn = nn.Parameter(torch.zeros(w))
            self.dynamic_beta_scale = nn.Parameter(torch.full((1,), 0.01))

    def mixing(self, h: torch.Tensor):
        """pre (B, T, n), post (B, T, n), comb (B, T, n, n) from the streams h (B, T, n, C)
        (iHC: comb None); with n_fracs = m > 1, pre (B, T, m, m) from the fractions h
        (B, T, m, C/m)."""
        n = self.n_streams
        if self.independent and torch.is_autocast_enabled(h.device.type):
            with torch.autocast(h.device.type, enabled=False):  # Hy4: float32 under autocast too
                return self.mixing(h)
        if self.constrained or self.independent:
            dtype = torch.promote_types(h.dtype, torch.float32)  # as DeepSeek-V4: >= float32
            flat = h.flatten(-2).to(dtype)
            if self.independent:  # Hy4 scales the projection's output by 1/RMS instead
                rms = torch.rsqrt(flat.square().mean(-1, keepdim=True) + self.norm_eps)
                parts = (F.linear(flat, self.fn.to(dtype)) * rms).split(self.sizes, dim=-1)
            else:
                flat = F.rms_norm(flat, (n * self.d_model,), eps=self.norm_eps)
                parts = F.linear(flat, self.fn.to(dtype)).split(self.sizes, dim=-1)
            bases = self.base.to(dtype).split(self.sizes)
            logits = [p * s + b for p, s, b in zip(parts, self.scale.to(dtype), bases, strict=True)]
            pre = torch.sigmoid(logits[0]) + self.eps
            if self.head:
                return pre, None, None
            if self.independent:  # no comb: each stream keeps its own past (H_res = I)
                return pre, self.magnitude * torch.sigmoid(logits[1]) + self.eps, None
            comb = sinkhorn_knopp(logits[2].unflatten(-1, (n, n)), self.sinkhorn_iters, self.eps)
            return pre, 2 * torch.sigmoid(logits[1]), comb
        alpha, beta = self.static_alpha, self.static_beta  # (n, 1 + n), (n,)
        if self.dynamic:
            hn = self.norm(h)  # (B, T, n, C): each stream normalized on its own
            alpha = alpha + self.dynamic_alpha_scale * torch.tanh(hn @ self.dynamic_alpha_fn)
            beta = beta + self.dynamic_beta_scale * torch.tanh(hn @ self.dynamic_beta_fn)
        if self.n_fracs > 1:  # pre (B, T, m, m): fraction j's weight in F's fraction i
            return alpha[..., : self.n_fracs], beta, alpha[..., self.n_fracs :]
        return alpha[..., 0], beta, alpha[..., 1:]

    def collapse(self, h: torch.Tensor):
        """F's input x = Σ_j pre_j h_j (B, T, C), and the post and comb that expand needs."""
        check_input(h, ("batch", "seq_len", self.rows, self.width))
        pre, post, comb = self.mixing(h)
        if self.n_fracs > 1:  # fraction i of x is Σ_j pre_ji h_j: concatenated, not summed
            dtype = torch.promote_types(pre.dtype, h.dtype)  # as HC's sum, then h's dtype
            x = pre.transpose(-1, -2).to(dtype) @ h.to(dtype)
            return x.flatten(-2).to(h.dtype), post, comb
        return (pre.unsqueeze(-1) * h).sum(dim=-2).to(h.dtype), post, comb

    def expand(self, y: torch.Tensor, h: torch.Tensor, post, comb) -> torch.Tensor:
        """The new streams h'_k = post_k y + Σ_j comb_jk h_j, (B, T, n, C)."""
        check_input(y, ("batch", "seq_len", self.d_model))
        if comb is None:  # iHC: h'_k = post_k y + h_k, in float32 as Hy4's decoder layer
            dtype = torch.promote_types(post.dtype, h.dtype)
            x = post.to(dtype).unsqueeze(-1) * y.to(dtype).unsqueeze(-2) + h.to(dtype)
            return x.to(h.dtype)
        post, comb = post.to(h.dtype), comb.to(h.dtype)
        if self.n_fracs > 1:  # post_k scales fraction k of y only
            y = y.unflatten(-1, (self.n_fracs, self.width))
            return post.unsqueeze(-1) * y + comb.transpose(-1, -2) @ h
        return post.unsqueeze(-1) * y.unsqueeze(-2) + comb.transpose(-1, -2) @ h

    def forward(self, h: torch.Tensor, sublayer) -> torch.Tensor:
        x, post, comb = self.collapse(h)
        return self.expand(sublayer(x), h, post, comb)


# --8<-- [end:hyper_connection]


# --8<-- [start:gated_streams]
class GatedStreams(nn.Module):
    """n residual streams that never mix, with the norm inside the connection: Qwen4-Exp's
    Qwen4ExpTextGatedResidual (transformers 5.24.0, models/qwen4_exp/modular_qwen4_exp.py).

    z_k  = Norm_k(h_k)                            each stream its own norm; F has none
    g    = sigmoid(W_up silu(W_down vec(z) / n))  a gate per stream and feature, low rank
    x    = mean_k g_k * z_k                       F's input, (B, T, C)
    h'_k = h_k + post_k F(x),  post = 2 sigmoid(W_inj vec(z) / n)   (inject, W_inj)

    No comb, as in Hy4's iHC: each stream keeps its own past (H_res = I). ``norm`` None is
    Qwen4-Exp's (1 + w) RMSNorm, rmsnorm_1p, one per stream as its grouped hc_norm; ``eps``
    None its rms_norm_eps 1e-6 for an RMSNorm (the norm's own default otherwise), ``rank``
    None its hc_lowrank 320, ``n_streams`` None its hc_count 4. head=True is the model's
    final mixer (Qwen4ExpTextModel.hyper_connection_mixer): x without post, and no final norm
    after it. The projections start as Qwen4ExpPreTrainedModel._init_weights draws them,
    N(0, 0.02). It computes in the streams' dtype, each norm in float32 at least, as Qwen4-Exp.
    """

    def __init__(
        self,
        d_model: int,
        n_streams: int | None = None,
        norm: str | None = None,
        eps: float | None = None,
        bias: bool = True,  # a LayerNorm's shift; the RMSNorms have none
        rank: int | None = None,
        head: bool = False,
    ):
        super().__init__()
        self.d_model = check_size("d_model", d_model)
        n = self.n_streams = check_size("n_streams", 4 if n_streams is None else n_streams)
        rank = check_size("rank", 320 if rank is None else rank)
        if not isinstance(head, bool):
            raise TypeError(f"head must be True or False, got {head!r}")
        self.head = head
        norm = "rmsnorm_1p" if norm is None else norm
        if eps is None and norm in ("rmsnorm", *RMSNORM_FORMS):
            eps = 1e-6
        self.norms = nn.ModuleList(make_norm(norm, d_model, eps, bias) for _ in range(n))
        self.gate_down = nn.Linear(n * d_model, rank, bias=False)
        self.gate_up = nn.Linear(rank, n * d_model, bias=False)
        self.inject = None if head else nn.Linear(n * d_model, n, bias=False)
        for linear in (self.gate_down, self.gate_up, self.inject):
            if linear is not None:
                nn.init.normal_(linear.weight, std=0.02)

    def collapse(self, h: torch.Tensor):
        """F's input x (B, T, C) and the post that expand needs (None in the mixer), from
        the streams h (B, T, n, C)."""
        check_input(h, ("batch", "seq_len", self.n_streams, self.d_model))
        n = self.n_streams
        normed = torch.stack([norm(h[..., k, :]) for k, norm in enumerate(self.norms)], dim=-2)
        flat = normed.flatten(-2)  # (B, T, n * C), stream by stream as Qwen4-Exp's layout
        down = F.linear(flat, self.gate_down.weight.to(flat.dtype)) / n
        gate = torch.sigmoid(F.linear(F.silu(down), self.gate_up.weight.to(flat.dtype)))
        x = (gate.unflatten(-1, (n, self.d_model)) * normed).mean(dim=-2)
        if self.head:
            return x, None
        return x, 2 * torch.sigmoid(F.linear(flat, self.inject.weight.to(flat.dtype)) / n)

    def expand(self, y: torch.Tensor, h: torch.Tensor, post: torch.Tensor) -> torch.Tensor:
        """The new streams h'_k = h_k + post_k y, (B, T, n, C): nothing mixes them."""
        check_input(y, ("batch", "seq_len", self.d_model))
        return h + y.unsqueeze(-2) * post.unsqueeze(-1)

    def forward(self, h: torch.Tensor, sublayer) -> torch.Tensor:
        if self.head:
            raise ValueError("the mixer (head=True) ends the stack: call collapse(h), not forward")
        x, post = self.collapse(h)
        return self.expand(sublayer(x), h, post)


# --8<-- [end:gated_streams]


# --8<-- [start:attnres]
DEPTH_VALUES = ("raw", "normed")  # what DepthAttention averages: the sources or their RMSNorm


class DepthAttention(nn.Module):
    """Attention Residuals (Kimi Team 2026, arXiv 2603.15031, Eqs. 2-4): a sublayer's input is
    a softmax over depth of earlier representations v_i, one pseudo-query w and one RMSNorm
    per sublayer, w starting at zero (§5: h starts as the mean of what it averages),

        values="raw":     h = Σ_i α_i v_i,           α_i ∝ exp(w · RMSNorm(v_i))
        values="normed":  h = Σ_i α_i RMSNorm(v_i),  α_i ∝ exp(w · RMSNorm(v_i) / sqrt(d))

    "raw" is the report's and Kimi K3's (KimiK3AttentionResidual); "normed" is Inkling 2's
    (Inkling2BlockAttentionResidual, transformers 5.24.0; eps 1e-6), the RMSNorm without a
    weight: a convex mix of unit-RMS vectors. The stack picks the v_i: every output (Full
    AttnRes) or sums over blocks of sublayers (Block AttnRes, Eqs. 5-6). It computes in
    float32 at least, returning the sources' dtype; K3 and Inkling 2 keep w (K3 the norm's
    weight too) in float32: call .float() on this module after casting a model.
    """

    def __init__(self, d_model: int, eps: float | None = None, values: str = "raw"):
        super().__init__()
        self.d_model = check_size("d_model", d_model)
        if values not in DEPTH_VALUES:
            raise ValueError(f"values must be one of {DEPTH_VALUES}, got {values!r}")
        self.values = values
        self.query = nn.Parameter(torch.zeros(d_model))
        eps = check_number("eps", eps, none_ok=True)
        self.norm = nn.RMSNorm(d_model, eps=eps, elementwise_affine=values == "raw")

    def forward(self, sources) -> torch.Tensor:
        v = check_sources(sources, self.d_model)  # (m, B, T, C)
        dtype = torch.promote_types(v.dtype, torch.float32)  # bfloat16 would round the weights
        values = v.to(dtype)
        weight = None if self.norm.weight is None else self.norm.weight.to(dtype)
        keys = F.rms_norm(values, (self.d_model,), weight, self.norm.eps)
        if self.values == "normed":  # in Inkling 2's op order: (B, T, 1, m) scores, then mix
            keys = keys.movedim(0, -2)  # (B, T, m, C)
            query = self.query.to(dtype).expand(*keys.shape[:-2], 1, -1)  # (B, T, 1, C)
            scores = query @ keys.transpose(-1, -2)
            alpha = (scores * self.d_model**-0.5).softmax(dim=-1)  # over depth
            return (alpha @ keys).squeeze(-2).to(v.dtype)
        alpha = (keys @ self.query.to(dtype)).softmax(dim=0)  # (m, B, T): over depth
        return (alpha.unsqueeze(-1) * values).sum(dim=0).to(v.dtype)


# --8<-- [end:attnres]


# --8<-- [start:denseformer]
class DepthWeightedAverage(nn.Module):
    """DenseFormer's DWA (Pagliardini et al. 2024, arXiv 2402.02622): after block i,
    x_i = Σ_j α_ij X_j over the embedding X_0 and the block outputs X_1..X_i, one learned
    scalar each. α starts as the identity (the last 1, the rest 0), as in the authors' code
    (epfml/DenseFormer, DWAModules with dilation = period = 1).
    """

    def __init__(self, n_inputs: int, d_model: int):
        super().__init__()
        self.d_model = check_size("d_model", d_model)
        weight = torch.zeros(check_size("n_inputs", n_inputs))
        weight[-1] = 1.0
        self.weight = nn.Parameter(weight)

    def forward(self, sources) -> torch.Tensor:
        v = check_sources(sources, self.d_model)  # (i + 1, B, T, C)
        if len(v) != len(self.weight):
            raise ValueError(f"expected {len(self.weight)} sources, got {len(v)}")
        return torch.tensordot(self.weight, v, dims=1)


# --8<-- [end:denseformer]


# --8<-- [start:residual_gate]
class ResidualGate(nn.Module):
    """A residual sum that keeps the variance, one gate per feature (Muse Spark's
    MuseSparkResidualGate, transformers 5.24.0):

        y = alpha * x + beta * F(x),  beta = sigmoid(w / T),
        alpha = sqrt(max(sigmoid(-w / T) * (1 + beta), eps))

    sigmoid(-z) = 1 - sigmoid(z), so alpha² = (1 - beta)(1 + beta) = 1 - beta²: alpha² + beta²
    = 1 wherever the floor does not act (beta² <= 1 - eps); there alpha = sqrt(eps). For x and
    F(x) uncorrelated with unit variance, y has unit variance. T is Muse's
    residual_gate_temperature (0.3), eps its residual_gate_eps (1e-3); w starts as
    MuseSparkPreTrainedModel._init_weights draws it, N(0, 0.02): beta near 1/2.
    It computes in float32 at least and returns x's dtype; Muse keeps w in float32
    (_keep_in_fp32_modules_strict): call .float() on this module after casting a model.
    """

    def __init__(self, d_model: int, temperature: float = 0.3, eps: float = 1e-3):
        super().__init__()
        self.d_model = check_size("d_model", d_model)
        # T <= 0 inverts or breaks the gate; eps >= 1 would hold alpha >= 1, alpha² + beta² > 1
        self.temperature = float(check_number("temperature", temperature))
        self.eps = float(check_number("eps", eps, "in (0, 1)"))
        self.weight = nn.Parameter(0.02 * torch.randn(d_model))

    def coefficients(self, dtype: torch.dtype = torch.float32):
        """(alpha, beta), each (d_model,), computed in ``dtype`` (float32 at least)."""
        dtype = torch.promote_types(torch.promote_types(dtype, self.weight.dtype), torch.float32)
        w = self.weight.to(dtype) / self.temperature
        beta = torch.sigmoid(w)
        return torch.sqrt(torch.clamp(torch.sigmoid(-w) * (1.0 + beta), min=self.eps)), beta

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """alpha * x + beta * y, x the stream and y = F(x) the branch, both (B, T, C)."""
        check_input(x, ("batch", "seq_len", self.d_model))
        if not isinstance(y, torch.Tensor) or y.shape != x.shape:
            got = tuple(y.shape) if isinstance(y, torch.Tensor) else type(y).__name__
            raise ValueError(f"expected a branch of the stream's shape {tuple(x.shape)}, got {got}")
        alpha, beta = self.coefficients(x.dtype)
        return (alpha * x.to(alpha.dtype) + beta * y.to(beta.dtype)).to(x.dtype)


# --8<-- [end:residual_gate]


# --8<-- [start:stack]
STACK_POSITIONS = (*POSITIONS, "mixln", "lns")


def layer_placements(norm_position: str, n_layers: int, mix_ratio: float = 0.25):
    """(norm_position, pre_scale) for each layer of a stack.

    Two placements vary with depth: Mix-LN (Li et al. 2024, arXiv 2412.13795)
    uses Post-LN in the first ``mix_ratio`` of the layers and Pre-LN after;
    LayerNorm Scaling (Sun et al. 2025, arXiv 2502.05795) is Pre-LN with the
    norm's output scaled by 1/sqrt(l) in layer l = 1, 2, ...
    """
    check_size("n_layers", n_layers)
    if not 0.0 <= mix_ratio <= 1.0:
        raise ValueError(f"mix_ratio is a fraction of the layers, in [0, 1], got {mix_ratio}")
    if norm_position == "mixln":
        n_post = int(mix_ratio * n_layers)
        return [("post" if i < n_post else "pre", 1.0) for i in range(n_layers)]
    if norm_position == "lns":
        return [("pre", 1 / math.sqrt(i + 1)) for i in range(n_layers)]
    if norm_position not in POSITIONS:
        raise ValueError(f"norm_position must be one of {STACK_POSITIONS}, got {norm_position!r}")
    return [(norm_position, 1.0)] * n_layers


def needs_final_norm(norm_position: str) -> bool:
    """Placements that leave the residual sum un-normalized need one norm after the last layer."""
    if norm_position not in STACK_POSITIONS:
        raise ValueError(f"norm_position must be one of {STACK_POSITIONS}, got {norm_position!r}")
    return norm_position in ("pre", "sandwich", "output", "mixln", "lns", "normed_skip")


def deepnorm_alpha_beta(n_layers: int) -> tuple[float, float]:
    """DeepNet's constants for a decoder-only (or encoder-only) stack of N layers.

    Wang et al. 2022 (arXiv 2203.00555), Figure 2(b), derived in §4.3 and Appendix C:
    alpha = (2N)^(1/4), beta = (8N)^(-1/4).
    """
    check_size("n_layers", n_layers)
    return (2 * n_layers) ** 0.25, (8 * n_layers) ** -0.25


def deepnorm_init_(block: Block, beta: float) -> None:
    """DeepNet's init: Xavier-normal with gain beta for the FFN, the value and the output
    projections; gain 1 for queries and keys."""
    if not isinstance(block, Block):
        raise TypeError(f"deepnorm_init_ expects a Block, got {type(block).__name__}")
    attn, mlp = block.attn.sublayer, block.mlp.sublayer
    C = attn.proj.in_features
    with torch.no_grad():
        for i, gain in enumerate((1.0, 1.0, beta)):  # rows of qkv: W_q, W_k, W_v
            nn.init.xavier_normal_(attn.qkv.weight[i * C : (i + 1) * C], gain=gain)
        for linear in (attn.proj, mlp.fc, mlp.proj):
            nn.init.xavier_normal_(linear.weight, gain=beta)


RESIDUALS = ("add", "hc", "mhc", "ihc", "gated_streams", "attnres", "denseformer", "vp_gate")
BRANCH_POSITIONS = ("pre", "sandwich", "output", "lns")  # no norm on the residual path
# The residuals that call each sublayer's branch (Residual.branch) and join it to x themselves
BRANCH_RESIDUALS = ("hc", "mhc", "ihc", "gated_streams", "attnres", "vp_gate")
# n streams, a connection around each sublayer: HyperConnection, or GatedStreams (Qwen4-Exp)
STREAM_RESIDUALS = ("hc", "mhc", "ihc", "gated_streams")
# How the n streams become one d-vector after the last layer: Zhu et al.'s sum, GLM-5.3-Flash's
# plain mean, DeepSeek-V4's and Hy4's learned head, Qwen4-Exp's mixer (in place of a final norm)
COLLAPSES = ("sum", "mean", "head", "mixer")
# Each stream residual's own collapse, the one collapse=None picks
OWN_COLLAPSE = {"hc": "sum", "mhc": "head", "ihc": "head", "gated_streams": "mixer"}

# Combinations of settings, one rule a row: (setting, the values the rule covers or None for
# any value given, the other setting, the values it may take then, why). Refuse, never ignore:
# check_combinations checks each rule where both settings are known (Residual, Stack).
_F_NORM = "only these put a norm on F's output"
_IN_BRANCH = "it sees only each sublayer's branch, so the norms must sit in the branch"
_IN_CONNECTION = "its connections normalize F's input, and F keeps no norm (Qwen4-Exp)"
_MIXER = "its learned collapse is the mixer"
COMBINATIONS = (
    ("residual", BRANCH_RESIDUALS, "parallel", (None,), "it calls the sublayers in turn"),
    ("residual", BRANCH_RESIDUALS, "norm_position", BRANCH_POSITIONS, _IN_BRANCH),
    ("residual", BRANCH_RESIDUALS, "layer_scalar", (None,), "it forms no block output to scale"),
    ("gate_temperature", None, "residual", ("vp_gate",), "only its gates have one"),
    ("residual", ("gated_streams",), "norm_position", ("pre",), _IN_CONNECTION),
    ("collapse", None, "residual", STREAM_RESIDUALS, "only n streams are collapsed at the end"),
    ("residual", ("gated_streams",), "collapse", (None, "mixer", "mean", "sum"), _MIXER),
    ("collapse", ("head",), "residual", ("mhc", "ihc"), "Zhu et al.'s HC has no learned head"),
    ("collapse", ("mixer",), "residual", ("gated_streams",), "only GatedStreams make one"),
    ("gate_rank", None, "residual", ("gated_streams",), "only its gates are low-rank maps"),
    ("gate_eps", None, "residual", ("vp_gate",), "only its gates have one"),
    ("depth_values", None, "residual", ("attnres",), "only depth attention averages values"),
    ("branch_norm", None, "norm_position", ("sandwich", "output"), _F_NORM),
    ("branch_eps", None, "norm_position", ("sandwich", "output"), _F_NORM),
)


def check_combinations(settings: dict) -> None:
    """Refuse a setting that another makes meaningless, naming both (rules: COMBINATIONS)."""
    for name, values, other, allowed, why in COMBINATIONS:
        if name not in settings or other not in settings:
            continue
        value, got = settings[name], settings[other]
        if (value is not None if values is None else value in values) and got not in allowed:
            raise ValueError(f"{name}={value!r} needs {other} in {allowed}, got {got!r}: {why}")


def check_stack_args(
    n_layers, residual, norm_position, n_streams, block_size, n_fracs, collapse,
    depth_values, gate_temperature, gate_eps, gate_rank, block_kwargs,
):  # fmt: skip
    """Refuse a bad Stack argument, or one another makes meaningless, naming both (the rules:
    COMBINATIONS), before any layer is built. Returns what it resolves: n_streams, n_fracs,
    collapse, block_size and each layer's (norm_position, pre_scale)."""
    check_size("n_layers", n_layers)
    if residual not in RESIDUALS:
        raise ValueError(f"residual must be one of {RESIDUALS}, got {residual!r}")
    if collapse is not None and collapse not in COLLAPSES:
        raise ValueError(f"collapse must be None or one of {COLLAPSES}, got {collapse!r}")
    if depth_values is not None and depth_values not in DEPTH_VALUES:
        raise ValueError(
            f"depth_values must be None or one of {DEPTH_VALUES}, got {depth_values!r}"
        )
    if n_fracs is not None:  # given, so it must act: refuse, never ignore
        check_size("n_fracs", n_fracs)
        if residual != "hc":
            raise ValueError(f"n_fracs is for 'hc', got residual={residual!r}")
        if n_fracs > 1 and n_streams not in (None, 1):
            raise ValueError(
                f"n_fracs={n_fracs} splits one stream (Frac-Connections), "
                f"so n_streams must be 1 or unset, got n_streams={n_streams}"
            )
        if n_fracs > 1 and collapse is not None:
            raise ValueError(
                f"n_fracs={n_fracs} concatenates the fractions at the end, "
                f"so collapse must be unset, got collapse={collapse!r}"
            )
        if n_fracs > 1:
            n_streams = 1
    n_fracs = 1 if n_fracs is None else n_fracs
    if n_streams is not None:  # given, so it must act: refuse, never ignore
        check_size("n_streams", n_streams)
        if residual not in STREAM_RESIDUALS:
            raise ValueError(f"n_streams is for {STREAM_RESIDUALS}, got residual={residual!r}")
    elif residual in STREAM_RESIDUALS:
        n_streams = 4
    if block_size is not None and residual != "attnres":
        raise ValueError(f"block_size is for 'attnres', got residual={residual!r}")
    parallel = block_kwargs.get("parallel")
    given = dict(residual=residual, norm_position=norm_position, parallel=parallel)
    given.update(gate_temperature=gate_temperature, gate_eps=gate_eps, collapse=collapse)
    given.update(depth_values=depth_values, gate_rank=gate_rank)
    keys = ("layer_scalar", "branch_norm", "branch_eps")
    check_combinations(given | {k: block_kwargs.get(k) for k in keys})
    collapse = OWN_COLLAPSE.get(residual) if collapse is None else collapse
    placements = layer_placements(norm_position, n_layers)  # checks norm_position
    if parallel is not None and norm_position == "mixln" and placements[0][0] == "post":
        n_post = sum(p == "post" for p, _ in placements)
        raise ValueError(
            f"parallel={parallel!r} with norm_position='mixln': Mix-LN makes the first "
            f"{n_post} of {n_layers} layers Post-LN, and a parallel block "
            "needs norm_position='pre', got 'post' there"
        )
    # The stack sets these per layer: refuse a value it would overwrite or that would
    # reach some layers only, naming the placement the caller chose.
    alpha = block_kwargs.get("alpha", 1.0)
    if "alpha" in block_kwargs and norm_position == "deepnorm":
        raise ValueError(f"a 'deepnorm' stack sets DeepNet's alpha itself, got alpha={alpha!r}")
    scales = isinstance(alpha, torch.Tensor) or (isinstance(alpha, float | int) and alpha != 1)
    if scales and norm_position not in ("post", "normed_skip"):  # else mixln would say 'pre'
        raise ValueError(
            "alpha scales the skip in 'post', 'deepnorm' and 'normed_skip' only, "
            f"got {norm_position!r}"
        )
    branch_scale = block_kwargs.get("branch_scale", 1.0)  # a str: the Residual refuses it
    scales = isinstance(branch_scale, numbers.Real) and branch_scale != 1
    if scales and norm_position != "normed_skip":
        raise ValueError(f"branch_scale scales F in 'normed_skip' only, got {norm_position!r}")
    if "pre_scale" in block_kwargs:
        raise ValueError(
            "a stack sets pre_scale per layer (norm_position='lns': 1/sqrt(l)), "
            f"got pre_scale={block_kwargs['pre_scale']!r}"
        )
    if residual == "attnres":  # one block per sublayer is Full AttnRes
        block_size = 1 if block_size is None else check_size("block_size", block_size)
    return n_streams, n_fracs, collapse, block_size, placements


# What each residual builds around the blocks, one function a residual (CONNECTIONS): each
# sets stack.connections and, where its residual has one, stack.head or stack.block_size.
# Called after the blocks and the final norm: this order fixes what a seed initializes.
def _hc_connections(stack, n_sub, eps, bias, **rest):
    """HC (Zhu et al.), Frac-Connections with n_fracs > 1: eps, bias reach their LayerNorms."""
    kw = dict(norm_eps=eps, bias=bias, n_fracs=stack.n_fracs)
    index = range(n_sub) if stack.n_fracs == 1 else [None] * n_sub  # FC: pre starts at I
    stack.connections = nn.ModuleList(
        HyperConnection(stack.d_model, stack.n_streams, layer_index=i, **kw) for i in index
    )
    stack.head = None


def _mhc_connections(stack, n_sub, eps, **rest):
    """mHC (DeepSeek-V4, GLM-5.3-Flash) and iHC (Hy4): one eps for all RMSNorms, as theirs."""
    mhc, ihc = stack.residual == "mhc", stack.residual == "ihc"
    kw = dict(constrained=mhc, independent=ihc, norm_eps=eps)
    d, n = stack.d_model, stack.n_streams
    stack.connections = nn.ModuleList(HyperConnection(d, n, **kw) for _ in range(n_sub))
    head = stack.collapse == "head"
    stack.head = HyperConnection(d, n, head=True, **kw) if head else None


def _gated_streams_connections(stack, n_sub, norm, eps, bias, gate_rank, **rest):
    """Qwen4-Exp: the connections hold the norms (norm, eps, bias), so the layers have none."""
    kw = dict(norm=norm, eps=eps, bias=bias, rank=gate_rank)
    d, n = stack.d_model, stack.n_streams
    stack.connections = nn.ModuleList(GatedStreams(d, n, **kw) for _ in range(n_sub))
    mixer = stack.collapse == "mixer"
    stack.head = GatedStreams(d, n, head=True, **kw) if mixer else None
    for layer in stack.layers:  # Qwen4-Exp's layers have no input_layernorm
        layer.attn.norm_in = layer.mlp.norm_in = None


def _attnres_connections(stack, n_sub, eps, block_size, depth_values, **rest):
    """AttnRes: a depth attention before each sublayer and one for the output."""
    stack.block_size = block_size
    values = "raw" if depth_values is None else depth_values
    stack.connections = nn.ModuleList(
        DepthAttention(stack.d_model, eps, values) for _ in range(n_sub + 1)
    )
    if values == "normed":  # Inkling 2 has none: its RMSNorm would rescale the embedding
        stack.connections[0] = nn.Identity()


def _denseformer_connections(stack, n_sub, **rest):
    """DenseFormer: after each block, a depth-weighted average of the embedding and outputs."""
    stack.connections = nn.ModuleList(
        DepthWeightedAverage(i + 2, stack.d_model) for i in range(len(stack.layers))
    )


def _vp_gate_connections(stack, n_sub, gate_temperature, gate_eps, **rest):
    """Muse Spark's variance-preserving gates, None: its temperature 0.3 and eps 1e-3."""
    t = 0.3 if gate_temperature is None else gate_temperature
    e = 1e-3 if gate_eps is None else gate_eps
    stack.connections = nn.ModuleList(ResidualGate(stack.d_model, t, e) for _ in range(n_sub))


CONNECTIONS = {  # "add" builds none: x + F(x) is inside each Residual
    "hc": _hc_connections,
    "mhc": _mhc_connections,
    "ihc": _mhc_connections,
    "gated_streams": _gated_streams_connections,
    "attnres": _attnres_connections,
    "denseformer": _denseformer_connections,
    "vp_gate": _vp_gate_connections,
}


class Stack(nn.Module):
    """``n_layers`` blocks and, when the placement needs it, a final norm.

    ``residual`` says how the sublayers' outputs reach later sublayers:
    add          x + F(x) in every Residual, the placement as ``norm_position`` says
    hc, mhc, ihc ``n_streams`` copies of x, a HyperConnection around each sublayer: HC,
                 mHC (DeepSeek-V4, GLM-5.3-Flash) or iHC, streams without mixing (Hy4);
                 collapsed at the end as ``collapse`` says, None: the residual's own (Zhu
                 et al.: "sum"; DeepSeek-V4, Hy4: "head", learned); "mean": GLM-5.3-Flash's;
                 hc with ``n_fracs`` > 1: x split into fractions, concatenated at the end
    gated_streams ``n_streams`` copies of x, a GatedStreams around each sublayer: no mixing,
                 the norm inside the connection, so F has none (Qwen4-Exp; ``norm``, ``eps``
                 and ``bias`` are the connections'; ``gate_rank`` None: Qwen4-Exp's 320);
                 collapse None: "mixer", Qwen4-Exp's, with no final norm after it
    attnres      each sublayer attends over the embedding and earlier outputs, or over
                 sums of ``block_size`` sublayers (Block AttnRes); one more for the output.
                 Kimi K3's attn_res_block_size and Inkling 2's n_layers_per_attn_res_block
                 count layers: block_size is twice it. ``depth_values`` (DEPTH_VALUES),
                 None: "raw", the report's and K3's; "normed": Inkling 2's, whose first
                 sublayer reads the embedding as it is (one source, no depth attention)
    denseformer  the blocks as in add, a depth-weighted average after each block
    vp_gate      alpha * x + beta * F(x) around each sublayer, alpha² + beta² = 1 per feature
                 (ResidualGate, Muse Spark); ``gate_temperature`` T and ``gate_eps``, None:
                 Muse's 0.3 and 1e-3
    In hc, mhc, ihc, attnres and vp_gate a sublayer sees only its branch, F with its own norms
    (``Residual.branch``), so the norms must sit in the branch: ``BRANCH_POSITIONS``. Which
    settings exclude which: the table ``COMBINATIONS``, checked with the rest of the arguments
    by ``check_stack_args``; what each residual builds around the blocks: ``CONNECTIONS``.
    ``eps`` reaches every norm of the stack: the blocks', the final one and the connections'
    (HC's LayerNorm, mHC's and iHC's RMSNorm, as DeepSeek-V4's and Hy4's one rms_norm_eps,
    AttnRes' RMSNorm);
    ``bias`` reaches HC's LayerNorm too. ``norm`` names the blocks' and the final norm; each
    connection keeps the norm its reference code uses.
    """

    def __init__(
        self,
        n_layers: int,
        d_model: int,
        n_heads: int,
        d_ff: int,
        residual: str = "add",
        n_streams: int | None = None,  # hc, mhc, ihc: None is 4, DeepSeek-V4's hc_mult
        block_size: int | None = None,
        n_fracs: int | None = None,  # hc: Frac-Connections' m; None is 1, no split
        gate_temperature: float | None = None,  # vp_gate: None is Muse Spark's 0.3
        gate_eps: float | None = None,  # vp_gate: None is Muse Spark's 1e-3
        collapse: str | None = None,  # stream residuals: None is the residual's own (COLLAPSES)
        depth_values: str | None = None,  # attnres: None is "raw" (DEPTH_VALUES)
        gate_rank: int | None = None,  # gated_streams: None is Qwen4-Exp's hc_lowrank 320
        **block_kwargs,
    ):
        super().__init__()
        norm_position = block_kwargs.pop("norm_position", "pre")
        final_norm = block_kwargs.pop("final_norm", None)
        n_streams, n_fracs, collapse, block_size, placements = check_stack_args(
            n_layers, residual, norm_position, n_streams, block_size, n_fracs, collapse,
            depth_values, gate_temperature, gate_eps, gate_rank, block_kwargs,
        )  # fmt: skip
        if final_norm is None:  # Qwen4-Exp's mixer ends the stack in its place
            final_norm = needs_final_norm(norm_position) and collapse != "mixer"
        norm, eps = block_kwargs.get("norm"), block_kwargs.get("eps")
        bias = block_kwargs.get("bias", True)
        if norm_position == "rezero" and final_norm:
            block_kwargs.pop("norm", None)  # ReZero's blocks have no norm: it is the final norm's
            attn_norms = block_kwargs.get("v_norm") or block_kwargs.get("o_norm")
            if block_kwargs.get("qk_norm") is None and not attn_norms:
                block_kwargs.pop("eps", None)  # and so is eps, unless the attention's norms take it
        norm = "layernorm" if norm is None else norm
        if norm_position == "deepnorm":
            block_kwargs["alpha"], beta = deepnorm_alpha_beta(n_layers)
        self.layers = nn.ModuleList(
            Block(d_model, n_heads, d_ff, norm_position=p, pre_scale=s, **block_kwargs)
            for p, s in placements
        )
        if norm_position == "deepnorm":
            for layer in self.layers:
                deepnorm_init_(layer, beta)
        self.norm_f = make_norm(norm, d_model, eps, bias) if final_norm else None
        self.residual, self.d_model, self.n_streams = residual, d_model, n_streams
        self.n_fracs, self.collapse = n_fracs, collapse
        if residual in CONNECTIONS:  # after the blocks and the final norm: the seed's order
            CONNECTIONS[residual](
                self, 2 * n_layers, norm=norm, eps=eps, bias=bias, block_size=block_size,
                depth_values=depth_values, gate_temperature=gate_temperature,
                gate_eps=gate_eps, gate_rank=gate_rank,
            )  # fmt: skip

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.residual == "add":
            for layer in self.layers:
                x = layer(x)
        elif self.residual == "denseformer":
            outputs = [x]  # X_0, the embedding
            for layer, dwa in zip(self.layers, self.connections, strict=True):
                outputs.append(layer(x))
                x = dwa(outputs)
        else:
            check_input(x, ("batch", "seq_len", self.d_model))
            branches = [r.branch for layer in self.layers for r in (layer.attn, layer.mlp)]
            connect = {"attnres": self._attnres, "vp_gate": self._gated}
            x = connect.get(self.residual, self._streams)(x, branches)
        return self.norm_f(x) if self.norm_f is not None else x

    def _streams(self, x: torch.Tensor, branches) -> torch.Tensor:
        if self.n_fracs > 1:  # Frac-Connections: x split, (B, T, m, C/m), concatenated back
            h = x.unflatten(-1, (self.n_fracs, -1))
            for conn, branch in zip(self.connections, branches, strict=True):
                h = conn(h, branch)
            return h.flatten(-2)
        h = x.unsqueeze(-2).expand(*x.shape[:-1], self.n_streams, x.shape[-1])  # (B, T, n, C)
        for conn, branch in zip(self.connections, branches, strict=True):
            h = conn(h, branch)
        if self.head is not None:  # DeepSeek-V4, Hy4: pre-weights learned as in a sublayer's
            return self.head.collapse(h)[0]
        return h.mean(dim=-2) if self.collapse == "mean" else h.sum(dim=-2)  # GLM-5.3; Zhu

    def _gated(self, x: torch.Tensor, branches) -> torch.Tensor:
        for gate, branch in zip(self.connections, branches, strict=True):
            x = gate(x, branch(x))  # alpha * x + beta * F(x), per feature
        return x

    def _attnres(self, x: torch.Tensor, branches) -> torch.Tensor:
        blocks, partial = [x], None  # b_0 = the embedding; partial: the open block's sum
        for i, (depth, branch) in enumerate(zip(self.connections[:-1], branches, strict=True)):
            sources = blocks if partial is None else [*blocks, partial]
            first = isinstance(depth, nn.Identity)  # "normed": the first sublayer reads x
            y = branch(x if first else depth(sources))
            partial = y if partial is None else partial + y
            if (i + 1) % self.block_size == 0:  # the block is complete
                blocks, partial = [*blocks, partial], None
        return self.connections[-1](blocks if partial is None else [*blocks, partial])


@torch.no_grad()
def admin_init_(stack: Stack, x: torch.Tensor) -> list[float]:
    """Admin's profiling pass (Liu et al. 2020, arXiv 2004.08249) for a Post-LN stack.

    Each connection becomes Norm(omega * x + F(x)) with omega a trained
    per-feature weight, set from one forward pass: omega starts at 1 and the
    next connection's omega is sqrt(Var[omega * x] + Var[F(x)]) of this one, as
    in the authors' code (LiyuanLucasLiu/Transformer-Clinic). Returns the omegas.
    """
    connections = [conn for layer in stack.layers for conn in (layer.attn, layer.mlp)]
    for conn in connections:  # all checked before any is changed
        if conn.norm_position != "post":
            raise ValueError(f"Admin needs a Post-LN stack, got {conn.norm_position!r}")
    d_model = connections[0].d_model
    if not isinstance(x, torch.Tensor) or x.dim() != 3 or x.shape[-1] != d_model:
        got = tuple(x.shape) if isinstance(x, torch.Tensor) else type(x).__name__
        raise ValueError(f"expected x of shape (batch, seq_len, {d_model}), got {got}")
    if x.numel() < 2:  # the variance of fewer than 2 numbers is NaN, and so would omega be
        raise ValueError(f"Admin needs a non-empty x to measure variances, got {tuple(x.shape)}")
    omega, omegas = 1.0, []
    for conn in connections:
        conn.alpha = nn.Parameter(torch.full((d_model,), omega, device=x.device, dtype=x.dtype))
        omegas.append(omega)
        branch = conn.sublayer(x)
        omega = math.sqrt((x * omega).var().item() + branch.var().item())
        x = conn(x)
    return omegas


# --8<-- [end:stack]


# --8<-- [start:gpt]
@dataclass
class GPTConfig:
    vocab_size: int = 64
    block_size: int = 32  # longest sequence
    n_layer: int = 2
    n_head: int = 2
    n_embd: int = 32
    dropout: float = 0.0
    bias: bool = True
    norm_position: str = "pre"  # any of STACK_POSITIONS
    norm: str | None = None  # any of NORMS; None: LayerNorm (ReZero: none)
    activation: str = "gelu"  # nanoGPT's exact GELU; "gelu_tanh" is GPT-2's approximation
    logit_softcap: float | None = None  # c: logits c * tanh(logits / c) (Gemma 2, Gemma 4)


class GPT(nn.Module):
    """A decoder-only language model: token + position embeddings, causal blocks, LM head."""

    def __init__(self, config: GPTConfig):
        super().__init__()
        self.config = c = config
        for name in ("vocab_size", "block_size", "n_layer", "n_head", "n_embd"):
            check_size(f"GPTConfig.{name}", getattr(c, name))
        check_number("GPTConfig.logit_softcap", c.logit_softcap, none_ok=True)
        self.wte = nn.Embedding(c.vocab_size, c.n_embd)
        self.wpe = nn.Embedding(c.block_size, c.n_embd)
        self.drop = nn.Dropout(c.dropout)
        self.stack = Stack(
            c.n_layer,
            c.n_embd,
            c.n_head,
            4 * c.n_embd,
            dropout=c.dropout,
            bias=c.bias,
            norm_position=c.norm_position,
            norm=c.norm,
            causal=True,
            activation=c.activation,
        )
        self.lm_head = nn.Linear(c.n_embd, c.vocab_size, bias=False)
        self.lm_head.weight = self.wte.weight  # weight tying, as GPT-2
        self.apply(self._init_weights)
        if c.norm_position == "deepnorm":
            _, beta = deepnorm_alpha_beta(c.n_layer)
            for layer in self.stack.layers:
                deepnorm_init_(layer, beta)
        elif c.norm_position != "lns":
            # GPT-2: scale the init of the layers that write into the residual stream
            # by 1/sqrt(number of residual sums), 2 per layer. LayerNorm Scaling leaves it
            # out: Sun et al. 2025 (arXiv 2502.05795 v3, footnote 1 of the abstract) find it
            # diminishes the effect of LNS and recommend removing it.
            for name, p in self.named_parameters():
                if name.endswith("sublayer.proj.weight"):
                    nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * c.n_layer))

    def _init_weights(self, module: nn.Module) -> None:
        if isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())  # tied weights counted once

    def forward(self, idx: torch.Tensor, targets: torch.Tensor | None = None):
        if not isinstance(idx, torch.Tensor):
            raise TypeError(f"idx must be a tensor of token ids, got {type(idx).__name__}")
        if idx.dim() != 2 or idx.dtype != torch.long:
            raise ValueError(
                f"idx must be a (batch, seq_len) tensor of token ids (torch.long), "
                f"got shape {tuple(idx.shape)} and dtype {idx.dtype}"
            )
        T, V = idx.shape[1], self.config.vocab_size
        if T > self.config.block_size:
            raise ValueError(f"sequence length {T} exceeds block_size {self.config.block_size}")
        # Out of range, the embedding would fail with an IndexError (on CUDA, an assert).
        if idx.numel() and (idx.min() < 0 or idx.max() >= V):
            lo, hi = idx.min().item(), idx.max().item()
            raise ValueError(f"token ids must be in [0, {V}), got ids from {lo} to {hi}")
        if targets is not None and targets.shape != idx.shape:  # else silently re-paired
            raise ValueError(
                f"targets must have the shape of idx {tuple(idx.shape)}, got {tuple(targets.shape)}"
            )
        pos = torch.arange(T, device=idx.device)
        x = self.drop(self.wte(idx) + self.wpe(pos))  # (B, T, C)
        logits = self.lm_head(self.stack(x))  # (B, T, vocab_size)
        if self.config.logit_softcap is not None:
            # Bounds every logit to (-c, c), smooth near 0: in Hugging Face's op order
            # (divide, tanh, multiply), so a ported checkpoint gives the same bits.
            c = self.config.logit_softcap
            logits = torch.tanh(logits / c) * c
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten())
        return logits, loss


# --8<-- [end:gpt]


# --8<-- [start:from_torch]
def torch_activation_name(activation) -> str:
    """The FeedForward activation that a TransformerEncoderLayer's ``activation`` computes."""
    if activation is F.relu or isinstance(activation, nn.ReLU):
        return "relu"
    if activation is F.gelu:
        return "gelu"
    if isinstance(activation, nn.GELU):
        return {"none": "gelu", "tanh": "gelu_tanh"}[activation.approximate]
    raise ValueError(
        f"unsupported activation {activation!r}: expected F.relu, F.gelu, nn.ReLU or nn.GELU"
    )


def from_torch_encoder_layer(layer: nn.TransformerEncoderLayer) -> Block:
    """A Block with the same weights as a (batch_first) ``nn.TransformerEncoderLayer``.

    The Block gets the layer's dtype and device; a layer built with ``bias=False`` (no
    biases in its linears and norms) gives a Block with ``bias=False``.
    """
    if not isinstance(layer, nn.TransformerEncoderLayer):
        raise TypeError(f"expected an nn.TransformerEncoderLayer, got {type(layer).__name__}")
    if not layer.self_attn.batch_first:
        raise ValueError("expected an nn.TransformerEncoderLayer built with batch_first=True")
    act = torch_activation_name(layer.activation)
    dtypes = {p.dtype for p in layer.parameters()}
    if len(dtypes) != 1:  # one dtype for the Block, or some weights would be rounded
        raise ValueError(f"expected parameters of one dtype, got {sorted(map(str, dtypes))}")
    if layer.norm1.eps != layer.norm2.eps:
        raise ValueError(
            f"expected norm1 and norm2 with one eps, got {layer.norm1.eps}, {layer.norm2.eps}"
        )
    weight = layer.self_attn.in_proj_weight
    d_model, d_ff = layer.linear1.in_features, layer.linear1.out_features
    block = Block(
        d_model,
        layer.self_attn.num_heads,
        d_ff,
        dropout=layer.dropout.p,
        norm_position="pre" if layer.norm_first else "post",
        norm="layernorm",
        activation=act,
        causal=False,
        bias=layer.linear1.bias is not None,
        eps=layer.norm1.eps,
    ).to(device=weight.device, dtype=weight.dtype)  # before the copy, which would round
    where = "norm_in" if layer.norm_first else "norm_out"
    in_proj = {"weight": weight, "bias": layer.self_attn.in_proj_bias}
    with torch.no_grad():
        block.attn.sublayer.qkv.load_state_dict({k: v for k, v in in_proj.items() if v is not None})
        block.attn.sublayer.proj.load_state_dict(layer.self_attn.out_proj.state_dict())
        block.mlp.sublayer.fc.load_state_dict(layer.linear1.state_dict())
        block.mlp.sublayer.proj.load_state_dict(layer.linear2.state_dict())
        getattr(block.attn, where).load_state_dict(layer.norm1.state_dict())
        getattr(block.mlp, where).load_state_dict(layer.norm2.state_dict())
    return block


# --8<-- [end:from_torch]


# --8<-- [start:demo]
if __name__ == "__main__":
    torch.manual_seed(0)
    x = torch.randn(2, 5, 16)  # (batch, seq_len, d_model)
    for position in POSITIONS:
        block = Block(16, n_heads=4, d_ff=64, norm_position=position, causal=True)
        n_params = sum(p.numel() for p in block.parameters())
        print(f"{position:>11}: output {tuple(block(x).shape)}, {n_params} parameters")
    model = GPT(GPTConfig())
    print("GPT parameters:", model.num_parameters())
# --8<-- [end:demo]
