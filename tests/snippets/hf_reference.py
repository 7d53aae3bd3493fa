"""Helpers shared by the tests that compare the handbook's modules with Hugging Face's
(tests/snippets/test_resnorm*.py): random weights, the causal mask and a RoPE that
rotates nothing, in the forms Hugging Face's layers take them."""

from __future__ import annotations

import torch
from torch import nn


def randomize(module: nn.Module, seed: int = 0) -> None:
    """Non-trivial values everywhere (norm weights, scales and pseudo-queries included, which
    start at one or zero), so a wrong wiring shows."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.randn(p.shape, generator=g) * 0.3 + (1.0 if p.dim() == 1 else 0.0))


def hf_causal_mask(x: torch.Tensor) -> torch.Tensor:
    """The additive (1, 1, T, T) causal mask a Hugging Face layer takes as attention_mask."""
    T = x.shape[1]
    return torch.full((T, T), float("-inf"), dtype=x.dtype, device=x.device).triu(1)[None, None]


def rope_identity(x: torch.Tensor, dim: int):
    """(cos, sin) = (1, 0): position embeddings that rotate nothing, as the handbook's
    attention applies no RoPE."""
    ones = torch.ones(*x.shape[:2], dim, dtype=x.dtype, device=x.device)
    return ones, torch.zeros_like(ones)
