"""snippets/lm_experiment.py: the language, the schedule, the trainer, the verdicts, the init."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from snippets.lm_experiment import (
    LR_DECAYS,
    OPTIMIZERS,
    QKV_INITS,
    MarkovLanguage,
    TrainResult,
    first_step_below,
    lr_lambda,
    outcome,
    train_lm,
    xavier_init_,
)
from snippets.resnorm import GPT, GPTConfig, Stack

pytestmark = pytest.mark.usefixtures("one_thread")


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


def test_a_uniform_chain_has_nothing_to_learn():
    lang = MarkovLanguage(vocab_size=6, order=1, branching=6, seed=0)
    lang.probs.fill_(1 / 6)  # every token may follow every token, equally likely
    base = lang.baselines(5)
    assert base == pytest.approx(dict.fromkeys(base, math.log(6)))


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (dict(vocab_size=1), "vocab_size must be an int >= 2, got 1"),
        (dict(vocab_size=16.0), "vocab_size must be an int >= 2, got 16.0"),
        (dict(order=3), "order must be 1 or 2, got 3"),
        (dict(order=True), "order must be 1 or 2, got True"),
        (dict(vocab_size=4, branching=5), r"branching must be an int in \[1, 4\], got 5"),
        (dict(branching=0), r"branching must be an int in \[1, 16\], got 0"),
        (dict(burn_in=-1), "burn_in must be an int >= 0, got -1"),
    ],
)
def test_bad_language_arguments_raise(kwargs, match):
    with pytest.raises(ValueError, match=match):
        MarkovLanguage(**kwargs)


def test_bad_sample_and_baseline_arguments_raise():
    lang = MarkovLanguage(vocab_size=4, branching=2)
    with pytest.raises(ValueError, match="batch_size must be an int >= 1, got 0"):
        lang.sample(0, 5, torch.Generator())
    with pytest.raises(ValueError, match=r"seq_len must be an int >= 1, got 2\.5"):
        lang.sample(2, 2.5, torch.Generator())
    with pytest.raises(ValueError, match="seq_len must be an int >= 1, got 0"):
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
    assert set(LR_DECAYS) == {"constant", "cosine", "inverse_sqrt"}


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


# --- The trainer ------------------------------------------------------------------


class Bigram(nn.Module):
    """The smallest language model: logits from the current token alone."""

    def __init__(self, vocab_size: int):
        super().__init__()
        self.table = nn.Embedding(vocab_size, vocab_size)

    def forward(self, idx):
        return self.table(idx)  # (B, T, V)


def small_gpt(position="pre", n_layer=2, seed=0):
    torch.manual_seed(seed)
    config = GPTConfig(
        vocab_size=8, block_size=8, n_layer=n_layer, n_head=2, n_embd=16, norm_position=position
    )
    return GPT(config)


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
    assert result.eval_loss < base["bigram"] + 0.15  # and so does the held-out loss
    assert outcome(result, base) == outcome(result, base, loss="eval") == "trained"


def test_a_gpt_learns_the_chain(device):
    """GPT returns (logits, loss); the trainer takes the logits."""
    lang = MarkovLanguage(vocab_size=8, order=1, branching=2, seed=0)
    result = train_lm(small_gpt().to(device), lang, steps=150, lr=1e-2, seq_len=8)
    base = lang.baselines(8)
    assert not result.diverged
    assert result.losses[0] > base["unigram"] > result.final_loss + 0.5
    assert result.eval_loss < base["unigram"] - 0.3  # it used the previous token


def test_runs_are_reproducible():
    lang = MarkovLanguage(vocab_size=8, order=1, branching=2, seed=0)
    a = train_lm(small_gpt("post"), lang, steps=5, lr=1e-3, seq_len=8)
    b = train_lm(small_gpt("post"), lang, steps=5, lr=1e-3, seq_len=8)
    assert a == b
    c = train_lm(small_gpt("post"), lang, steps=5, lr=1e-3, seq_len=8, seed=1)
    assert c.losses != a.losses  # another seed, other batches


class Recorder(nn.Module):
    """Uniform logits; remembers every input it was given, and in which mode."""

    def __init__(self, vocab_size: int):
        super().__init__()
        self.vocab_size, self.seen = vocab_size, []
        self.dummy = nn.Parameter(torch.zeros(()))

    def forward(self, idx):
        self.seen.append((self.training, idx.clone()))
        return torch.zeros(*idx.shape, self.vocab_size) + self.dummy


def test_batches_and_held_out_sequences_come_from_one_generator():
    lang = MarkovLanguage(vocab_size=6, order=2, branching=2, seed=0)
    model = Recorder(6).eval()
    result = train_lm(
        model, lang, steps=3, lr=1e-3, batch_size=4, seq_len=5, seed=7, eval_batch_size=10
    )
    g = torch.Generator().manual_seed(7)
    batches = lang.sample(3 * 4, 6, g).view(3, 4, 6)
    held_out = lang.sample(10, 6, g)
    assert [mode for mode, _ in model.seen] == [True, True, True, False]
    for (_, idx), batch in zip(model.seen[:3], batches, strict=True):
        assert torch.equal(idx, batch[:, :-1])  # the model reads tokens 0 .. T-1
    assert torch.equal(model.seen[3][1], held_out[:, :-1])
    assert not model.training  # the mode it came in with
    assert result.eval_loss == pytest.approx(math.log(6))  # uniform logits


@pytest.mark.parametrize(("warmup_steps", "factor"), [(0, 1.0), (4, 0.2)])
def test_the_trainer_follows_the_schedule(warmup_steps, factor):
    """Adam's first step moves every weight with a gradient by about lr * lr_lambda(0)."""
    lang = MarkovLanguage(vocab_size=4, order=1, branching=2, seed=0)
    torch.manual_seed(0)
    model = Bigram(4)
    before = model.table.weight.detach().clone()
    train_lm(model, lang, steps=1, lr=0.1, warmup_steps=warmup_steps, seq_len=8)
    moved = (model.table.weight.detach() - before).abs()
    assert moved.max().item() == pytest.approx(0.1 * factor, rel=1e-3)


