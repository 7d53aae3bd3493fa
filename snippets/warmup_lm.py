"""A tiny language-model training bench for the warmup experiment.

The parts, each small enough to read in one go:

- ``MarkovLanguage``: a synthetic language, a random sparse Markov chain of
  order 1 or 2 over a small vocabulary, generated from a seed (no download).
  Because the chain is known, so is the best loss any model can reach.
- ``lr_lambda``: a learning-rate schedule, linear warmup then constant, cosine
  or inverse-square-root decay (the inverse-sqrt one is Vaswani et al. 2017,
  arXiv 1706.03762, §5.3).
- ``train_lm``: Adam with beta = (0.9, 0.98), as Vaswani et al. §5.3 and
  Xiong et al. 2020 (arXiv 2002.04745, §3.2); returns the loss curve and flags
  divergence. It takes any model that maps token ids (B, T) to logits
  (B, T, vocab_size), e.g. the handbook's GPT.
- ``first_step_below`` and ``outcome``: how fast a run got somewhere, and
  whether it trained at all.
- ``xavier_init_``: re-initialize a model's linear layers (Glorot & Bengio 2010).
"""

# --8<-- [start:data]
import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn


def _entropy(p: torch.Tensor) -> torch.Tensor:
    """Shannon entropy in nats over the last dim; 0 log 0 = 0."""
    return -(p * p.clamp_min(1e-30).log()).sum(-1)


class MarkovLanguage:
    """A random sparse Markov chain: the next token depends on the last ``order`` tokens.

    Every context (one of vocab_size ** order) allows ``branching`` next tokens,
    drawn at random, with Dirichlet(1) probabilities. Sequences start after
    ``burn_in`` steps from a uniformly drawn context, so a window looks like the
    middle of a long text. With order 2 a model must look two tokens back, which
    needs attention; a bigram table (order 1) does not.
    """

    def __init__(
        self,
        vocab_size: int = 16,
        order: int = 2,
        branching: int = 3,
        burn_in: int = 16,
        seed: int = 0,
    ):
        if not isinstance(vocab_size, int) or vocab_size < 2:
            raise ValueError(f"vocab_size must be an int >= 2, got {vocab_size!r}")
        if order not in (1, 2):
            raise ValueError(f"order must be 1 or 2, got {order!r}")
        if not isinstance(branching, int) or not 1 <= branching <= vocab_size:
            raise ValueError(f"branching must be an int in [1, {vocab_size}], got {branching!r}")
        if not isinstance(burn_in, int) or burn_in < 0:
            raise ValueError(f"burn_in must be an int >= 0, got {burn_in!r}")
        self.vocab_size, self.order, self.branching, self.burn_in = (
            vocab_size,
            order,
            branching,
            burn_in,
        )
        g = torch.Generator().manual_seed(seed)
        n_contexts = vocab_size**order
        # which tokens may follow each context: `branching` distinct ones, chosen at random
        allowed = torch.rand(n_contexts, vocab_size, generator=g).argsort(-1)[:, :branching]
        weights = -torch.rand(n_contexts, branching, generator=g).log()  # Exp(1): Dirichlet(1)
        self.probs = torch.zeros(n_contexts, vocab_size, dtype=torch.float64)
        self.probs.scatter_(1, allowed, (weights / weights.sum(-1, keepdim=True)).double())

    def _context(self, tokens: torch.Tensor) -> torch.Tensor:
        """Index of the context made of the last ``order`` tokens; (B, order) -> (B,)."""
        index = torch.zeros(tokens.shape[0], dtype=torch.long, device=tokens.device)
        for i in range(self.order):
            index = index * self.vocab_size + tokens[:, i]
        return index

    def sample(self, batch_size: int, seq_len: int, generator: torch.Generator) -> torch.Tensor:
        """A (batch_size, seq_len) tensor of token ids; reproducible from ``generator``."""
        if batch_size < 1 or seq_len < 1:
            raise ValueError(f"batch_size and seq_len must be >= 1, got {batch_size} and {seq_len}")
        V = self.vocab_size
        ctx = torch.randint(V, (batch_size, self.order), generator=generator)
        out = []
        probs = self.probs.float()
        for t in range(self.burn_in + seq_len):
            nxt = torch.multinomial(probs[self._context(ctx)], 1, generator=generator)  # (B, 1)
            ctx = torch.cat([ctx[:, 1:], nxt], dim=1)
            if t >= self.burn_in:
                out.append(nxt)
        return torch.cat(out, dim=1)  # (B, seq_len)

    def baselines(self, seq_len: int) -> dict[str, float]:
        """Reference losses (nats per predicted token) for ``train_lm(..., seq_len)``.

        uniform: ln V, a model that knows nothing.
        unigram: the best loss ignoring context (entropy of the token frequencies).
        bigram: the best loss from the previous token alone (no attention needed).
        optimal: the best loss any model can reach, the chain's own conditional
            entropy, computed exactly by propagating the context distribution.
            A model reads tokens 0 .. seq_len - 1 of a window of seq_len + 1 and
            predicts tokens 1 .. seq_len; the first ``order`` predictions see a
            shorter context, so they cost more.
        """
        if seq_len < 1:
            raise ValueError(f"seq_len must be >= 1, got {seq_len}")
        V, k = self.vocab_size, self.order
        row_entropy = _entropy(self.probs)  # (V^k,) entropy of the next token per context
        pi = torch.full((V**k,), 1.0 / V**k, dtype=torch.float64)  # the uniform start

        def step(pi):  # context distribution one token later
            joint = pi[:, None] * self.probs  # (V^k, V): P(context, next)
            return joint.reshape(V, V ** (k - 1) * V).sum(0)  # drop the oldest token

        for _ in range(self.burn_in + 1):  # the first window token is drawn on the last step
            pi = step(pi)
        losses, bigram, marginals, prev_pi = [], [], [], pi
        for t in range(seq_len + 1):  # pi: distribution of the context ending at token t
            marginals.append(pi.reshape(-1, V).sum(0))
            if t >= 1:  # predicting token t from tokens 0 .. t-1
                # P(x_{t-1}, x_t): read off the context, or build it for order 1
                pair = pi.reshape(-1, V * V).sum(0) if k == 2 else prev_pi[:, None] * self.probs
                bigram.append(_entropy(pair.flatten()) - _entropy(marginals[-2]))
                if t >= k:
                    losses.append((prev_pi * row_entropy).sum())
                else:  # H(X_0..X_t) - H(X_0..X_{t-1}); older tokens are unseen
                    seen_now = pi.reshape(-1, V ** (t + 1)).sum(0)
                    seen_before = prev_pi.reshape(-1, V**t).sum(0)
                    losses.append(_entropy(seen_now) - _entropy(seen_before))
            prev_pi = pi
            pi = step(pi)
        unigram = _entropy(torch.stack(marginals[1:]).mean(0))
        return {
            "uniform": math.log(V),
            "unigram": unigram.item(),
            "bigram": torch.stack(bigram).mean().item(),
            "optimal": torch.stack(losses).mean().item(),
        }


