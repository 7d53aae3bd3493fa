"""One harness for the handbook's language-model experiments.

The parts, each small enough to read in one go:

- ``MarkovLanguage``: a synthetic language, a random sparse Markov chain of
  order 1 or 2 over a small vocabulary, generated from a seed (no download).
  Because the chain is known, so is the best loss any model can reach.
- ``lr_lambda``: a learning-rate schedule, linear warmup then constant, cosine
  or inverse-square-root decay (the inverse-sqrt one is Vaswani et al. 2017,
  arXiv 1706.03762, §5.3).
- ``train_lm``: Adam with betas (0.9, 0.98), as Vaswani et al. §5.3 and
  Xiong et al. 2020 (arXiv 2002.04745, §3.2), or RAdam (Liu et al. 2019,
  arXiv 1908.03265) with the same betas; returns one ``TrainResult``:
  the loss curve, a held-out loss and a divergence flag. It takes any model
  that maps token ids (B, T) to logits (B, T, vocab_size), e.g. the
  handbook's GPT.
- ``first_step_below`` and ``outcome``: how fast a run got somewhere, and
  whether it trained at all.
- ``xavier_init_``: re-initialize a model's linear layers (Glorot & Bengio
  2010), with the query/key/value projection as one matrix or as three.
"""

# --8<-- [start:data]
import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn


def _entropy_nats(p: torch.Tensor) -> torch.Tensor:
    """Shannon entropy in nats over the last dim; 0 log 0 = 0."""
    return -(p * p.clamp_min(1e-30).log()).sum(-1)


def _require_int(name: str, value, low: int, high: int | None = None) -> None:
    """A ValueError naming ``name`` unless ``value`` is an int in [low, high]."""
    ok = isinstance(value, int) and not isinstance(value, bool) and value >= low
    if high is None and not ok:
        raise ValueError(f"{name} must be an int >= {low}, got {value!r}")
    if high is not None and not (ok and value <= high):
        raise ValueError(f"{name} must be an int in [{low}, {high}], got {value!r}")


