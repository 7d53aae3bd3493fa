"""BatchNorm vs LayerNorm on a batch of sequences (B, T, C).

A from-scratch ``BatchNorm1d`` with the arguments, buffers and numbers of
torch.nn.BatchNorm1d (Ioffe & Szegedy 2015, arXiv 1502.03167, Alg. 1 and §3.1),
and small functions that show, with any norm module, what depends on the rest
of the batch and what does not.
"""

# --8<-- [start:module]
import copy
import math
import numbers

import torch
from torch import nn


def _number(name: str, value, integral: bool = False):
    """``value`` if it is a number (an int if ``integral``); a bool or a str is a TypeError."""
    kind, what = (numbers.Integral, "an int") if integral else (numbers.Real, "a number")
    if isinstance(value, bool) or not isinstance(value, kind):
        raise TypeError(f"{name} must be {what}, got {type(value).__name__} {value!r}")
    return value


class BatchNorm1d(nn.Module):
    """Normalize each channel over the batch (and time): input (N, C) or (N, C, L)."""

    def __init__(
        self,
        num_features: int,
        eps: float = 1e-5,
        momentum: float | None = 0.1,
        affine: bool = True,
        track_running_stats: bool = True,
        device=None,
        dtype=None,
        *,
        bias: bool = True,
    ):
        super().__init__()
        if _number("num_features", num_features, integral=True) < 1:
            raise ValueError(f"num_features must be a positive int, got {num_features!r}")
        if not 0 < _number("eps", eps) < math.inf:
            raise ValueError(f"eps must be a finite number > 0, got {eps!r}")
        if momentum is not None:
            _number("momentum", momentum)  # any number, as PyTorch allows
        self.num_features, self.eps, self.momentum = int(num_features), eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        factory = {"device": device, "dtype": dtype}
        if affine:
            self.weight = nn.Parameter(torch.ones(num_features, **factory))  # gamma
            if bias:
                self.bias = nn.Parameter(torch.zeros(num_features, **factory))  # beta
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        if track_running_stats:
            # the estimates used in eval mode: start at the statistics of N(0, 1)
            self.register_buffer("running_mean", torch.zeros(num_features, **factory))
            self.register_buffer("running_var", torch.ones(num_features, **factory))
            count = torch.tensor(0, dtype=torch.long, device=device)
            self.register_buffer("num_batches_tracked", count)
        else:
            for name in ("running_mean", "running_var", "num_batches_tracked"):
                self.register_buffer(name, None)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not torch.is_tensor(x) or not x.is_floating_point():
            got = x.dtype if torch.is_tensor(x) else type(x).__name__
            raise TypeError(f"BatchNorm1d expects a floating-point tensor, got {got}")
        if x.dim() not in (2, 3) or x.shape[1] != self.num_features:
            raise ValueError(
                f"BatchNorm1d expects input (N, {self.num_features}) or "
                f"(N, {self.num_features}, L), got {tuple(x.shape)}; "
                "a (B, T, C) batch of sequences must be transposed to (B, C, T) first"
            )
        dims = (0, 2) if x.dim() == 3 else (0,)  # every axis except the channel axis
        shape = (1, -1, 1) if x.dim() == 3 else (1, -1)
        # fp16/bf16 are normalized in fp32 and cast back at the end, as PyTorch's kernels do
        h = x.to(torch.promote_types(x.dtype, torch.float32))
        use_batch_stats = self.training or self.running_mean is None
        if use_batch_stats:
            n = x.numel() // self.num_features  # values per channel
            if n == 1:  # variance 0, nothing to normalize (n == 0 passes, as in PyTorch)
                raise ValueError(
                    "Expected more than 1 value per channel when training, "
                    f"got input size {x.size()}"
                )
            mean = h.mean(dim=dims)  # (C,)
            var = (h - mean.view(shape)).pow(2).mean(dim=dims)  # (C,) biased: used to normalize
            var = torch.where(var.isinf(), torch.nan, var)  # overflow (|x| > 1e19): NaN, not 0
            if self.training and self.running_mean is not None:
                self._update_running_stats(mean, var, n)
        else:
            mean, var = self.running_mean, self.running_var
        y = (h - mean.view(shape)) * torch.rsqrt(var.view(shape) + self.eps)
        if self.weight is not None:
            y = y * self.weight.view(shape)
        if self.bias is not None:
            y = y + self.bias.view(shape)
        return y.to(x.dtype)

    @torch.no_grad()
    def _update_running_stats(self, mean: torch.Tensor, var: torch.Tensor, n: int) -> None:
        self.num_batches_tracked += 1
        if n == 0:  # an empty batch has no statistics: PyTorch counts it, changes nothing
            return
        # momentum=None: a plain average of all batches so far
        m = 1.0 / self.num_batches_tracked.item() if self.momentum is None else self.momentum
        unbiased_var = var * n / (n - 1)  # the stored variance is unbiased
        for buf, stat in ((self.running_mean, mean), (self.running_var, unbiased_var)):
            buf.copy_((1 - m) * buf.to(stat.dtype) + m * stat)  # in stat's dtype, rounded once

    def extra_repr(self) -> str:
        return (
            f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
            f"affine={self.affine}, bias={self.bias is not None}, "
            f"track_running_stats={self.track_running_stats}"
        )


# --8<-- [end:module]


# --8<-- [start:demos]
def _check_tensor(name: str, x) -> None:
    if not torch.is_tensor(x) or not x.is_floating_point():
        got = x.dtype if torch.is_tensor(x) else type(x).__name__
        raise TypeError(f"{name} must be a floating-point tensor, got {got}")


