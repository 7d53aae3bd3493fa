"""RMSNorm from scratch: the same numbers as torch.nn.RMSNorm and F.rms_norm.

Zhang & Sennrich 2019 (arXiv 1910.07467), eq. 4, with eps inside the square
root as PyTorch puts it; argument names follow torch.nn.RMSNorm so one can
replace the other.
"""

# --8<-- [start:module]
import math
import numbers

import torch
from torch import nn


def _rms_norm_args(shape, eps) -> tuple[int, ...]:
    """normalized_shape ``shape`` as a tuple of ints; a bad shape or eps is refused."""
    dims = (shape,) if isinstance(shape, numbers.Integral) else shape
    # a str is a sequence ("38" would read as (3, 8)) and a bool is an int (True as (1,))
    if not isinstance(dims, (tuple, list)) or not all(
        isinstance(d, numbers.Integral) and not isinstance(d, bool) for d in dims
    ):
        got = f"{type(shape).__name__} {shape!r}"
        raise TypeError(f"normalized_shape must be an int or a tuple of ints, got {got}")
    if not dims or min(dims) < 1:
        raise ValueError(
            "normalized_shape must be a positive int or a non-empty tuple of positive ints, "
            f"got {shape!r}"
        )
    if eps is not None and (isinstance(eps, bool) or not isinstance(eps, numbers.Real)):
        raise TypeError(f"eps must be None or a number, got {type(eps).__name__} {eps!r}")
    if eps is not None and not 0 <= eps < math.inf:
        raise ValueError(f"eps must be None or a finite number >= 0, got {eps!r}")
    return tuple(int(d) for d in dims)


class RMSNorm(nn.Module):
    """y = x / sqrt(mean(x²) + eps) * weight over the last dims. No mean, no bias.

    The mean of squares is taken over the trailing ``len(normalized_shape)``
    dims of the input, separately for every leading index (every token).
    """

    def __init__(
        self,
        normalized_shape,
        eps: float | None = None,
        elementwise_affine: bool = True,
        device=None,
        dtype=None,
    ):
        super().__init__()
        self.normalized_shape = _rms_norm_args(normalized_shape, eps)
        self.eps = eps  # None: the machine epsilon of the dtype the math runs in
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            # gamma = 1 at init: a fresh layer only rescales each token to RMS 1
            self.weight = nn.Parameter(
                torch.ones(self.normalized_shape, device=device, dtype=dtype)
            )
        else:
            self.register_parameter("weight", None)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n = len(self.normalized_shape)
        if not torch.is_tensor(x) or not x.is_floating_point():
            got = x.dtype if torch.is_tensor(x) else type(x).__name__
            raise TypeError(f"RMSNorm expects a floating-point tensor, got {got}")
        if x.dim() < n or tuple(x.shape[-n:]) != self.normalized_shape:
            raise ValueError(
                f"RMSNorm expects input whose last {n} dim(s) are "
                f"{self.normalized_shape}, got trailing dims {tuple(x.shape[-n:])} "
                f"(input shape {tuple(x.shape)})"
            )
        dims = tuple(range(-n, 0))
        # fp16/bf16 are normalized in fp32 and cast back at the end, as F.rms_norm does:
        # squares above 65504 overflow fp16 and squares below ~3e-8 flush to zero.
        h = x.to(torch.promote_types(x.dtype, torch.float32))  # (..., *normalized_shape)
        # default eps: machine epsilon of that compute dtype (fp32 for fp16/bf16 input)
        eps = torch.finfo(h.dtype).eps if self.eps is None else self.eps
        ms = h.pow(2).mean(dim=dims, keepdim=True)  # mean of squares, one per token
        ms = torch.where(ms.isinf(), torch.nan, ms)  # overflow (fp32: |x| > 1e19): NaN, not 0
        h = h * torch.rsqrt(ms + eps)  # eps inside the root
        if self.weight is not None:
            h = h * self.weight  # still in fp32: one rounding to x.dtype, below
        return h.to(x.dtype)

    def extra_repr(self) -> str:
        return (
            f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"
        )


# --8<-- [end:module]


# --8<-- [start:eps_placement]
EPS_PLACEMENTS = ("none", "outside", "inside")


def rms_norm_eps(x: torch.Tensor, eps: float, placement: str) -> torch.Tensor:
    """RMSNorm over the last dim, no weight, with eps where each implementation puts it.

    none:    x / sqrt(mean(x²))          the paper's eq. 4
    outside: x / (sqrt(mean(x²)) + eps)  bzhangGo/rmsnorm rmsnorm_torch.py
    inside:  x / sqrt(mean(x²) + eps)    torch.nn.RMSNorm, LLaMA, T5
    """
    if placement not in EPS_PLACEMENTS:
        raise ValueError(f"placement must be one of {EPS_PLACEMENTS}, got {placement!r}")
    if not torch.is_tensor(x) or not x.is_floating_point():
        got = x.dtype if torch.is_tensor(x) else type(x).__name__
        raise TypeError(f"rms_norm_eps expects a floating-point tensor, got {got}")
    if isinstance(eps, bool) or not isinstance(eps, (int, float)) or not 0 <= eps < float("inf"):
        raise ValueError(f"eps must be a finite number >= 0, got {eps!r}")
    h = x.to(torch.promote_types(x.dtype, torch.float32))  # fp16 in fp32: 300² overflows fp16
    ms = h.pow(2).mean(dim=-1, keepdim=True)  # (..., 1) mean of squares
    ms = torch.where(ms.isinf(), torch.nan, ms)  # overflow (fp32: |x| > 1e19): NaN, not 0
    if placement == "none":
        y = h / ms.sqrt()
    elif placement == "outside":
        y = h / (ms.sqrt() + eps)
    else:
        y = h / (ms + eps).sqrt()
    return y.to(x.dtype)


# --8<-- [end:eps_placement]


# --8<-- [start:demo]
if __name__ == "__main__":
    torch.manual_seed(0)
    x = torch.randn(2, 5, 8) * 3 + 1  # (batch, tokens, features), off-centre and wide

    ours = RMSNorm(8)
    ref = nn.RMSNorm(8)
    y = ours(x)
    print("shape:", tuple(y.shape))
    print("same as nn.RMSNorm:", torch.allclose(y, ref(x), atol=1e-6))
    print("same as F.rms_norm:", torch.allclose(y, nn.functional.rms_norm(x, (8,)), atol=1e-6))

    # every token now has root mean square 1, but its mean is not 0
    rms = y.pow(2).mean(-1).sqrt()
    print("token RMS ~ 1:", torch.allclose(rms, torch.ones(2, 5), atol=1e-5))
    print("token means ~ 0:", torch.allclose(y.mean(-1), torch.zeros(2, 5), atol=1e-2))
    print("parameters:", {name: tuple(p.shape) for name, p in ours.named_parameters()})
    print("eps:", ours.eps, "-> used:", torch.finfo(x.dtype).eps)
# --8<-- [end:demo]
