"""What a norm module computes, found by calling it on chosen inputs, not by its name.

A module normalizes when scaling its input leaves its output unchanged. It is centered
(LayerNorm) when adding a constant to every feature leaves it unchanged too, and clips
when a short input comes out as it went in. Zeroing its parameters says how the weight
scales (w: the output vanishes; 1 + w: the bare normalized input remains); a random
weight that leaves the output's RMS at one was applied before normalizing. Fed bfloat16,
it computed in float32 when its output is the float32 result rounded once.
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
    float32: str  # "yes", "partial" (the inverse RMS only), "no" or "" (not tried)
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


def describe(call) -> Norm:
    """The kind, weight convention, bias and float32 behaviour of a norm module's call."""
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
    float32 = _float32(call, weight, centered, index)
    eps = _eps(call, weight, centered, index)
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


def _float32(call, weight: str, centered: bool, biases: list[int]) -> str:
    """Feed bfloat16: "yes" if the output is the float32 result rounded once, "partial" if
    only 1/rms was computed in float32 and the product rounded again, else "no"."""
    import torch

    if weight == "other":
        return ""
    try:
        module = copy.deepcopy(call.module)
        module.to(torch.bfloat16)
        bias_free = copy.deepcopy(call.module).float()
        with torch.no_grad():
            _neutral(module, weight, biases)
            _neutral(bias_free, weight, biases)
            gen = torch.Generator().manual_seed(2)
            x = torch.randn(call.main_input.shape, generator=gen)
            x = (x * torch.exp(2 * torch.randn(x.shape, generator=gen))).to(torch.bfloat16)
            y = _call(module, call, x)
            if y is None:
                return ""
            y = y.to(torch.bfloat16).float()
            reference = _call(bias_free, call, x.float()).to(torch.bfloat16).float()
            if torch.equal(y, reference):
                return "yes"
            xf = x.float()
            if centered:
                xf = xf - xf.mean(-1, keepdim=True)
            inverse = torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6).to(torch.bfloat16)
            partial = (x * inverse).float()
            if (y - partial).abs().max() <= (y - reference).abs().max() * 0.5:
                return "partial"
            return "no"
    except Exception:
        return ""