def test_radams_first_step_is_not_adapted():
    """RAdam's first step is lr times the gradient (Liu et al., Algorithm 2), Adam's lr * sign."""
    assert OPTIMIZERS == ("adam", "radam")
    lang = MarkovLanguage(vocab_size=4, order=1, branching=2, seed=0)
    torch.manual_seed(0)
    model = Bigram(4)
    before = model.table.weight.detach().clone()
    # the trainer's one batch: 16 sequences of 9 tokens from the seed's generator
    tokens = lang.sample(16, 9, torch.Generator().manual_seed(0))
    logits = model(tokens[:, :-1])
    loss = nn.functional.cross_entropy(logits.flatten(0, 1), tokens[:, 1:].flatten())
    (grad,) = torch.autograd.grad(loss, model.table.weight)
    train_lm(model, lang, steps=1, lr=0.1, seq_len=8, optimizer="radam")
    moved = model.table.weight.detach() - before
    torch.testing.assert_close(moved, -0.1 * grad)
    assert moved.abs().max().item() < 0.1 / 2  # far below Adam's first step, lr


class NanAfter(nn.Module):
    """Uniform logits until a given call, nan after."""

    def __init__(self, vocab_size: int, step: int):
        super().__init__()
        self.vocab_size, self.step, self.calls = vocab_size, step, 0
        self.w = nn.Parameter(torch.zeros(()))

    def forward(self, idx):
        self.calls += 1
        bad = math.nan if self.calls > self.step else 0.0
        return torch.zeros(*idx.shape, self.vocab_size) + self.w + bad


