"""What a norm module computes, found by calling it on chosen inputs, not by its name.

A module normalizes when scaling its input leaves its output unchanged. It is centered
(LayerNorm) when adding a constant to every feature leaves it unchanged too, and clips
when a short input comes out as it went in. Zeroing its parameters says how the weight
scales (w: the output vanishes; 1 + w: the bare normalized input remains); a random
weight that leaves the output's RMS at one was applied before normalizing. Fed bfloat16
with a random bfloat16 weight, its output is compared bit for bit with candidate
computations: normalized and scaled in float32, then rounded (Gemma); normalized in
float32, rounded, then scaled in bfloat16 (LLaMA); only 1/rms in float32; all in bfloat16.
"""

from __future__ import annotations

import copy
from dataclasses import asdict, dataclass

SCALE = 7.0


@dataclass(frozen=True)
class Norm:
    kind: str  # "rms", "layer" (centered) or "clip"
    weight: str  # "w", "1+w", "none" or "other"
    bias: bool
    scale_first: bool  # the weight scales the input before it is normalized
    float32: str  # for a bfloat16 input: "f32_w32", "f32_w16", "f32", "rms_only", ...
    width: int  # the size of the last axis it normalizes
    eps: float | None  # measured: what it adds to the mean square

    def as_dict(self) -> dict:
        return asdict(self)


def _call(module, call, x):
    from resnorm_site.census.trace import tensors

    args = list(call.args)
    kwargs = dict(call.kwargs)
    if "hidden_states" in kwargs and not args:
        kwargs["hidden_states"] = x
    else:
        args[0] = x
    found = tensors((module(*args, **kwargs),))
    return found[0] if found else None


def _close(a, b, rtol: float = 1e-3) -> bool:
    import torch

    if a is None or b is None or a.shape != b.shape:
        return False
    a, b = a.double(), b.double()
    scale = b.abs().max().item() or 1.0
    return bool(torch.allclose(a, b, rtol=rtol, atol=rtol * scale))


def _has_matrix(module, x=None) -> bool:
    """Weights that mix features: any of two or more axes, except an elementwise scale
    shaped like the input's last axes (a per-head scale)."""
    shape = tuple(x.shape) if x is not None else ()
    return any(
        p.dim() >= 2 and not (len(shape) >= p.dim() and shape[-p.dim() :] == tuple(p.shape))
        for p in module.parameters()
    )


def _sample(x, seed: int = 0):
    import torch

    gen = torch.Generator().manual_seed(seed)
    return (torch.randn(x.shape, generator=gen, dtype=torch.float32) * 3 + 0.5).to(x.dtype)


def normalizes(call) -> bool:
    """Whether the call's module is a norm: scale-invariant, shape-keeping, no matrices."""
    import torch

    x = call.main_input
    if x is None or not x.is_floating_point() or x.dim() == 0 or x.shape[-1] < 4:
        return False
    if call.output is None or call.output.shape != x.shape or _has_matrix(call.module, x):
        return False
    module = call.module
    try:
        with torch.no_grad():
            xs = _sample(x).float()
            y = _call(module, call, xs)
            y_big = _call(module, call, xs * SCALE)
            if not _close(y, y_big) or _close(y, xs):
                return False
            # a clip leaves a short vector as it is; a norm makes it long again
            small = xs * 1e-3
            return not _close(_call(module, call, small), small)
    except Exception:
        return False


def clips(call) -> bool:
    """A module that leaves short inputs unchanged and shortens long ones (an L2 clip)."""
    import torch

    x = call.main_input
    if x is None or not x.is_floating_point() or x.dim() == 0 or x.shape[-1] < 4:
        return False
    if call.output is None or call.output.shape != x.shape or _has_matrix(call.module, x):
        return False
    try:
        with torch.no_grad():
            xs = _sample(x).float()
            small = xs * 1e-3
            # short vectors pass through linearly (a clip may also carry a learned scale)
            y = _call(call.module, call, small)
            y2 = _call(call.module, call, small * 2)
            if not _close(y2, 2 * y) or _close(y, torch.zeros_like(y)):
                return False
            big = _call(call.module, call, xs * 1e3)
            return bool(big.norm(dim=-1).max() < (xs * 1e3).norm(dim=-1).min() * 0.5)
    except Exception:
        return False


def _reference(x, centered: bool, eps: float = 0.0):
    if centered:
        x = x - x.mean(-1, keepdim=True)
    return x / (x.pow(2).mean(-1, keepdim=True) + eps).sqrt()


