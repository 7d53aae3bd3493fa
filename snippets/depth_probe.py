"""Depth probes: how the residual stream grows layer by layer, and whether a deep stack trains.

``stream_sq_norms`` measures E||x_l||^2 / d between the layers of a stack at initialization,
the quantity of Xiong et al. 2020 (arXiv 2002.04745, §3.3, Lemma 2). ``MarkovTask`` and
``train_lm`` give a quick trainability test: a language model learns sequences drawn from a
random Markov chain with a known best possible loss. The models come from elsewhere (any stack
with ``.layers``; any model called as ``model(idx, targets) -> (logits, loss)``).
"""

# --8<-- [start:stream]
import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import nn


@torch.no_grad()
def stream_sq_norms(stack: nn.Module, x: torch.Tensor) -> list[float]:
    """E||x_l||^2 / d for l = 0 (the input) .. L, averaged over the batch and the tokens.

    Runs ``stack.layers`` one by one and ignores any final norm, so it sees the stream itself.
    """
    layers = getattr(stack, "layers", None)
    if not isinstance(layers, Sequence | nn.ModuleList):
        raise TypeError(f"expected a stack with a .layers list, got {type(stack).__name__}")
    if not torch.is_tensor(x) or not x.is_floating_point():
        got = x.dtype if torch.is_tensor(x) else type(x).__name__
        raise TypeError(f"x must be a floating-point tensor, got {got}")
    if x.dim() != 3:
        raise ValueError(f"x must have shape (batch, seq_len, d_model), got {tuple(x.shape)}")
    out = [x.pow(2).mean().item()]  # mean over features = ||x||^2 / d
    for layer in layers:
        x = layer(x)  # (B, T, C)
        out.append(x.pow(2).mean().item())
    return out


def lemma2_band(n_layers: int) -> tuple[list[float], list[float]]:
    """Xiong et al.'s Lemma 2 for Pre-LN: (1 + l/2) <= E||x_l||^2 / d <= (1 + 3l/2), l = 0..L."""
    if isinstance(n_layers, bool) or not isinstance(n_layers, int) or n_layers < 0:
        raise ValueError(f"n_layers must be a non-negative int, got {n_layers!r}")
    layer_ids = range(n_layers + 1)
    return [1 + i / 2 for i in layer_ids], [1 + 3 * i / 2 for i in layer_ids]


# --8<-- [end:stream]


# --8<-- [start:task]
class MarkovTask:
    """Token sequences from a random first-order Markov chain.

    Each of the ``vocab_size`` tokens has ``n_next`` distinct successors, drawn at random once
    (seeded) and each equally likely. Whatever the context, the next token is uniform over
    ``n_next`` choices, so no model can beat a loss of log(n_next) nats: the entropy rate.
    """

    def __init__(self, vocab_size: int = 16, n_next: int = 2, seed: int = 0):
        if not 1 <= n_next <= vocab_size:
            raise ValueError(f"n_next must be in 1..vocab_size={vocab_size}, got {n_next}")
        self.vocab_size, self.n_next = vocab_size, n_next
        g = torch.Generator().manual_seed(seed)
        rows = [torch.randperm(vocab_size, generator=g)[:n_next] for _ in range(vocab_size)]
        self.successors = torch.stack(rows)  # (vocab_size, n_next)

    @property
    def entropy_rate(self) -> float:
        """The lowest cross-entropy any model can reach, in nats."""
        return math.log(self.n_next)

    def position_only_loss(self, seq_len: int) -> float:
        """The best loss of a model that knows each target's position but not the tokens before
        it: the mean entropy of the marginal distribution of the token at positions 1..seq_len.
        """
        P = torch.zeros(self.vocab_size, self.vocab_size, dtype=torch.float64)
        rows = torch.arange(self.vocab_size)[:, None].expand_as(self.successors)
        P[rows, self.successors] = 1 / self.n_next  # (from, to) transition probabilities
        p = torch.full((self.vocab_size,), 1 / self.vocab_size, dtype=torch.float64)
        entropies = []
        for _ in range(seq_len):
            p = p @ P  # the marginal one step later
            entropies.append(-(p * p.clamp_min(1e-300).log()).sum().item())
        return sum(entropies) / seq_len

    def sample(self, batch_size: int, seq_len: int, generator: torch.Generator):
        """(idx, targets), both (batch_size, seq_len) long tensors on the CPU; targets = idx
        shifted by one. The first token is uniform over the vocabulary."""
        seq = torch.empty(batch_size, seq_len + 1, dtype=torch.long)
        seq[:, 0] = torch.randint(0, self.vocab_size, (batch_size,), generator=generator)
        for t in range(seq_len):
            choice = torch.randint(0, self.n_next, (batch_size,), generator=generator)
            seq[:, t + 1] = self.successors[seq[:, t], choice]
        return seq[:, :-1], seq[:, 1:]


