"""snippets/warmup_lm.py: the synthetic language, the schedule and the training loop."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from snippets.warmup_lm import (
    MarkovLanguage,
    TrainResult,
    first_step_below,
    lr_lambda,
    outcome,
    train_lm,
    xavier_init_,
)

# --- The synthetic language -------------------------------------------------------


@pytest.mark.parametrize("order", [1, 2])
def test_the_chain_is_sparse_and_normalized(order):
    lang = MarkovLanguage(vocab_size=8, order=order, branching=3, seed=0)
    assert lang.probs.shape == (8**order, 8)
    assert ((lang.probs > 0).sum(-1) == 3).all()  # exactly `branching` next tokens per context
    torch.testing.assert_close(lang.probs.sum(-1), torch.ones(8**order, dtype=torch.float64))


def test_the_language_is_deterministic():
    a, b = MarkovLanguage(seed=3), MarkovLanguage(seed=3)
    assert torch.equal(a.probs, b.probs)
    assert not torch.equal(a.probs, MarkovLanguage(seed=4).probs)
    x = a.sample(4, 20, torch.Generator().manual_seed(7))
    y = b.sample(4, 20, torch.Generator().manual_seed(7))
    assert x.shape == (4, 20) and x.dtype == torch.long
    assert torch.equal(x, y)
    assert not torch.equal(x, a.sample(4, 20, torch.Generator().manual_seed(8)))


@pytest.mark.parametrize("order", [1, 2])
def test_samples_only_use_allowed_transitions(order):
    lang = MarkovLanguage(vocab_size=6, order=order, branching=2, seed=1)
    x = lang.sample(64, 30, torch.Generator().manual_seed(0))
    ctx = x[:, 0] if order == 1 else x[:, 0] * 6 + x[:, 1]
    for t in range(order, 30):
        assert (lang.probs[ctx, x[:, t]] > 0).all()
        ctx = x[:, t] if order == 1 else x[:, t - 1] * 6 + x[:, t]


@pytest.mark.parametrize("order", [1, 2])
def test_baselines_match_the_empirical_losses(order):
    V, T = 5, 6
    lang = MarkovLanguage(vocab_size=V, order=order, branching=2, burn_in=3, seed=2)
    base = lang.baselines(T)
    assert base["uniform"] == pytest.approx(math.log(V))
    assert base["uniform"] >= base["unigram"] >= base["bigram"] >= base["optimal"] > 0
    x = lang.sample(100_000, T + 1, torch.Generator().manual_seed(0))
    freq = torch.bincount(x[:, 1:].flatten(), minlength=V).double() / (x.shape[0] * T)
    assert -(freq * freq.log()).sum().item() == pytest.approx(base["unigram"], abs=5e-3)
    # the true chain's log-loss on the predictions that see a full context
    nll = []
    for t in range(order, T + 1):
        ctx = x[:, t - 1] if order == 1 else x[:, t - 2] * V + x[:, t - 1]
        nll.append(-lang.probs[ctx, x[:, t]].log().mean().item())
    if order == 1:
        assert base["optimal"] == pytest.approx(sum(nll) / T, abs=1e-2)
        assert base["bigram"] == pytest.approx(base["optimal"], abs=1e-6)
    else:  # the first prediction sees one token: H(X_1 | X_0) from pair counts
        pair = torch.bincount(x[:, 0] * V + x[:, 1], minlength=V * V).double().view(V, V)
        pair /= pair.sum()
        h1 = -(pair * pair.clamp_min(1e-30).log()).sum() + (pair.sum(1) * pair.sum(1).log()).sum()
        assert base["optimal"] == pytest.approx((h1.item() + sum(nll)) / T, abs=1e-2)
        assert base["bigram"] > base["optimal"] + 0.1  # two tokens back carry information


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (dict(vocab_size=1), "vocab_size must be an int >= 2, got 1"),
        (dict(order=3), "order must be 1 or 2, got 3"),
        (dict(vocab_size=4, branching=5), r"branching must be an int in \[1, 4\], got 5"),
        (dict(burn_in=-1), "burn_in must be an int >= 0, got -1"),
    ],
)
def test_bad_language_arguments_raise(kwargs, match):
    with pytest.raises(ValueError, match=match):
        MarkovLanguage(**kwargs)


def test_bad_sample_and_baseline_arguments_raise():
    lang = MarkovLanguage(vocab_size=4, branching=2)
    with pytest.raises(ValueError, match="batch_size and seq_len must be >= 1, got 0 and 5"):
        lang.sample(0, 5, torch.Generator())
    with pytest.raises(ValueError, match="seq_len must be >= 1, got 0"):
        lang.baselines(0)


# --- The schedule ------------------------------------------------------------------


def test_linear_warmup_then_constant():
    values = [lr_lambda(s, warmup_steps=4, total_steps=20) for s in range(8)]
    assert values == pytest.approx([0.2, 0.4, 0.6, 0.8, 1.0, 1.0, 1.0, 1.0])
    assert lr_lambda(0, warmup_steps=0, total_steps=20) == 1.0  # no warmup: full rate at once


def test_cosine_and_inverse_sqrt_decay():
    assert lr_lambda(4, 4, 14, "cosine") == pytest.approx(1.0)
    assert lr_lambda(9, 4, 14, "cosine") == pytest.approx(0.5)
    assert lr_lambda(14, 4, 14, "cosine") == pytest.approx(0.0)
    assert lr_lambda(4, 4, 100, "inverse_sqrt") == pytest.approx(1.0)
    assert lr_lambda(16, 4, 100, "inverse_sqrt") == pytest.approx(0.5)  # sqrt(4 / 16)


def test_the_schedule_drives_the_optimizer():
    p = nn.Parameter(torch.zeros(1))
    opt = torch.optim.Adam([p], lr=0.1)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: lr_lambda(s, 3, 10))
    seen = []
    for _ in range(5):
        seen.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    assert seen == pytest.approx([0.025, 0.05, 0.075, 0.1, 0.1])


@pytest.mark.parametrize(
    ("args", "match"),
    [
        ((0, -1, 10), "need warmup_steps >= 0 and total_steps >= 1, got -1 and 10"),
        ((0, 2, 0), "need warmup_steps >= 0 and total_steps >= 1, got 2 and 0"),
        ((0, 2, 10, "linear"), "decay must be one of .*'cosine'.*, got 'linear'"),
    ],
)
def test_bad_schedule_arguments_raise(args, match):
    with pytest.raises(ValueError, match=match):
        lr_lambda(*args)


# --- The training loop ------------------------------------------------------------


class Bigram(nn.Module):
    """The smallest language model: logits from the current token alone."""

    def __init__(self, vocab_size: int):
        super().__init__()
        self.table = nn.Embedding(vocab_size, vocab_size)

    def forward(self, idx):
        return self.table(idx)  # (B, T, V)


def test_training_reduces_the_loss(device):
    lang = MarkovLanguage(vocab_size=8, order=1, branching=2, seed=0)
    torch.manual_seed(0)
    model = Bigram(8).to(device)
    result = train_lm(model, lang, steps=60, lr=0.1, warmup_steps=5, seq_len=8)
    base = lang.baselines(8)
    assert isinstance(result, TrainResult) and len(result.losses) == 60
    assert not result.diverged
    assert result.losses[0] > base["unigram"]  # starts near ln V
    assert result.final_loss < base["bigram"] + 0.15  # ends near the best possible
    assert outcome(result, base) == "trained"


def test_runs_are_reproducible():
    lang = MarkovLanguage(vocab_size=8, order=1, branching=2, seed=0)
    runs = []
    for _ in range(2):
        torch.manual_seed(0)
        runs.append(train_lm(Bigram(8), lang, steps=10, lr=0.05, seq_len=8).losses)
    assert runs[0] == runs[1]


class Constant(nn.Module):
    """Logits that ignore the input: `value` everywhere, or a confident wrong answer."""

    def __init__(self, vocab_size: int, value: float, wrong: bool = False):
        super().__init__()
        self.vocab_size, self.value, self.wrong = vocab_size, value, wrong
        self.dummy = nn.Parameter(torch.zeros(()))  # something for Adam to hold

    def forward(self, idx):
        logits = torch.zeros(*idx.shape, self.vocab_size, device=idx.device) + self.dummy
        if self.wrong:  # all mass on token 0, which the chain below never emits
            return logits.index_fill(-1, torch.tensor([0], device=idx.device), self.value)
        return logits + self.value


def _never_emits_zero() -> MarkovLanguage:
    lang = MarkovLanguage(vocab_size=4, order=1, branching=2, seed=0)
    lang.probs[:, 0] = 0.0
    lang.probs[:, 1:] = 1.0 / 3
    return lang


def test_a_nan_loss_is_flagged_and_stops_the_run(device):
    lang = MarkovLanguage(vocab_size=4, order=1, branching=2)
    result = train_lm(Constant(4, math.nan).to(device), lang, steps=7, lr=1e-3, seq_len=4)
    assert result.diverged and len(result.losses) == 7
    assert all(math.isnan(v) for v in result.losses)
    assert outcome(result, lang.baselines(4)) == "diverged"


def test_a_loss_above_uniform_is_flagged(device):
    lang = _never_emits_zero()
    result = train_lm(Constant(4, 30.0, wrong=True).to(device), lang, steps=3, lr=1e-3)
    assert result.final_loss > math.log(4) and result.diverged
    uniform = train_lm(Constant(4, 0.0).to(device), lang, steps=3, lr=1e-3)
    assert uniform.final_loss == pytest.approx(math.log(4)) and not uniform.diverged
    assert outcome(uniform, lang.baselines(32)) == "no better than unigram"


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (dict(steps=0), "steps and tail must be >= 1, got 0 and 20"),
        (dict(lr=0.0), "lr must be > 0, got 0.0"),
        (dict(lr=-1e-3), "lr must be > 0, got -0.001"),
    ],
)
def test_bad_training_arguments_raise(kwargs, match):
    args = dict(steps=5, lr=1e-3) | kwargs
    with pytest.raises(ValueError, match=match):
        train_lm(Bigram(4), MarkovLanguage(vocab_size=4, branching=2), **args)


def test_wrong_logits_shape_raises():
    lang = MarkovLanguage(vocab_size=4, branching=2)
    with pytest.raises(ValueError, match=r"logits of shape \(16, 8, 4\), got \(16, 8, 5\)"):
        train_lm(Bigram(5), lang, steps=1, lr=1e-3, seq_len=8)


# --- Xavier re-initialization -------------------------------------------------------


def test_xavier_init_resets_every_linear_layer():
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Embedding(10, 400), nn.Linear(400, 600), nn.ReLU(), nn.Linear(600, 400)
    )
    for m in model:
        if isinstance(m, nn.Linear):
            nn.init.constant_(m.bias, 3.0)
    xavier_init_(model)
    for m in (model[1], model[3]):
        std = math.sqrt(2.0 / (m.in_features + m.out_features))  # Glorot & Bengio 2010
        assert m.weight.std().item() == pytest.approx(std, rel=0.02)
        assert torch.equal(m.bias, torch.zeros_like(m.bias))
    assert model[0].weight.std().item() == pytest.approx(1.0, rel=0.02)  # embeddings untouched


# --- Small helpers ------------------------------------------------------------------


def test_first_step_below():
    losses = [3.0, 2.0, 1.0, 1.0, 0.5]
    assert first_step_below(losses, 1.5, window=1) == 2
    assert first_step_below(losses, 1.5, window=2) == 3  # mean(2, 1) = 1.5 is not below
    assert first_step_below(losses, 1.2, window=3) == 4  # mean(1, 1, 0.5) < 1.2, at step 4
    assert first_step_below(losses, 0.1) is None  # never
    assert first_step_below([math.nan] * 5, 1.0, window=2) is None
    with pytest.raises(ValueError, match="window must be >= 1, got 0"):
        first_step_below(losses, 1.0, window=0)


def test_outcome_words():
    base = {"uniform": 2.0, "unigram": 1.5, "bigram": 1.0, "optimal": 0.5}
    assert outcome(TrainResult([1.0], 1.0, False), base) == "trained"
    assert outcome(TrainResult([1.45], 1.45, False), base) == "no better than unigram"
    assert outcome(TrainResult([1.45], 1.45, False), base, margin=0.01) == "trained"
    assert outcome(TrainResult([3.0], 3.0, True), base) == "diverged"