class MarkovLanguage:
    """A random sparse Markov chain: the next token depends on the last ``order``.

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
        _require_int("vocab_size", vocab_size, 2)
        if order not in (1, 2) or isinstance(order, bool):
            raise ValueError(f"order must be 1 or 2, got {order!r}")
        _require_int("branching", branching, 1, vocab_size)
        _require_int("burn_in", burn_in, 0)
        self.vocab_size, self.order = vocab_size, order
        self.branching, self.burn_in = branching, burn_in
        g = torch.Generator().manual_seed(seed)
        n_contexts = vocab_size**order
        # which tokens may follow each context: `branching` distinct ones, at random
        allowed = torch.rand(n_contexts, vocab_size, generator=g).argsort(-1)
        allowed = allowed[:, :branching]
        # Exp(1) weights, normalized: Dirichlet(1) probabilities
        weights = -torch.rand(n_contexts, branching, generator=g).log()
        probs = (weights / weights.sum(-1, keepdim=True)).double()
        self.probs = torch.zeros(n_contexts, vocab_size, dtype=torch.float64)
        self.probs.scatter_(1, allowed, probs)

    def _context(self, tokens: torch.Tensor) -> torch.Tensor:
        """Index of the context of the last ``order`` tokens; (B, order) -> (B,)."""
        index = torch.zeros(tokens.shape[0], dtype=torch.long, device=tokens.device)
        for i in range(self.order):
            index = index * self.vocab_size + tokens[:, i]
        return index

    def sample(
        self,
        batch_size: int,
        seq_len: int,
        generator: torch.Generator,
    ) -> torch.Tensor:
        """(batch_size, seq_len) token ids, reproducible from ``generator``."""
        _require_int("batch_size", batch_size, 1)
        _require_int("seq_len", seq_len, 1)
        V = self.vocab_size
        ctx = torch.randint(V, (batch_size, self.order), generator=generator)
        out = []
        probs = self.probs.float()
        for t in range(self.burn_in + seq_len):
            row = probs[self._context(ctx)]  # (B, V)
            nxt = torch.multinomial(row, 1, generator=generator)  # (B, 1)
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
        _require_int("seq_len", seq_len, 1)
        V, k = self.vocab_size, self.order
        row_entropy = _entropy_nats(self.probs)  # (V^k,) per context
        pi = torch.full((V**k,), 1.0 / V**k, dtype=torch.float64)  # the uniform start

        def step(pi):  # context distribution one token later
            joint = pi[:, None] * self.probs  # (V^k, V): P(context, next)
            return joint.reshape(V, V ** (k - 1) * V).sum(0)  # drop the oldest token

        for _ in range(self.burn_in + 1):  # the first window token comes last
            pi = step(pi)
        losses, bigram, marginals, prev_pi = [], [], [], pi
        for t in range(seq_len + 1):  # pi: distribution of the context ending at t
            marginals.append(pi.reshape(-1, V).sum(0))
            if t >= 1:  # predicting token t from tokens 0 .. t-1
                # P(x_{t-1}, x_t): read off the context, or build it for order 1
                joint = pi if k == 2 else prev_pi[:, None] * self.probs
                pair = joint.reshape(-1, V * V).sum(0)
                h_pair = _entropy_nats(pair)
                bigram.append(h_pair - _entropy_nats(marginals[-2]))
                if t >= k:
                    losses.append((prev_pi * row_entropy).sum())
                else:  # H(X_0..X_t) - H(X_0..X_{t-1}); older tokens are unseen
                    seen_now = pi.reshape(-1, V ** (t + 1)).sum(0)
                    seen_before = prev_pi.reshape(-1, V**t).sum(0)
                    losses.append(_entropy_nats(seen_now) - _entropy_nats(seen_before))
            prev_pi = pi
            pi = step(pi)
        unigram = _entropy_nats(torch.stack(marginals[1:]).mean(0))
        return {
            "uniform": math.log(V),
            "unigram": unigram.item(),
            "bigram": torch.stack(bigram).mean().item(),
            "optimal": torch.stack(losses).mean().item(),
        }


# --8<-- [end:data]


# --8<-- [start:schedule]
LR_DECAYS = ("constant", "cosine", "inverse_sqrt")


def lr_lambda(
    step: int,
    warmup_steps: int,
    total_steps: int,
    decay: str = "constant",
) -> float:
    """Multiplier of the peak learning rate at optimizer step ``step`` (0-based).

    Linear warmup from 1/(warmup_steps + 1) to 1 over ``warmup_steps`` steps,
    then: constant; cosine to 0 at ``total_steps``; or inverse square root,
    sqrt(warmup_steps / step), the shape of Vaswani et al.'s schedule.
    warmup_steps = 0 means the full learning rate from the first step.
    """
    if warmup_steps < 0 or total_steps < 1:
        got = f"{warmup_steps} and {total_steps}"
        raise ValueError(f"need warmup_steps >= 0 and total_steps >= 1, got {got}")
    if decay not in LR_DECAYS:
        raise ValueError(f"decay must be one of {LR_DECAYS}, got {decay!r}")
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
OPTIMIZERS = ("adam", "radam")


@dataclass
class TrainResult:
    losses: list[float]  # training loss at every step (nan from a blow-up on)
    final_loss: float  # mean of the last `tail` training losses
    eval_loss: float  # loss on held-out sequences after training (nan if diverged)
    diverged: bool  # a non-finite loss, or a final loss above ln(vocab_size)


def _logits_of(model: nn.Module, x: torch.Tensor, vocab_size: int) -> torch.Tensor:
    out = model(x)
    logits = out[0] if isinstance(out, tuple) else out  # GPT returns (logits, loss)
    want, got = (*x.shape, vocab_size), tuple(logits.shape)
    if got != want:
        raise ValueError(f"model must return logits of shape {want}, got {got}")
    return logits


def train_lm(
    model: nn.Module,
    language: MarkovLanguage,
    steps: int,
    lr: float,
    *,
    warmup_steps: int = 0,
    decay: str = "constant",
    batch_size: int = 16,
    seq_len: int = 32,
    betas: tuple[float, float] = (0.9, 0.98),
    seed: int = 0,
    tail: int = 20,
    eval_batch_size: int = 64,
    optimizer: str = "adam",
) -> TrainResult:
    """Train ``model`` on fresh batches of ``language``; one seed, the same batches.

    ``model(idx)`` must return logits of shape (B, T, vocab_size), or a tuple
    whose first item is. No weight decay and no gradient clipping: the
    experiments ask what the placement and the schedule alone do. The learning
    rate is ``lr * lr_lambda(step, warmup_steps, steps, decay)``. ``optimizer`` is
    "adam" or "radam" (``torch.optim.RAdam``: Adam whose adaptive step is switched
    off, then scaled down, while it rests on too few gradients). After training,
    ``eval_batch_size`` more sequences, drawn after the training batches from
    the same generator (so never trained on), give ``eval_loss``. A non-finite
    loss stops the run: the rest of ``losses`` is nan and it counts as diverged.
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be an nn.Module, got {type(model).__name__}")
    if not isinstance(language, MarkovLanguage):
        got = type(language).__name__
        raise TypeError(f"language must be a MarkovLanguage, got {got}")
    for name, value, minimum in (
        ("steps", steps, 1),
        ("warmup_steps", warmup_steps, 0),
        ("batch_size", batch_size, 1),
        ("seq_len", seq_len, 1),
        ("tail", tail, 1),
        ("eval_batch_size", eval_batch_size, 1),
    ):
        _require_int(name, value, minimum)
    if isinstance(lr, bool) or not isinstance(lr, int | float) or not 0 < lr < math.inf:
        raise ValueError(f"lr must be a positive finite number, got {lr!r}")
    if decay not in LR_DECAYS:
        raise ValueError(f"decay must be one of {LR_DECAYS}, got {decay!r}")
    if optimizer not in OPTIMIZERS:
        raise ValueError(f"optimizer must be one of {OPTIMIZERS}, got {optimizer!r}")
    params = list(model.parameters())
    if not params:
        raise ValueError("model has no parameters to train")
    device = params[0].device
    make_opt = torch.optim.RAdam if optimizer == "radam" else torch.optim.Adam
    opt = make_opt(params, lr=lr, betas=betas, foreach=True)  # one op per step
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: lr_lambda(s, warmup_steps, steps, decay)
    )
    # Every batch drawn up front, in one go (faster): with the same seed every model
    # sees the same data in the same order.
    g = torch.Generator().manual_seed(seed)
    data = language.sample(steps * batch_size, seq_len + 1, g)
    data = data.view(steps, batch_size, -1)
    held_out = language.sample(eval_batch_size, seq_len + 1, g).to(device)
    V = language.vocab_size
    losses: list[float] = []
    was_training = model.training
    model.train()
    for tokens in data.to(device):  # (B, T + 1)
        x, y = tokens[:, :-1], tokens[:, 1:]  # predict every next token
        logits = _logits_of(model, x, V)
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
    eval_loss = math.nan
    if math.isfinite(final):
        model.eval()
        with torch.no_grad():
            x, y = held_out[:, :-1], held_out[:, 1:]
            logits = _logits_of(model, x, V)
            eval_loss = F.cross_entropy(logits.flatten(0, 1), y.flatten()).item()
    model.train(was_training)
    # above ln V: worse than knowing nothing (1e-3: float rounding)
    diverged = not math.isfinite(final) or not math.isfinite(eval_loss)
    diverged = diverged or final > math.log(V) + 1e-3
    return TrainResult(losses, final, eval_loss, diverged)