def test_a_nan_loss_is_flagged_and_stops_the_run():
    lang = MarkovLanguage(vocab_size=4, order=1, branching=2)
    model = NanAfter(4, step=3)
    result = train_lm(model, lang, steps=10, lr=1e-3, seq_len=4)
    assert result.diverged and len(result.losses) == 10
    assert result.losses[:3] == pytest.approx([math.log(4)] * 3)
    assert all(math.isnan(v) for v in result.losses[3:])
    assert model.calls == 4  # no step after the blow-up, no evaluation either
    assert math.isnan(result.final_loss) and math.isnan(result.eval_loss)
    assert outcome(result, lang.baselines(4)) == "diverged"


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


def test_a_loss_above_uniform_is_flagged(device):
    lang = _never_emits_zero()
    result = train_lm(Constant(4, 30.0, wrong=True).to(device), lang, steps=3, lr=1e-3)
    assert result.final_loss > math.log(4) and result.diverged
    uniform = train_lm(Constant(4, 0.0).to(device), lang, steps=3, lr=1e-3)
    assert uniform.final_loss == pytest.approx(math.log(4)) and not uniform.diverged
    assert uniform.eval_loss == pytest.approx(math.log(4))
    assert outcome(uniform, lang.baselines(32)) == "no better than unigram"


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (dict(steps=0), "steps must be an int >= 1, got 0"),
        (dict(steps=2.5), "steps must be an int >= 1, got 2.5"),
        (dict(steps=True), "steps must be an int >= 1, got True"),
        (dict(lr=0.0), "lr must be a positive finite number, got 0.0"),
        (dict(lr=-1e-3), "lr must be a positive finite number, got -0.001"),
        (dict(lr=math.inf), "lr must be a positive finite number, got inf"),
        (dict(lr=math.nan), "lr must be a positive finite number, got nan"),
        (dict(lr="1e-3"), "lr must be a positive finite number, got '1e-3'"),
        (dict(warmup_steps=-1), "warmup_steps must be an int >= 0, got -1"),
        (dict(batch_size=0), "batch_size must be an int >= 1, got 0"),
        (dict(seq_len=0), "seq_len must be an int >= 1, got 0"),
        (dict(tail=0), "tail must be an int >= 1, got 0"),
        (dict(eval_batch_size=0), "eval_batch_size must be an int >= 1, got 0"),
        (dict(decay="linear"), "decay must be one of .*'inverse_sqrt'.*, got 'linear'"),
        (dict(optimizer="sgd"), "optimizer must be one of .*'radam'.*, got 'sgd'"),
    ],
)
def test_bad_training_arguments_raise(kwargs, match):
    args = dict(steps=5, lr=1e-3) | kwargs
    with pytest.raises(ValueError, match=match):
        train_lm(Bigram(4), MarkovLanguage(vocab_size=4, branching=2), **args)


def test_the_trainer_names_a_wrong_model_or_language():
    lang = MarkovLanguage(vocab_size=4, branching=2)
    with pytest.raises(TypeError, match=r"model must be an nn\.Module, got function"):
        train_lm(lambda idx: idx, lang, steps=1, lr=1e-3)
    with pytest.raises(TypeError, match="language must be a MarkovLanguage, got str"):
        train_lm(Bigram(4), "abc", steps=1, lr=1e-3)
    with pytest.raises(ValueError, match="model has no parameters"):
        train_lm(nn.Identity(), lang, steps=1, lr=1e-3)


def test_wrong_logits_shape_raises():
    lang = MarkovLanguage(vocab_size=4, branching=2)
    with pytest.raises(ValueError, match=r"logits of shape \(16, 8, 4\), got \(16, 8, 5\)"):
        train_lm(Bigram(5), lang, steps=1, lr=1e-3, seq_len=8)


# --- Reading a run ----------------------------------------------------------------


def test_first_step_below():
    losses = [3.0, 2.0, 1.0, 1.0, 0.5]
    assert first_step_below(losses, 1.5, window=1) == 2
    assert first_step_below(losses, 1.5, window=2) == 3  # mean(2, 1) = 1.5 is not below
    assert first_step_below(losses, 1.2, window=3) == 4  # mean(1, 1, 0.5) < 1.2, at step 4
    assert first_step_below(losses, 0.1) is None  # never
    assert first_step_below([math.nan] * 5, 1.0, window=2) is None
    with pytest.raises(ValueError, match="window must be an int >= 1, got 0"):
        first_step_below(losses, 1.0, window=0)


