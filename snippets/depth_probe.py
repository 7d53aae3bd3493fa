"""Depth probes: how the residual stream grows layer by layer at initialization.

``stream_sq_norms`` measures E||x_l||^2 / d between the layers of a stack at
initialization, the quantity of Xiong et al. 2020 (arXiv 2002.04745, §3.3,
Lemma 2); ``lemma2_band`` is the lemma's band for Pre-LN. The stacks come from
elsewhere (any module with ``.layers``), and so does the training part of the
depth experiment (``snippets/lm_experiment.py``).
"""

# --8<-- [start:stream]
from collections.abc import Sequence

import torch
from torch import nn


@torch.no_grad()
def stream_sq_norms(stack: nn.Module, x: torch.Tensor) -> list[float]:
    """E||x_l||^2 / d for l = 0 (the input) .. L, averaged over batch and tokens.

    Runs ``stack.layers`` one by one and ignores any final norm, so it sees the
    stream itself.
    """
    layers = getattr(stack, "layers", None)
    if not isinstance(layers, Sequence | nn.ModuleList):
        got = type(stack).__name__
        raise TypeError(f"expected a stack with a .layers list, got {got}")
    if not torch.is_tensor(x) or not x.is_floating_point():
        got = x.dtype if torch.is_tensor(x) else type(x).__name__
        raise TypeError(f"x must be a floating-point tensor, got {got}")
    if x.dim() != 3:
        got = tuple(x.shape)
        raise ValueError(f"x must have shape (batch, seq_len, d_model), got {got}")
    out = [x.pow(2).mean().item()]  # mean over features = ||x||^2 / d
    for layer in layers:
        x = layer(x)  # (B, T, C)
        out.append(x.pow(2).mean().item())
    return out


def lemma2_band(n_layers: int) -> tuple[list[float], list[float]]:
    """Xiong et al.'s Lemma 2 for Pre-LN: (1 + l/2) <= E||x_l||^2 / d <= (1 + 3l/2).

    For l = 0 .. n_layers.
    """
    if isinstance(n_layers, bool) or not isinstance(n_layers, int) or n_layers < 0:
        raise ValueError(f"n_layers must be a non-negative int, got {n_layers!r}")
    layer_ids = range(n_layers + 1)
    return [1 + i / 2 for i in layer_ids], [1 + 3 * i / 2 for i in layer_ids]


# --8<-- [end:stream]


# --8<-- [start:demo]
if __name__ == "__main__":
    torch.manual_seed(0)
    x = torch.randn(4, 16, 32)  # (batch, seq_len, d_model), unit variance
    lower, upper = lemma2_band(8)
    print("Lemma 2 band at l = 8:", lower[-1], "..", upper[-1])
    for norm_first in (False, True):
        layer = nn.TransformerEncoderLayer(
            32, 4, 128, dropout=0.0, batch_first=True, norm_first=norm_first
        )
        encoder = nn.TransformerEncoder(layer, 8, enable_nested_tensor=False)
        norms = stream_sq_norms(encoder, x)
        name = "Pre-LN " if norm_first else "Post-LN"
        print(f"{name} E||x_l||^2/d, l = 0..8:", " ".join(f"{v:.2f}" for v in norms))
# --8<-- [end:demo]