def _grouped(y, x, centered: bool) -> bool:
    """Whether ``y`` is ``x`` normalized in equal groups of its last axis (a norm per stream
    over streams laid side by side)."""
    width = x.shape[-1]
    for groups in (2, 3, 4, 6, 8, 16):
        if width % groups == 0:
            parts = x.reshape(*x.shape[:-1], groups, width // groups)
            if _close(y, _reference(parts, centered).reshape(x.shape), rtol=2e-3):
                return True
    return False


_DESCRIBED: dict = {}


def _same_norm(call):
    """What decides a norm's description: its class, settings and parameter shapes, and the
    shape it is fed; None for a call with more than one input (a gate beside it)."""
    module, x = call.module, call.main_input
    if len(call.args) + len(call.kwargs) != 1 or x is None:
        return None
    settings = tuple(
        sorted((k, v) for k, v in vars(module).items() if isinstance(v, bool | int | float | str))
    )
    shapes = tuple((n, tuple(p.shape)) for n, p in module.named_parameters())
    buffers = tuple((n, tuple(b.shape)) for n, b in module.named_buffers())
    return (type(module), repr(module), settings, shapes, buffers, tuple(x.shape))


def describe(call) -> Norm:
    """The kind, weight convention, bias and float32 behaviour of a norm module's call; once
    per kind of norm (every layer of a model has the same ones)."""
    key = _same_norm(call)
    if key is not None and key in _DESCRIBED:
        return _DESCRIBED[key]
    found = _describe(call)
    if key is not None:
        _DESCRIBED[key] = found
    return found


def _describe(call) -> Norm:
    import torch

    module = copy.deepcopy(call.module).float()
    x = _sample(call.main_input).float()
    params = [p for p in module.parameters() if p.dim() == 1]
    with torch.no_grad():
        centered = _close(_call(module, call, x + 3.0), _call(module, call, x))
        plain = _reference(x, centered)
        for p in params:
            p.zero_()
        zeroed = _call(module, call, x)
        if not params:
            weight = "none"
        elif _close(zeroed, torch.zeros_like(zeroed)):
            weight = "w"
        elif _close(zeroed, plain, rtol=2e-3) or _grouped(zeroed, x, centered):
            weight = "1+w"
        else:
            weight = "other"
        biases = []
        for p in params:
            p.fill_(1.0)
            delta = _call(module, call, x) - zeroed
            if _close(delta, torch.ones_like(delta)):
                biases.append(p)
            p.zero_()
        scale_first = False
        if weight in ("w", "1+w"):
            # random scales, biases at zero: normalizing after scaling keeps the RMS at one
            gen = torch.Generator().manual_seed(1)
            for p in params:
                if not any(p is b for b in biases):
                    p.copy_(torch.rand(p.shape, generator=gen) + 0.5)
            y = _call(module, call, x)
            scale_first = bool(
                _close(y.pow(2).mean(-1), torch.ones_like(y[..., 0]), rtol=1e-2)
                and not _close(y, plain, rtol=1e-2)
            )
        bias = bool(biases)
    index = [i for i, p in enumerate(params) if any(p is b for b in biases)]
    eps = _eps(call, weight, centered, index)
    float32 = _float32(call, weight, centered, index, scale_first, eps)
    kind = "layer" if centered else "rms"
    return Norm(kind, weight, bias, scale_first, float32, x.shape[-1], eps)


def _neutral(module, weight: str, biases: list[int]) -> None:
    """Weights that make the norm the bare normalized input (ones for w, zeros for 1 + w),
    biases at zero."""
    vectors = [p for p in module.parameters() if p.dim() == 1]
    for i, p in enumerate(vectors):
        p.data.fill_(0.0 if i in biases or weight != "w" else 1.0)


def _eps(call, weight: str, centered: bool, biases: list[int]) -> float | None:
    """The ε the norm adds to the mean square, measured in float64: an input of mean
    square r² comes out divided by sqrt(r² + ε), for an r² near ε."""
    import torch

    if weight == "other":
        return None
    try:
        module = copy.deepcopy(call.module).double()
        _neutral(module, weight, biases)
        u = _sample(call.main_input).double()
        if centered:
            u = u - u.mean(-1, keepdim=True)
        u = u / u.pow(2).mean(-1, keepdim=True).sqrt()
        estimate = None
        with torch.no_grad():
            for exponent in range(2, 34, 2):
                r2 = 10.0**-exponent
                estimate = _estimate(module, call, u, r2)
                if estimate is None:
                    return None
                if estimate > r2 * 0.1:
                    estimate = _estimate(module, call, u, estimate) or estimate
                    return float(f"{estimate:.3g}")
        return 0.0
    except Exception:
        return None


def _estimate(module, call, u, r2: float) -> float | None:
    x = u * r2**0.5
    y = _call(module, call, x)
    if y is None or not y.is_floating_point():
        return None
    y = y.double()
    k = (x * x).sum(-1) / (x * y).sum(-1)
    return float((k * k).mean() - r2)


def _float32(
    call, weight: str, centered: bool, biases: list[int], scale_first: bool, eps: float | None
) -> str:
    """Fed bfloat16, with a random weight stored in bfloat16: which computation its output
    is, bit for bit. "f32_w32": normalized and scaled in float32, rounded once (Gemma's
    ``(x * (1 + w)).type_as(x)``); "f32_w16": normalized in float32, rounded, then scaled
    in bfloat16 (LLaMA's ``w * x.to(input_dtype)``); "f32": normalized in float32 and
    rounded once, with no weight to place; "rms_only": only 1/rms in float32, the product
    in bfloat16; "bf16": every step in bfloat16; "f32_out": it returns float32; "other":
    none of these; "" (not tried)."""
    import torch

    if weight == "other":
        return ""
    try:
        bf16 = torch.bfloat16
        gen = torch.Generator().manual_seed(2)
        x = torch.randn(call.main_input.shape, generator=gen)
        x = (x * torch.exp(2 * torch.randn(x.shape, generator=gen))).to(bf16)
        low = copy.deepcopy(call.module).to(bf16)
        vectors = [p for p in low.parameters() if p.dim() == 1]
        scales = [p for i, p in enumerate(vectors) if i not in biases]
        with torch.no_grad():
            _neutral(low, weight, biases)
            placed = (
                weight in ("w", "1+w")
                and not scale_first  # a weight before the norm has no order to find
                and len(scales) == 1
                and scales[0].shape == x.shape[-1:]
            )
            if placed:
                # w, and 1 + w, exact in bfloat16: float32 holds the same scale, however
                # the code forms 1 + w
                steps = torch.randint(-64, 65, scales[0].shape, generator=gen) / 128
                scales[0].copy_(steps + (1.0 if weight == "w" else 0.0))
            y = _call(low, call, x)
            if y is None or not y.is_floating_point():
                return ""
            if y.dtype == torch.float32:
                return "f32_out"
            high = copy.deepcopy(low).float()  # the same weight, every step in float32
            neutral = copy.deepcopy(call.module).float()
            _neutral(neutral, weight, biases)
            normed = _call(neutral, call, x.float())  # normalized in float32, no weight
            w16 = torch.ones(x.shape[-1], dtype=bf16)  # the scale as bfloat16 computes it
            w32 = w16.float()  # and as float32 does
            if placed:
                w16 = scales[0].detach() if weight == "w" else 1 + scales[0].detach()
                w32 = scales[0].detach().float() + (0.0 if weight == "w" else 1.0)
            xc = x - x.mean(-1, keepdim=True) if centered else x
            xf = xc.float()
            eps = eps or 0.0
            inverse = torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps).to(bf16)
            rounded = torch.rsqrt(xc.pow(2).mean(-1, keepdim=True) + eps)  # in bfloat16
            candidates = {
                "f32_w32": [_call(high, call, x.float()).to(bf16)],
                "f32_w16": [normed.to(bf16) * w16, normed.to(bf16).float() * w32],
                "rms_only": [xc * inverse * w16],
                "bf16": [xc * rounded * w16],
            }
            agree = {key: max(_agreement(y, c) for c in found) for key, found in candidates.items()}
        best = max(agree, key=agree.get)
        if agree[best] < 0.99:
            return "other"
        if best.startswith("f32") and agree["f32_w32"] == agree["f32_w16"]:
            return "f32"  # no weight, or one that cannot tell the order
        return best
    except Exception:
        return ""


def _agreement(y, candidate) -> float:
    """The share of elements where ``y`` is bit for bit the candidate rounded to y's dtype
    (a float32 reduction summed in another order may move a rare element by one step)."""

    if candidate is None or candidate.shape != y.shape:
        return 0.0
    return float((candidate.to(y.dtype) == y).float().mean())