# --8<-- [end:data]


# --8<-- [start:schedule]
DECAYS = ("constant", "cosine", "inverse_sqrt")


def lr_lambda(step: int, warmup_steps: int, total_steps: int, decay: str = "constant") -> float:
    """Multiplier of the peak learning rate at optimizer step ``step`` (0-based).

    Linear warmup from 1/(warmup_steps + 1) to 1 over ``warmup_steps`` steps,
    then: constant; cosine to 0 at ``total_steps``; or inverse square root,
    sqrt(warmup_steps / step), the shape of Vaswani et al.'s schedule.
    warmup_steps = 0 means the full learning rate from the first step.
    """
    if warmup_steps < 0 or total_steps < 1:
        raise ValueError(
            f"need warmup_steps >= 0 and total_steps >= 1, got {warmup_steps} and {total_steps}"
        )
    if decay not in DECAYS:
        raise ValueError(f"decay must be one of {DECAYS}, got {decay!r}")
    if step < warmup_steps:
        return (step + 1) / (warmup_steps + 1)
    if decay == "cosine":
        done = (step - warmup_steps) / max(1, total_steps - warmup_steps)
        return 0.5 * (1 + math.cos(math.pi * min(done, 1.0)))
    if decay == "inverse_sqrt":
        return math.sqrt(max(warmup_steps, 1) / max(step, 1))
    return 1.0


# --8<-- [end:schedule]


# --8<-- [start:train]
@dataclass
class TrainResult:
    losses: list[float]  # training loss at every step (nan after a blow-up)
    final_loss: float  # mean of the last `tail` losses
    diverged: bool  # non-finite loss, or final loss above ln(vocab_size), the uniform guess