# --8<-- [end:task]


# --8<-- [start:train]
@dataclass
class TrainResult:
    losses: list[float]  # training loss at each step (shorter if it diverged)
    eval_loss: float  # loss on a fixed held-out batch after training (nan if diverged)
    diverged: bool  # a loss became inf or nan


def train_lm(
    model: nn.Module,
    task: MarkovTask,
    steps: int,
    lr: float,
    batch_size: int = 8,
    seq_len: int = 16,
    seed: int = 0,
    eval_batch_size: int = 64,
) -> TrainResult:
    """Adam at a constant ``lr`` (no warmup, no clipping) for ``steps`` fresh batches.

    Adam's betas are (0.9, 0.98), as in Xiong et al.'s setup (§3.2). Training batches come
    from a generator seeded with ``seed``; the evaluation batch from seed 10_000 + seed, so
    it is never trained on. Stops at the first non-finite loss and reports it as diverged.
    """
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
        raise ValueError(f"steps must be a positive int, got {steps!r}")
    if not lr > 0:
        raise ValueError(f"lr must be positive, got {lr!r}")
    device = next(model.parameters()).device
    opt = torch.optim.Adam(model.parameters(), lr=lr, betas=(0.9, 0.98), foreach=True)
    g = torch.Generator().manual_seed(seed)
    model.train()
    losses = []
    for _ in range(steps):
        idx, targets = task.sample(batch_size, seq_len, g)
        _, loss = model(idx.to(device), targets.to(device))
        if not torch.isfinite(loss):
            losses.append(float("nan"))
            return TrainResult(losses, float("nan"), diverged=True)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    idx, targets = task.sample(
        eval_batch_size, seq_len, torch.Generator().manual_seed(10_000 + seed)
    )
    model.eval()
    with torch.no_grad():
        _, loss = model(idx.to(device), targets.to(device))
    return TrainResult(losses, loss.item(), diverged=not math.isfinite(loss.item()))


# --8<-- [end:train]


# --8<-- [start:demo]
if __name__ == "__main__":
    torch.manual_seed(0)
    x = torch.randn(4, 16, 32)  # (batch, seq_len, d_model), unit variance
    for norm_first in (False, True):
        layer = nn.TransformerEncoderLayer(
            32, 4, 128, dropout=0.0, batch_first=True, norm_first=norm_first
        )
        encoder = nn.TransformerEncoder(layer, 8, enable_nested_tensor=False)
        norms = stream_sq_norms(encoder, x)
        name = "Pre-LN " if norm_first else "Post-LN"
        print(f"{name} E||x_l||^2/d, l = 0..8:", " ".join(f"{v:.2f}" for v in norms))
    task = MarkovTask(vocab_size=16, n_next=2)
    idx, targets = task.sample(2, 8, torch.Generator().manual_seed(0))
    print("a sequence:", idx[0].tolist(), "-> next:", targets[0, -1].item())
    print(f"best possible loss: {task.entropy_rate:.3f} nats; uniform guess: {math.log(16):.3f}")
# --8<-- [end:demo]
