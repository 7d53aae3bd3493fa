"""Layer normalization from scratch: the same numbers as torch.nn.LayerNorm.

Ba, Kiros & Hinton 2016 (arXiv 1607.06450), §3, eq. 3; argument names follow
torch.nn.LayerNorm so one can replace the other.
"""

# --8<-- [start:module]
import math
import numbers

import torch
from torch import nn


def _layer_norm_args(shape, eps) -> tuple[int, ...]:
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
    if isinstance(eps, bool) or not isinstance(eps, numbers.Real):
        raise TypeError(f"eps must be a number, got {type(eps).__name__} {eps!r}")
    if not 0 <= eps < math.inf:
        raise ValueError(f"eps must be a finite number >= 0, got {eps!r}")
    return tuple(int(d) for d in dims)


class LayerNorm(nn.Module):
    """y = (x - mean) / sqrt(var + eps) * weight + bias over the last dims.

    The statistics are taken over the trailing ``len(normalized_shape)`` dims
    of the input, separately for every leading index (every token).
    """

    def __init__(
        self,
        normalized_shape,
        eps: float = 1e-5,
        elementwise_affine: bool = True,
        bias: bool = True,
        device=None,
        dtype=None,
    ):
        super().__init__()
        self.normalized_shape = _layer_norm_args(normalized_shape, eps)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        factory = {"device": device, "dtype": dtype}
        if elementwise_affine:
            # gamma = 1, beta = 0 at init: the layer starts as pure standardization
            self.weight = nn.Parameter(torch.ones(self.normalized_shape, **factory))
            if bias:
                self.bias = nn.Parameter(torch.zeros(self.normalized_shape, **factory))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n = len(self.normalized_shape)
        if not torch.is_tensor(x) or not x.is_floating_point():
            got = x.dtype if torch.is_tensor(x) else type(x).__name__
            raise TypeError(f"LayerNorm expects a floating-point tensor, got {got}")
        if x.dim() < n or tuple(x.shape[-n:]) != self.normalized_shape:
            raise ValueError(
                f"LayerNorm expects input whose last {n} dim(s) are "
                f"{self.normalized_shape}, got trailing dims {tuple(x.shape[-n:])} "
                f"(input shape {tuple(x.shape)})"
            )
        dims = tuple(range(-n, 0))
        # fp16/bf16 are normalized in fp32, as PyTorch's kernels do: a sum of
        # squares over thousands of features easily overflows fp16 (max 65504).
        h = x.to(torch.promote_types(x.dtype, torch.float32))
        mean = h.mean(dim=dims, keepdim=True)
        var = (h - mean).pow(2).mean(dim=dims, keepdim=True)  # biased: divide by N, not N - 1
        var = torch.where(var.isinf(), torch.nan, var)  # overflow (fp32: |x| > 1e19): NaN, not 0
        h = (h - mean) * torch.rsqrt(var + self.eps)  # eps inside the square root
        if self.weight is not None:
            h = h * self.weight
        if self.bias is not None:
            h = h + self.bias
        return h.to(x.dtype)

    def extra_repr(self) -> str:
        return (
            f"{self.normalized_shape}, eps={self.eps}, "
            f"elementwise_affine={self.elementwise_affine}, bias={self.bias is not None}"
        )


# --8<-- [end:module]


# --8<-- [start:demo]
if __name__ == "__main__":
    torch.manual_seed(0)
    x = torch.randn(2, 5, 8) * 3 + 1  # (batch, tokens, features), off-centre and wide

    ours = LayerNorm(8)
    ref = nn.LayerNorm(8)
    y = ours(x)
    print("shape:", tuple(y.shape))
    print("same as nn.LayerNorm:", torch.allclose(y, ref(x), atol=1e-6))

    # every token now has mean 0 and (biased) variance 1
    print("token means ~ 0:", torch.allclose(y.mean(-1), torch.zeros(2, 5), atol=1e-6))
    var = y.var(-1, unbiased=False)
    print("token variances ~ 1:", torch.allclose(var, torch.ones(2, 5), atol=1e-4))
    print("parameters:", {name: tuple(p.shape) for name, p in ours.named_parameters()})
    assert ours.eps == ref.eps == 1e-5  # PyTorch's default
# --8<-- [end:demo]
