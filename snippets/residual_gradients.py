"""How much gradient reaches the first layer of a deep MLP, with and without residuals.

One class, one flag: ``DeepMLP(residual=False)`` computes x_{l+1} = tanh(W_l x_l + b_l);
``DeepMLP(residual=True)`` computes x_{l+1} = x_l + tanh(W_l x_l + b_l) (He et al. 2015,
arXiv 1512.03385, eq. 1). The same seed gives both the same weights, so the identity path is
the only difference between them.
"""

# --8<-- [start:module]
import torch
from torch import nn


class DeepMLP(nn.Module):
    """``depth`` tanh layers of size ``width``; ``residual`` adds the identity around each."""

    def __init__(self, depth: int = 50, width: int = 64, residual: bool = False):
        super().__init__()
        for name, value in (("depth", depth), ("width", width)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        if not isinstance(residual, bool):  # "False" and "no" are true: refused, not misread
            raise TypeError(f"residual must be True or False, got {residual!r}")
        self.width = width
        self.residual = residual
        # PyTorch's default nn.Linear init: U(-1/sqrt(width), 1/sqrt(width)), nothing tuned
        self.layers = nn.ModuleList(nn.Linear(width, width) for _ in range(depth))

    def block(self, i: int, x: torch.Tensor) -> torch.Tensor:
        h = torch.tanh(self.layers[i](x))  # F_i(x), (B, width)
        return x + h if self.residual else h

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not torch.is_tensor(x) or not x.is_floating_point():
            got = x.dtype if torch.is_tensor(x) else type(x).__name__
            raise TypeError(f"DeepMLP expects a floating-point tensor, got {got}")
        if x.dim() < 1 or x.shape[-1] != self.width:
            raise ValueError(
                f"DeepMLP expects input of shape (..., {self.width}), got {tuple(x.shape)}"
            )
        for i in range(len(self.layers)):
            x = self.block(i, x)
        return x


def grad_norms(
    residual: bool,
    seed: int = 0,
    depth: int = 50,
    width: int = 64,
    batch_size: int = 32,
    device=None,
    dtype: torch.dtype = torch.float32,
) -> list[float]:
    """Frobenius norm of dLoss/dW_l for every layer l (index 0 = first layer).

    The loss is a fixed random linear read-out of the output, averaged over the batch, so
    both networks receive a gradient of the same size at the top.
    """
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be a positive int, got {batch_size!r}")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise TypeError(f"seed must be an int, got {seed!r}")
    torch.manual_seed(seed)
    model = DeepMLP(depth, width, residual).to(device=device, dtype=dtype)
    x = torch.randn(batch_size, width).to(device=device, dtype=dtype)  # (B, width)
    readout = torch.randn(width).to(device=device, dtype=dtype)  # (width,)
    loss = (model(x) @ readout).mean()
    loss.backward()
    # the norm in float64: in float32 the squares of gradients below ~1e-19 underflow
    norms = [layer.weight.grad.to("cpu", torch.float64).norm().item() for layer in model.layers]
    if 0.0 in norms:  # random weights and inputs never give exactly 0: the gradient underflowed
        raise ValueError(f"a layer's gradient underflowed to 0 in {dtype}; use torch.float64")
    return norms


def first_layer_grad_norm(residual: bool, seed: int = 0, **kwargs) -> float:
    """||dLoss/dW_1||: what is left of the gradient after it has crossed every layer."""
    return grad_norms(residual, seed, **kwargs)[0]


# --8<-- [end:module]


# --8<-- [start:demo]
if __name__ == "__main__":
    # float64 so that the printed digits do not depend on the machine's matmul kernels
    plain = first_layer_grad_norm(residual=False, seed=0, dtype=torch.float64)
    resid = first_layer_grad_norm(residual=True, seed=0, dtype=torch.float64)
    print("depth 50, width 64, tanh, PyTorch's default init, seed 0")
    print(f"plain    ||dL/dW_1|| = {plain:.1e}")
    print(f"residual ||dL/dW_1|| = {resid:.1e}")
    print(f"residual / plain     = {resid / plain:.0e}")
# --8<-- [end:demo]
