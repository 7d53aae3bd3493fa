"""Gradient norms at initialization: how much gradient reaches each FFN weight W^{2,l}.

Xiong et al. 2020 (arXiv 2002.04745, §3.3, Theorem 1) bound the gradient of the
last layer's second feed-forward weight W^{2,L} at initialization: independent
of the depth L in Post-LN, shrinking like 1/sqrt(L) in Pre-LN. The functions
here measure it on any stack of layers, given as a module with ``.layers`` and
a final norm (``norm_f`` in the handbook's ``Stack``, ``norm`` in
``nn.TransformerEncoder``). The experiment builds and initializes its stacks
itself: ``grad_norm_sweep`` takes a function that does both.

Two losses on random targets y: a linear one, mean_t <out_t, y_t>, whose
gradient with respect to the stack's output is y itself whatever the stack
computed (so every difference between depths and placements comes from how the
stack carries that gradient down), and a mean squared error through a fixed
random read-out, whose gradient also depends on the output.
"""

# --8<-- [start:probe]
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn


def handbook_w2(layer: nn.Module) -> torch.Tensor:
    """W^{2,l} of a handbook ``Block``: the second Linear of its feed-forward."""
    return layer.mlp.sublayer.proj.weight


def final_norm_of(stack: nn.Module) -> nn.Module | None:
    """The norm after the last layer: ``norm_f`` (``Stack``) or ``norm`` (PyTorch)."""
    if not isinstance(getattr(stack, "layers", None), Sequence | nn.ModuleList):
        raise TypeError(
            f"expected a stack with a .layers list (Stack, nn.TransformerEncoder), "
            f"got {type(stack).__name__}"
        )
    return getattr(stack, "norm_f", getattr(stack, "norm", None))


def linear_loss(target: torch.Tensor) -> Callable[[torch.Tensor], torch.Tensor]:
    """Loss = mean over tokens of <out_t, target_t>: it sends the same gradient
    (target / n_tokens) into the stack's output whatever the stack computed."""
    return lambda out: (out * target).sum(-1).mean()


def mse_loss(
    readout: torch.Tensor,
    target: torch.Tensor,
) -> Callable[[torch.Tensor], torch.Tensor]:
    """Loss = mean((out @ readout - target)^2): its gradient depends on the output."""
    return lambda out: F.mse_loss(out @ readout, target)


@dataclass
class Probe:
    w2: dict[str, list[float]]  # loss name -> ||dLoss/dW^{2,l}||_F for l = 1..L
    top_rms: float  # rms of x_L, the input of the final norm
    top_cos: float  # mean cosine similarity of two tokens of a sequence in x_L


def w2_grad_norms(
    stack: nn.Module,
    x: torch.Tensor,
    losses: dict[str, Callable[[torch.Tensor], torch.Tensor]],
    w2: Callable[[nn.Module], torch.Tensor] = handbook_w2,
) -> Probe:
    """One forward pass of ``stack`` on ``x``; per loss, ||dLoss/dW^{2,l}||_F per layer.

    Also returns the rms of the last layer's output x_L (the final norm divides
    what flows back by about that much, Xiong et al., Lemma 3) and how alike its
    tokens are.
    """
    norm_f = final_norm_of(stack)
    if not torch.is_tensor(x) or not x.is_floating_point():
        got = x.dtype if torch.is_tensor(x) else type(x).__name__
        raise TypeError(f"x must be a floating-point tensor, got {got}")
    if x.dim() != 3:
        got = tuple(x.shape)
        raise ValueError(f"x must have shape (batch, seq_len, d_model), got {got}")
    if not losses:
        raise ValueError("losses must name at least one loss function")
    h = x
    for layer in stack.layers:
        h = layer(h)  # (B, T, C): the residual stream after each layer
    out = norm_f(h) if norm_f is not None else h
    weights = [w2(layer) for layer in stack.layers]
    norms = {}
    for i, (name, loss_fn) in enumerate(losses.items()):
        keep = i < len(losses) - 1  # the graph serves the next loss too
        grads = torch.autograd.grad(loss_fn(out), weights, retain_graph=keep)
        norms[name] = [g.norm().item() for g in grads]
    with torch.no_grad():
        u = F.normalize(h, dim=-1)
        cos = u @ u.transpose(1, 2)  # (B, T, T)
        T = cos.shape[-1]
        off_diagonal = cos.sum((1, 2)) - cos.diagonal(dim1=1, dim2=2).sum(-1)
        top_cos = off_diagonal / (T * (T - 1))
    top_rms = h.detach().pow(2).mean().sqrt().item()
    return Probe(norms, top_rms, top_cos.mean().item())