def first_step_below(
    losses: list[float],
    target: float,
    window: int = 10,
) -> int | None:
    """First step at which the mean of the last ``window`` losses is below ``target``.

    A measure of speed: how many steps a run needs to reach a given loss.
    None if it never does.
    """
    _require_int("window", window, 1)
    for end in range(window, len(losses) + 1):
        if sum(losses[end - window : end]) / window < target:  # nan compares False
            return end - 1
    return None


def outcome(
    result: TrainResult,
    baselines: dict[str, float],
    margin: float = 0.1,
    loss: str = "final",
) -> str:
    """A run's verdict: "diverged", "no better than unigram" or "trained".

    A run whose loss is above the unigram loss minus ``margin`` nats has learned
    no more than the token frequencies: it failed, though nothing blew up.
    ``loss`` picks the loss judged: "final" (``result.final_loss``, the mean of
    the last training steps) or "eval" (``result.eval_loss``, held out).
    """
    if loss not in ("final", "eval"):
        raise ValueError(f"loss must be 'final' or 'eval', got {loss!r}")
    if "unigram" not in baselines:
        got = sorted(baselines)
        raise ValueError(f"baselines must have a 'unigram' loss, got {got}")
    if result.diverged:
        return "diverged"
    value = result.final_loss if loss == "final" else result.eval_loss
    if value > baselines["unigram"] - margin:
        return "no better than unigram"
    return "trained"


# --8<-- [end:train]


# --8<-- [start:init]
QKV_INITS = ("fused", "per_projection")