def test_outcome_words():
    base = {"uniform": 2.0, "unigram": 1.5, "bigram": 1.0, "optimal": 0.5}
    assert outcome(TrainResult([1.0], 1.0, 1.0, False), base) == "trained"
    assert outcome(TrainResult([1.45], 1.45, 1.45, False), base) == "no better than unigram"
    assert outcome(TrainResult([1.45], 1.45, 1.45, False), base, margin=0.01) == "trained"
    assert outcome(TrainResult([3.0], 3.0, 3.0, True), base) == "diverged"


def test_outcome_judges_the_loss_it_is_told_to():
    base = {"unigram": 1.5}
    late_drop = TrainResult([1.5, 1.0], final_loss=1.45, eval_loss=1.0, diverged=False)
    assert outcome(late_drop, base) == "no better than unigram"
    assert outcome(late_drop, base, loss="eval") == "trained"
    with pytest.raises(ValueError, match="loss must be 'final' or 'eval', got 'train'"):
        outcome(late_drop, base, loss="train")
    with pytest.raises(ValueError, match=r"a 'unigram' loss, got \['optimal'\]"):
        outcome(late_drop, {"optimal": 0.5})


# --- Xavier re-initialization -------------------------------------------------------

C = 256  # wide enough for a tight std estimate


def xavier_std(fan_in: int, fan_out: int, gain: float = 1.0) -> float:
    return gain * math.sqrt(2.0 / (fan_in + fan_out))  # Glorot & Bengio 2010


def filled_stack(value: float = 3.0) -> Stack:
    torch.manual_seed(0)
    stack = Stack(2, C, 4, 4 * C, norm_position="pre")
    with torch.no_grad():
        for p in stack.parameters():
            p.fill_(value)  # so anything left untouched shows
    return stack


@pytest.mark.parametrize(
    ("qkv", "block_std"),
    [("per_projection", xavier_std(C, C)), ("fused", xavier_std(C, 3 * C))],
)
def test_xavier_init_of_a_stack(qkv, block_std):
    stack = filled_stack()
    assert xavier_init_(stack, qkv=qkv) is stack
    for layer in stack.layers:
        for block in layer.attn.sublayer.qkv.weight.detach().split(C):  # W_q, W_k, W_v
            assert block.std().item() == pytest.approx(block_std, rel=0.02)
        out = layer.attn.sublayer.proj.weight
        assert out.std().item() == pytest.approx(xavier_std(C, C), rel=0.02)
        fc, proj = layer.mlp.sublayer.fc.weight, layer.mlp.sublayer.proj.weight
        assert fc.std().item() == pytest.approx(xavier_std(C, 4 * C), rel=0.02)
        assert proj.std().item() == pytest.approx(xavier_std(4 * C, C), rel=0.02)
        assert layer.attn.sublayer.qkv.bias.abs().max() == 0
        assert layer.mlp.sublayer.proj.bias.abs().max() == 0
        assert torch.equal(layer.attn.norm_in.weight, torch.full((C,), 3.0))  # norms alone


def test_the_two_qkv_options_differ_by_sqrt_2_and_only_in_qkv():
    stds = {}
    for qkv in QKV_INITS:
        stack = xavier_init_(filled_stack(), qkv=qkv)
        layer = stack.layers[0]
        stds[qkv] = (
            layer.attn.sublayer.qkv.weight.std().item(),
            layer.mlp.sublayer.fc.weight.std().item(),
        )
    ratio = stds["per_projection"][0] / stds["fused"][0]
    assert ratio == pytest.approx(math.sqrt(2), rel=0.03)
    assert stds["per_projection"][1] == pytest.approx(stds["fused"][1], rel=0.02)