def grad_norm_sweep(
    make_stack: Callable[[int], nn.Module],
    depths: Sequence[int],
    seeds: Sequence[int],
    batch_size: int = 8,
    seq_len: int = 32,
    w2: Callable[[nn.Module], torch.Tensor] = handbook_w2,
    device: torch.device | str | None = None,
) -> dict[int, dict[str, torch.Tensor]]:
    """``w2_grad_norms`` for every depth L and seed, each on a fresh ``make_stack(L)``.

    ``make_stack`` builds and initializes the stack (the init is the caller's
    choice). For a seed s: ``torch.manual_seed(s)`` before ``make_stack``, then
    from a generator seeded with s a unit-variance input x (B, T, d), targets
    y ~ N(0, 1) (B, T, d) and a read-out R ~ N(0, 1/d) (d, d). Two losses:
    "linear" <out, y> and "mse" (out R - y)^2. Returns {L: {"linear": (S, L),
    "mse": (S, L), "top_rms": (S,), "top_cos": (S,)}} for S seeds, on the CPU.
    """
    if len(depths) == 0 or len(seeds) == 0:
        got = f"{depths!r} and {seeds!r}"
        raise ValueError(f"need at least one depth and one seed, got {got}")
    results = {}
    for n_layers in depths:
        probes = []
        for seed in seeds:
            torch.manual_seed(seed)
            stack = make_stack(n_layers).to(device)
            weight = w2(stack.layers[0])
            d, dev = weight.shape[0], weight.device  # W^2 maps d_ff -> d_model
            g = torch.Generator().manual_seed(seed)  # CPU draws: same data everywhere
            x = torch.randn(batch_size, seq_len, d, generator=g).to(dev)
            target = torch.randn(batch_size, seq_len, d, generator=g).to(dev)
            readout = (torch.randn(d, d, generator=g) / math.sqrt(d)).to(dev)
            losses = {"linear": linear_loss(target), "mse": mse_loss(readout, target)}
            probes.append(w2_grad_norms(stack, x, losses, w2))
        results[n_layers] = {
            "linear": torch.tensor([p.w2["linear"] for p in probes]),
            "mse": torch.tensor([p.w2["mse"] for p in probes]),
            "top_rms": torch.tensor([p.top_rms for p in probes]),
            "top_cos": torch.tensor([p.top_cos for p in probes]),
        }
    return results


# --8<-- [end:probe]


# --8<-- [start:fit]
def power_law_fit(
    depths: Sequence[int],
    values: torch.Tensor,
    n_boot: int = 1000,
    seed: int = 0,
) -> tuple[float, float, float]:
    """Exponent p of values ~ c * L^p, with a 95% bootstrap interval over seeds.

    ``values`` is (n_seeds, n_depths). p is the least-squares slope of
    log(mean over seeds) against log(L); the interval resamples the seeds with
    replacement ``n_boot`` times.
    """
    values = torch.as_tensor(values, dtype=torch.float64)
    if values.dim() != 2 or values.shape[1] != len(depths) or len(depths) < 2:
        raise ValueError(
            f"values must have shape (n_seeds, {len(depths)}) for {len(depths)} "
            f"depths (>= 2), got {tuple(values.shape)}"
        )
    if (values <= 0).any():
        raise ValueError("values must be positive to fit a power law")
    log_l = torch.log(torch.tensor(depths, dtype=torch.float64))
    design = torch.stack([log_l, torch.ones_like(log_l)], dim=1)  # (n_depths, 2)

    def slope(v: torch.Tensor) -> float:
        log_mean = torch.log(v.mean(0))[:, None]  # (n_depths, 1)
        return torch.linalg.lstsq(design, log_mean).solution[0, 0].item()

    g = torch.Generator().manual_seed(seed)
    n = values.shape[0]
    boot = torch.tensor(
        [slope(values[torch.randint(0, n, (n,), generator=g)]) for _ in range(n_boot)],
        dtype=torch.float64,
    )
    q = torch.tensor([0.025, 0.975], dtype=torch.float64)
    lo, hi = torch.quantile(boot, q).tolist()
    return slope(values), lo, hi


# --8<-- [end:fit]


# --8<-- [start:demo]
if __name__ == "__main__":
    # PyTorch's own layers (their W^{2,l} is linear2) with PyTorch's default init,
    # Pre-LN with the final norm it needs
    def make_encoder(n_layers: int) -> nn.TransformerEncoder:
        layer = nn.TransformerEncoderLayer(
            32,
            4,
            128,
            dropout=0.0,
            activation="relu",
            batch_first=True,
            norm_first=True,
        )
        norm = nn.LayerNorm(32)
        return nn.TransformerEncoder(layer, n_layers, norm, enable_nested_tensor=False)

    depths = [2, 8]
    sweep = grad_norm_sweep(
        make_encoder, depths, seeds=range(3), w2=lambda layer: layer.linear2.weight
    )
    for n_layers in depths:
        last = sweep[n_layers]["linear"][:, -1].mean().item()
        print(f"Pre-LN, {n_layers:2d} layers: last layer's ||dL/dW2|| = {last:.2f}")
    last = torch.stack([sweep[n]["linear"][:, -1] for n in depths], 1)  # (S, depths)
    p, lo, hi = power_law_fit(depths, last)
    print(f"exponent p in L^p: {p:.2f} (95% interval {lo:.2f} .. {hi:.2f})")
    print("Theorem 1 (Xavier init, Xiong et al.'s setting): -0.5")
# --8<-- [end:demo]