def _xavier_rows_(weight: torch.Tensor, n_blocks: int, gain: float) -> None:
    """Xavier-normal init of each of ``n_blocks`` equal row blocks of ``weight``."""
    for block in weight.chunk(n_blocks, dim=0):  # views: W_q, W_k, W_v
        nn.init.xavier_normal_(block, gain=gain)


def xavier_init_(module: nn.Module, *, qkv: str, gain: float = 1.0) -> nn.Module:
    """Xavier-normal weights, zero biases for every nn.Linear of ``module``, in place.

    Glorot & Bengio 2010: std = gain * sqrt(2 / (fan_in + fan_out)). ``qkv`` says
    how a fused query/key/value projection, a (3C, C) weight (a Linear named
    ``qkv``, as in the handbook's attention, or nn.MultiheadAttention's
    ``in_proj_weight``), is initialized:

    - "per_projection": each (C, C) block W_q, W_k, W_v on its own, std
      gain * sqrt(1 / C). The papers write the three as separate d x d matrices
      (Vaswani et al. 2017, §3.2.2; Xiong et al. 2020, §3.1), so this is the
      setting of Xiong et al.'s analysis at initialization (§3.3).
    - "fused": the (3C, C) weight as one matrix, std gain * sqrt(1 / (2C)),
      smaller by sqrt(2). nn.MultiheadAttention does this
      (``xavier_uniform_(in_proj_weight)`` in its ``_reset_parameters``), and a
      loop of ``xavier_normal_`` over every Linear does it without saying so.

    Separate q, k and v Linear layers get one init each under either option. A
    weight tied to an embedding (GPT's lm_head) is re-initialized with it; other
    embeddings, norms and other parameters are left as they are.
    """
    if not isinstance(module, nn.Module):
        got = type(module).__name__
        raise TypeError(f"xavier_init_ expects an nn.Module, got {got}")
    if qkv not in QKV_INITS:
        raise ValueError(f"qkv must be one of {QKV_INITS}, got {qkv!r}")
    if isinstance(gain, bool) or not isinstance(gain, int | float) or not gain > 0:
        raise ValueError(f"gain must be a positive number, got {gain!r}")
    n_blocks = 3 if qkv == "per_projection" else 1
    with torch.no_grad():
        for name, m in module.named_modules():
            if isinstance(m, nn.MultiheadAttention):
                if m.in_proj_weight is not None:
                    _xavier_rows_(m.in_proj_weight, n_blocks, gain)
                else:  # kdim or vdim != embed_dim: three weights already
                    for w in (m.q_proj_weight, m.k_proj_weight, m.v_proj_weight):
                        nn.init.xavier_normal_(w, gain=gain)
                if m.in_proj_bias is not None:
                    nn.init.zeros_(m.in_proj_bias)
            if not isinstance(m, nn.Linear):
                continue
            if name.split(".")[-1] == "qkv" and n_blocks == 3:
                if m.out_features != 3 * m.in_features:
                    raise ValueError(
                        f"qkv='per_projection' needs {name!r} to be a (3C, C) "
                        f"weight, got {tuple(m.weight.shape)}"
                    )
                _xavier_rows_(m.weight, n_blocks, gain)
            else:
                nn.init.xavier_normal_(m.weight, gain=gain)
            if m.bias is not None:
                nn.init.zeros_(m.bias)
    return module


# --8<-- [end:init]


# --8<-- [start:demo]
if __name__ == "__main__":
    lang = MarkovLanguage(vocab_size=16, order=1, branching=3, seed=0)
    base = lang.baselines(seq_len=16)
    print("baselines:", {k: f"{v:.3f}" for k, v in base.items()})
    torch.manual_seed(0)
    model = nn.Sequential(nn.Embedding(16, 32), nn.Linear(32, 16))  # a bigram model
    result = train_lm(model, lang, steps=150, lr=1e-2, warmup_steps=10, seq_len=16)
    print(
        f"loss {result.losses[0]:.3f} -> {result.final_loss:.3f} "
        f"(held out {result.eval_loss:.3f}): {outcome(result, base)}"
    )
    attn = nn.MultiheadAttention(64, 4)
    for qkv in QKV_INITS:
        xavier_init_(attn, qkv=qkv)
        stds = [f"{w.std():.3f}" for w in attn.in_proj_weight.detach().chunk(3)]
        print(f"qkv={qkv!r}: std of W_q, W_k, W_v = {', '.join(stds)}")
# --8<-- [end:demo]
