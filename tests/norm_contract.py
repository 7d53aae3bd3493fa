"""What every from-scratch norm of the handbook promises about bad input.

Shared by the tests of snippets/layer_norm.py and snippets/rms_norm.py, which
raise the same errors for the same mistakes.
"""

from __future__ import annotations

import pytest
import torch


def check_input_errors(norm_cls) -> None:
    """Wrong trailing dims -> ValueError naming both; non-float input -> TypeError naming it."""
    with pytest.raises(ValueError, match=r"last 1 dim\(s\) are \(8,\), got trailing dims \(7,\)"):
        norm_cls(8)(torch.randn(2, 7))
    with pytest.raises(
        ValueError, match=r"last 2 dim\(s\) are \(3, 4\), got trailing dims \(4, 3\)"
    ):
        norm_cls((3, 4))(torch.randn(5, 4, 3))
    with pytest.raises(ValueError, match=r"got trailing dims \(4,\) \(input shape \(4,\)\)"):
        norm_cls((3, 4))(torch.randn(4))  # fewer dims than normalized_shape
    with pytest.raises(TypeError, match=r"floating-point tensor, got torch\.int64"):
        norm_cls(3)(torch.ones(2, 3, dtype=torch.long))
    with pytest.raises(TypeError, match="floating-point tensor, got list"):
        norm_cls(3)([1.0, 2.0, 3.0])


def check_constructor_errors(norm_cls) -> None:
    for bad in (0, (), (3, 0), -2):
        with pytest.raises(ValueError, match="normalized_shape must be"):
            norm_cls(bad)