@pytest.mark.parametrize(
    ("qkv", "block_std"),
    [("per_projection", xavier_std(C, C)), ("fused", xavier_std(C, 3 * C))],
)
def test_xavier_init_of_pytorch_attention(qkv, block_std):
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(C, 4, 4 * C, batch_first=True)
    nn.init.constant_(layer.self_attn.in_proj_bias, 3.0)
    xavier_init_(layer, qkv=qkv)
    for block in layer.self_attn.in_proj_weight.detach().split(C):
        assert block.std().item() == pytest.approx(block_std, rel=0.02)
    assert layer.self_attn.in_proj_bias.abs().max() == 0
    out_proj = layer.self_attn.out_proj.weight  # an nn.Linear subclass
    assert out_proj.std().item() == pytest.approx(xavier_std(C, C), rel=0.02)


@pytest.mark.parametrize("qkv", QKV_INITS)
def test_separate_projections_are_three_matrices_under_either_option(qkv):
    torch.manual_seed(0)
    attn = nn.MultiheadAttention(C, 4, kdim=C // 2, vdim=C // 2)  # no fused weight
    xavier_init_(attn, qkv=qkv)
    assert attn.q_proj_weight.std().item() == pytest.approx(xavier_std(C, C), rel=0.02)
    for w in (attn.k_proj_weight, attn.v_proj_weight):
        assert w.std().item() == pytest.approx(xavier_std(C // 2, C), rel=0.02)
    separate = nn.ModuleDict({name: nn.Linear(C, C) for name in ("q", "k", "v")})
    xavier_init_(separate, qkv=qkv)
    for m in separate.values():
        assert m.weight.std().item() == pytest.approx(xavier_std(C, C), rel=0.02)


def test_xavier_init_of_a_gpt_reaches_the_tied_embedding():
    torch.manual_seed(0)
    config = GPTConfig(vocab_size=512, block_size=64, n_layer=1, n_head=4, n_embd=C)
    model = GPT(config)
    wpe = model.wpe.weight.detach().clone()
    xavier_init_(model, qkv="per_projection")
    assert model.lm_head.weight is model.wte.weight  # still tied
    assert model.wte.weight.std().item() == pytest.approx(xavier_std(C, 512), rel=0.02)
    assert torch.equal(model.wpe.weight, wpe)  # other embeddings are left alone


def test_xavier_gain_scales_the_std_and_the_init_is_seeded():
    a, b = filled_stack(), filled_stack()
    torch.manual_seed(1)
    xavier_init_(a, qkv="per_projection", gain=0.5)
    torch.manual_seed(1)
    xavier_init_(b, qkv="per_projection", gain=0.5)
    for p, q in zip(a.parameters(), b.parameters(), strict=True):
        assert torch.equal(p, q)
    fc = a.layers[0].mlp.sublayer.fc.weight
    assert fc.std().item() == pytest.approx(xavier_std(C, 4 * C, gain=0.5), rel=0.02)


def test_xavier_init_names_what_it_expected():
    with pytest.raises(TypeError, match=r"expects an nn\.Module, got Tensor"):
        xavier_init_(torch.zeros(3, 3), qkv="fused")
    with pytest.raises(TypeError, match="qkv"):
        xavier_init_(nn.Linear(2, 2))  # the choice is never implicit
    with pytest.raises(ValueError, match=r"qkv must be one of .*'per_projection'.*, got 'split'"):
        xavier_init_(nn.Linear(2, 2), qkv="split")
    for gain in (0.0, -1.0, True, "1"):
        with pytest.raises(ValueError, match=f"gain must be a positive number, got {gain!r}"):
            xavier_init_(nn.Linear(2, 2), qkv="fused", gain=gain)
    odd = nn.ModuleDict({"qkv": nn.Linear(4, 8)})  # not (3C, C)
    with pytest.raises(ValueError, match=r"'qkv' to be a \(3C, C\) weight, got \(8, 4\)"):
        xavier_init_(odd, qkv="per_projection")
    assert xavier_init_(odd, qkv="fused") is odd  # one matrix: any shape will do