def normalize_tokens(norm: nn.Module, x: torch.Tensor) -> torch.Tensor:
    """Apply ``norm`` to a (B, T, C) batch; batch norms get channels in dim 1 and back."""
    _check_tensor("x", x)
    if x.dim() != 3:
        raise ValueError(f"normalize_tokens expects a (B, T, C) tensor, got {tuple(x.shape)}")
    if isinstance(norm, (nn.BatchNorm1d, BatchNorm1d)):
        return norm(x.transpose(1, 2)).transpose(1, 2)  # (B, C, T) in, (B, T, C) out
    return norm(x)


def output_in_batch(norm: nn.Module, sample: torch.Tensor, rest: torch.Tensor) -> torch.Tensor:
    """What ``norm`` makes of one sequence (T, C) when ``rest`` (B', T, C) shares its batch."""
    _check_tensor("sample", sample)
    _check_tensor("rest", rest)
    if sample.dim() != 2 or rest.dim() != 3 or rest.shape[1:] != sample.shape:
        raise ValueError(
            "output_in_batch expects sample (T, C) and rest (B', T, C) with the same (T, C), "
            f"got {tuple(sample.shape)} and {tuple(rest.shape)}"
        )
    batch = torch.cat([sample[None], rest])  # (1 + B', T, C)
    return normalize_tokens(norm, batch)[0]  # (T, C)


def train_eval_gap(norm: nn.Module, batches: list[torch.Tensor]) -> float:
    """Train on ``batches`` (each (B, T, C)), then compare train and eval outputs on the last.

    Returns the mean absolute difference. ``norm`` itself is left untouched.
    """
    if not isinstance(norm, nn.Module) or not isinstance(batches, (list, tuple)):
        got = f"{type(norm).__name__} and {type(batches).__name__}"
        raise TypeError(f"train_eval_gap expects an nn.Module and a list of batches, got {got}")
    if not batches:
        raise ValueError("train_eval_gap needs at least one batch, got an empty list")
    norm = copy.deepcopy(norm).train()
    with torch.no_grad():
        for x in batches:
            y_train = normalize_tokens(norm, x)
        y_eval = normalize_tokens(norm.eval(), batches[-1])
    return (y_train - y_eval).abs().mean().item()


def pad(seqs: list[torch.Tensor], length: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Zero-pad sequences (T_i, C) to ``length``: a (B, length, C) batch and a (B, length) mask."""
    _check_seqs(seqs, length)
    batch = seqs[0].new_zeros(len(seqs), length, seqs[0].shape[-1])  # (B, length, C)
    mask = torch.zeros(len(seqs), length, dtype=torch.bool, device=seqs[0].device)
    for b, s in enumerate(seqs):
        batch[b, : len(s)] = s
        mask[b, : len(s)] = True
    return batch, mask


def _check_seqs(seqs, length) -> None:
    if not isinstance(seqs, (list, tuple)) or not all(torch.is_tensor(s) for s in seqs):
        seq = isinstance(seqs, (list, tuple))
        got = [type(s).__name__ for s in seqs] if seq else type(seqs).__name__
        raise TypeError(f"pad expects seqs, a list of (T_i, C) tensors, got {got}")
    shapes = [tuple(s.shape) for s in seqs]
    if not seqs or any(len(s) != 2 or s[1] != shapes[0][1] for s in shapes):
        raise ValueError(
            f"pad expects seqs to be one or more (T_i, C) tensors with the same C, got {shapes}"
        )
    if isinstance(length, bool) or not isinstance(length, int) or length < 1:
        raise ValueError(f"pad length must be a positive int, got {length!r}")
    longest = max(s[0] for s in shapes)
    if longest > length:
        raise ValueError(f"pad length {length} is shorter than a sequence of {longest}")


def sees_the_future(norm: nn.Module, x: torch.Tensor, t: int) -> bool:
    """Does the output at positions <= t change when tokens after t change?"""
    _check_tensor("x", x)
    if x.dim() != 3 or isinstance(t, bool) or not isinstance(t, int) or not 0 <= t < x.shape[1] - 1:
        raise ValueError(
            f"sees_the_future expects x (B, T, C) and an int 0 <= t < T - 1, "
            f"got shape {tuple(x.shape)} and t={t!r}"
        )
    norm = copy.deepcopy(norm)  # a batch norm in training mode updates its running statistics
    changed = x.clone()
    changed[:, t + 1 :] += torch.randn_like(changed[:, t + 1 :])  # new "future" tokens
    with torch.no_grad():
        before = normalize_tokens(norm, x)[:, : t + 1]
        after = normalize_tokens(norm, changed)[:, : t + 1]
    return not torch.allclose(before, after, atol=1e-6)


# --8<-- [end:demos]


# --8<-- [start:demo]
if __name__ == "__main__":
    torch.manual_seed(0)
    B, T, C = 4, 6, 8
    x = 2 * torch.randn(B, T, C) + 1  # (B, T, C)

    ours, ref = BatchNorm1d(C), nn.BatchNorm1d(C)
    y, y_ref = normalize_tokens(ours, x), normalize_tokens(ref, x)
    print("same as nn.BatchNorm1d:", torch.allclose(y, y_ref, atol=1e-6))
    print("same running stats:", torch.allclose(ours.running_var, ref.running_var))
    # BatchNorm: every channel has mean 0 over (B, T); LayerNorm: every token over C
    print("BatchNorm channel means ~ 0:", torch.allclose(y.mean((0, 1)), torch.zeros(C), atol=1e-6))
    z = nn.LayerNorm(C)(x)
    print("LayerNorm token means ~ 0:", torch.allclose(z.mean(-1), torch.zeros(B, T), atol=1e-6))
# --8<-- [end:demo]