def train_lm(
    model: nn.Module,
    language: MarkovLanguage,
    steps: int,
    lr: float,
    warmup_steps: int = 0,
    batch_size: int = 16,
    seq_len: int = 32,
    decay: str = "constant",
    betas: tuple[float, float] = (0.9, 0.98),
    seed: int = 0,
    tail: int = 20,
) -> TrainResult:
    """Train ``model`` on fresh batches of ``language``; runs with one seed see the same ones.

    ``model(idx)`` must return logits of shape (B, T, vocab_size), or a tuple
    whose first item is. No gradient clipping: the experiment asks what the
    placement alone does.
    """
    if steps < 1 or tail < 1:
        raise ValueError(f"steps and tail must be >= 1, got {steps} and {tail}")
    if not lr > 0:
        raise ValueError(f"lr must be > 0, got {lr!r}")
    device = next(model.parameters()).device
    opt = torch.optim.Adam(model.parameters(), lr=lr, betas=betas, foreach=True)  # one op per step
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: lr_lambda(s, warmup_steps, steps, decay)
    )
    # Every batch drawn up front, in one go (faster): with the same seed every model sees
    # the same data in the same order.
    g = torch.Generator().manual_seed(seed)
    data = language.sample(steps * batch_size, seq_len + 1, g).view(steps, batch_size, -1)
    V = language.vocab_size
    losses: list[float] = []
    model.train()
    for tokens in data.to(device):  # (B, T + 1)
        x, y = tokens[:, :-1], tokens[:, 1:]  # predict every next token
        out = model(x)
        logits = out[0] if isinstance(out, tuple) else out
        if logits.shape != (*x.shape, V):
            raise ValueError(
                f"model must return logits of shape {(*x.shape, V)}, got {tuple(logits.shape)}"
            )
        loss = F.cross_entropy(logits.flatten(0, 1), y.flatten())
        if not torch.isfinite(loss):  # a blown-up model stays blown up: stop here
            losses += [math.nan] * (steps - len(losses))
            break
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        losses.append(loss.item())
    final = sum(losses[-tail:]) / min(tail, len(losses))
    diverged = not math.isfinite(final) or final > math.log(V) + 1e-3  # 1e-3: float rounding
    return TrainResult(losses, final, diverged)


def first_step_below(losses: list[float], target: float, window: int = 10) -> int | None:
    """First step at which the mean of the last ``window`` losses is below ``target``.

    A measure of speed: how many steps a run needs to reach a given loss.
    None if it never does.
    """
    if window < 1:
        raise ValueError(f"window must be >= 1, got {window}")
    for end in range(window, len(losses) + 1):
        if sum(losses[end - window : end]) / window < target:  # nan compares False
            return end - 1
    return None


def outcome(result: TrainResult, baselines: dict[str, float], margin: float = 0.1) -> str:
    """A run's verdict: "diverged", "no better than unigram" or "trained".

    A run whose final loss is above the unigram loss minus ``margin`` nats has
    learned no more than the token frequencies: it failed, though nothing blew up.
    """
    if result.diverged:
        return "diverged"
    if result.final_loss > baselines["unigram"] - margin:
        return "no better than unigram"
    return "trained"


# --8<-- [end:train]


# --8<-- [start:init]
def xavier_init_(model: nn.Module, gain: float = 1.0) -> nn.Module:
    """Xavier-normal weights and zero biases for every nn.Linear of ``model``, in place.

    Glorot & Bengio 2010: std = gain * sqrt(2 / (fan_in + fan_out)), larger than
    GPT-2's N(0, 0.02) for small widths. A weight tied to an embedding (GPT's
    lm_head) is re-initialized with it; other embeddings are left as they are.
    """
    for m in model.modules():
        if isinstance(m, nn.Linear):
            nn.init.xavier_normal_(m.weight, gain=gain)
            if m.bias is not None:
                nn.init.zeros_(m.bias)
    return model


# --8<-- [end:init]


# --8<-- [start:demo]
if __name__ == "__main__":
    lang = MarkovLanguage(vocab_size=16, order=1, branching=3, seed=0)
    base = lang.baselines(seq_len=16)
    print("baselines:", {k: f"{v:.3f}" for k, v in base.items()})
    torch.manual_seed(0)
    model = nn.Sequential(nn.Embedding(16, 32), nn.Linear(32, 16))  # a bigram model
    result = train_lm(model, lang, steps=150, lr=1e-2, warmup_steps=10, seq_len=16)
    print(f"loss {result.losses[0]:.3f} -> {result.final_loss:.3f}, diverged: {result.diverged}")
# --8<-- [end:demo]
