"""snippets/depth_probe.py: stream norms, Lemma 2's band, the Markov task, the training loop."""

from __future__ import annotations

import itertools
import math

import pytest
import torch
from torch import nn

from snippets.depth_probe import MarkovTask, TrainResult, lemma2_band, stream_sq_norms, train_lm
from snippets.transformer import GPT, GPTConfig, Stack, from_torch_encoder_layer

D, H, FF = 16, 4, 64


pytestmark = pytest.mark.usefixtures("one_thread")


# --- stream_sq_norms -------------------------------------------------------------------


@pytest.mark.parametrize("norm_first", [False, True])
def test_stream_norms_match_pytorch_encoder_layers(norm_first, device):
    """The handbook's Stack and nn.TransformerEncoderLayer with the same weights: same stream."""
    torch.manual_seed(0)
    ref = [
        nn.TransformerEncoderLayer(D, H, FF, dropout=0.0, batch_first=True, norm_first=norm_first)
        for _ in range(3)
    ]
    stack = Stack(3, D, H, FF, norm_position="pre" if norm_first else "post", final_norm=False)
    stack.layers = nn.ModuleList(from_torch_encoder_layer(layer) for layer in ref)
    stack.to(device)
    x = 2 * torch.randn(4, 5, D, device=device)
    expected, h = [x.pow(2).sum(-1).mean().item() / D], x
    with torch.no_grad():
        for layer in ref:
            h = layer.to(device)(h)
            expected.append(h.pow(2).sum(-1).mean().item() / D)
    assert stream_sq_norms(stack, x) == pytest.approx(expected, rel=1e-5)


def test_post_ln_stream_stays_at_the_norms_scale():
    torch.manual_seed(0)
    stack = Stack(6, D, H, FF, norm_position="post")
    norms = stream_sq_norms(stack, 5 * torch.randn(2, 3, D))
    assert norms[0] > 10  # the input is large ...
    assert norms[1:] == pytest.approx([1.0] * 6, abs=1e-3)  # ... every layer's output is not


def test_rezero_stream_is_the_input_at_initialization():
    torch.manual_seed(0)
    norms = stream_sq_norms(Stack(4, D, H, FF, norm_position="rezero"), torch.randn(2, 3, D))
    assert norms == pytest.approx([norms[0]] * 5)


def test_pre_ln_stream_grows_and_ignores_the_final_norm():
    torch.manual_seed(0)
    stack = Stack(8, D, H, FF, norm_position="pre")  # with its final norm
    x = torch.randn(4, 8, D)
    norms = stream_sq_norms(stack, x)
    assert all(b > a for a, b in itertools.pairwise(norms))
    assert norms[-1] > 1.5 * norms[0]
    with torch.no_grad():  # the stack's own output is normalized; the probe looks before that
        assert stack(x).pow(2).mean().item() == pytest.approx(1.0, abs=1e-3)


def test_stream_norms_errors():
    stack = Stack(1, D, H, FF)
    with pytest.raises(ValueError, match=r"\(batch, seq_len, d_model\), got \(3, 16\)"):
        stream_sq_norms(stack, torch.randn(3, D))
    with pytest.raises(TypeError, match=r"floating-point tensor, got torch\.int64"):
        stream_sq_norms(stack, torch.ones(1, 2, D, dtype=torch.long))
    with pytest.raises(TypeError, match=r"a \.layers list, got Linear"):
        stream_sq_norms(nn.Linear(D, D), torch.randn(1, 2, D))


def test_lemma2_band():
    lower, upper = lemma2_band(4)
    assert lower == [1.0, 1.5, 2.0, 2.5, 3.0]
    assert upper == [1.0, 2.5, 4.0, 5.5, 7.0]
    for bad in (-1, 2.0, True):
        with pytest.raises(ValueError, match="non-negative int"):
            lemma2_band(bad)


# --- MarkovTask ----------------------------------------------------------------------


def test_markov_samples_follow_the_chain():
    task = MarkovTask(vocab_size=16, n_next=2, seed=0)
    assert task.successors.shape == (16, 2)
    assert all(len(set(row.tolist())) == 2 for row in task.successors)  # distinct successors
    idx, targets = task.sample(32, 10, torch.Generator().manual_seed(0))
    assert idx.shape == targets.shape == (32, 10) and idx.dtype == torch.long
    assert torch.equal(idx[:, 1:], targets[:, :-1])  # targets are idx shifted by one
    allowed = task.successors[idx]  # (32, 10, 2)
    assert (allowed == targets[..., None]).any(-1).all()


