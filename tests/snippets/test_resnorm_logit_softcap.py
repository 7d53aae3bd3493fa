"""GPTConfig(logit_softcap=c): the final logits bounded as c * tanh(logits / c), the op order of
Hugging Face's final_logit_softcapping (Gemma 2, Gemma 4), so a ported model gives the same
bits; and a clear error for a cap that is not a finite number > 0."""

import math

import pytest
import torch
from transformers import Gemma2Config, Gemma2ForCausalLM

from snippets.resnorm import GPT, GPTConfig

CAP = 30.0


def _cap(logits: torch.Tensor, c: float) -> torch.Tensor:
    return torch.tanh(logits / c) * c


def _gpt_pair(dtype):
    torch.manual_seed(0)
    plain = GPT(GPTConfig(vocab_size=64, n_embd=32, n_head=2, n_layer=2))
    capped = GPT(GPTConfig(vocab_size=64, n_embd=32, n_head=2, n_layer=2, logit_softcap=CAP))
    capped.load_state_dict(plain.state_dict())
    return plain.to(dtype).eval(), capped.to(dtype).eval()


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_the_cap_is_c_tanh_of_the_logits_over_c(dtype):
    plain, capped = _gpt_pair(dtype)
    # Large logits, so that the cap bends them: scale up the tied embedding.
    with torch.no_grad():
        for model in (plain, capped):
            model.wte.weight.mul_(200.0)
    idx = torch.randint(0, 64, (2, 8))
    with torch.no_grad():
        raw, _ = plain(idx)
        out, _ = capped(idx)
    assert raw.abs().max() > CAP  # the cap has work to do
    assert torch.equal(out, _cap(raw, CAP))
    # (-c, c) in exact arithmetic; rounding may reach c itself (tanh rounds to 1 in bfloat16)
    assert out.abs().max() <= CAP


def test_the_loss_is_taken_on_the_capped_logits():
    plain, capped = _gpt_pair(torch.float32)
    idx = torch.randint(0, 64, (2, 8))
    with torch.no_grad():
        raw, _ = plain(idx)
        _, loss = capped(idx, idx)
    want = torch.nn.functional.cross_entropy(_cap(raw, CAP).flatten(0, 1), idx.flatten())
    assert torch.equal(loss, want)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_the_formula_is_hugging_faces_final_logit_softcapping(dtype):
    """Gemma 2 computes logits / c, tanh, * c: the same ops in the same order, bit for bit."""
    config = Gemma2Config(
        vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=2, num_key_value_heads=1, head_dim=16,
        final_logit_softcapping=CAP, attn_logit_softcapping=None,
    )  # fmt: skip
    torch.manual_seed(0)
    model = Gemma2ForCausalLM(config).to(dtype).eval()
    with torch.no_grad():
        model.model.embed_tokens.weight.mul_(50.0)
    idx = torch.randint(0, 64, (2, 8))
    with torch.no_grad():
        capped = model(idx).logits
        model.config.final_logit_softcapping = None
        raw = model(idx).logits
    assert raw.abs().max() > CAP
    assert torch.equal(capped, _cap(raw, CAP))


@pytest.mark.parametrize(
    "bad, error",
    [(0.0, ValueError), (-30.0, ValueError), (math.inf, ValueError), (math.nan, ValueError),
     ("30", TypeError), (True, TypeError)],
)  # fmt: skip
def test_a_cap_that_is_not_a_finite_number_above_zero_is_refused(bad, error):
    want = r"GPTConfig\.logit_softcap must be None or a finite number > 0"
    with pytest.raises(error, match=want):
        GPT(GPTConfig(logit_softcap=bad))