def test_markov_sampling_is_reproducible():
    task = MarkovTask(seed=3)
    a = task.sample(4, 6, torch.Generator().manual_seed(1))
    b = task.sample(4, 6, torch.Generator().manual_seed(1))
    assert all(torch.equal(u, v) for u, v in zip(a, b, strict=True))
    assert torch.equal(MarkovTask(seed=3).successors, task.successors)
    assert not torch.equal(MarkovTask(seed=4).successors, task.successors)


def test_markov_reference_losses():
    task = MarkovTask(vocab_size=16, n_next=2)
    assert task.entropy_rate == pytest.approx(math.log(2))
    assert task.entropy_rate < task.position_only_loss(16) <= math.log(16)
    # every token may follow every token: nothing to learn beyond the uniform guess
    uniform = MarkovTask(vocab_size=8, n_next=8)
    assert uniform.position_only_loss(5) == pytest.approx(math.log(8))
    assert uniform.entropy_rate == pytest.approx(math.log(8))


def test_markov_position_only_loss_matches_sampled_frequencies():
    task = MarkovTask(vocab_size=6, n_next=2, seed=1)
    _, targets = task.sample(20_000, 3, torch.Generator().manual_seed(0))
    entropies = []
    for t in range(3):
        p = torch.bincount(targets[:, t], minlength=6).double() / targets.shape[0]
        entropies.append(-(p[p > 0] * p[p > 0].log()).sum().item())
    assert task.position_only_loss(3) == pytest.approx(sum(entropies) / 3, abs=0.01)


@pytest.mark.parametrize("n_next", [0, 17])
def test_markov_rejects_impossible_branching(n_next):
    with pytest.raises(ValueError, match=f"n_next must be in 1..vocab_size=16, got {n_next}"):
        MarkovTask(vocab_size=16, n_next=n_next)


# --- train_lm -----------------------------------------------------------------------


def small_gpt(position="pre", n_layer=2, seed=0):
    torch.manual_seed(seed)
    config = GPTConfig(
        vocab_size=8, block_size=8, n_layer=n_layer, n_head=2, n_embd=16, norm_position=position
    )
    return GPT(config)


def test_training_learns_the_chain(device):
    task = MarkovTask(vocab_size=8, n_next=2, seed=0)
    result = train_lm(small_gpt().to(device), task, steps=150, lr=1e-2, seq_len=8, seed=0)
    assert isinstance(result, TrainResult) and not result.diverged
    assert len(result.losses) == 150
    assert result.losses[0] == pytest.approx(math.log(8), abs=0.1)  # starts at the uniform guess
    assert result.eval_loss < task.position_only_loss(8) - 0.3  # it used the previous token


def test_training_is_reproducible():
    task = MarkovTask(vocab_size=8, n_next=2)
    a = train_lm(small_gpt("post"), task, steps=5, lr=1e-3, seq_len=8)
    b = train_lm(small_gpt("post"), task, steps=5, lr=1e-3, seq_len=8)
    assert a == b


class NanAfter(nn.Module):
    """A model whose loss becomes nan at a given step."""

    def __init__(self, step: int):
        super().__init__()
        self.w = nn.Parameter(torch.zeros(1))
        self.step, self.calls = step, 0

    def forward(self, idx, targets):
        self.calls += 1
        bad = float("nan") if self.calls > self.step else 1.0
        return None, (self.w - 1.0).pow(2).sum() * bad


def test_divergence_is_reported_and_stops_training():
    result = train_lm(NanAfter(3), MarkovTask(), steps=10, lr=1e-3)
    assert result.diverged
    assert len(result.losses) == 4 and math.isnan(result.losses[-1])
    assert math.isnan(result.eval_loss)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (dict(steps=0, lr=1e-3), "steps must be a positive int, got 0"),
        (dict(steps=2.5, lr=1e-3), "steps must be a positive int, got 2.5"),
        (dict(steps=5, lr=0.0), "lr must be positive, got 0.0"),
    ],
)
def test_train_lm_rejects_bad_settings(kwargs, match):
    with pytest.raises(ValueError, match=match):
        train_lm(small_gpt(), MarkovTask(vocab_size=8), **kwargs)
