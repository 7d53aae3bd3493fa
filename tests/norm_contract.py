"""What every from-scratch norm of the handbook promises about bad input.

Shared by the tests of snippets/layer_norm.py and snippets/rms_norm.py, which
raise the same errors for the same mistakes.
"""

from __future__ import annotations

import numpy as np
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
    """What nn.LayerNorm refuses, refused with what was expected and what was got; and more."""
    # wrong types: "38" is not (3, 8), True is not (1,), 8.0 is not 8 (nn.LayerNorm refuses all)
    for bad, got in [
        ("38", "str '38'"),
        (True, "bool True"),
        (8.0, "float 8.0"),
        ([[3]], r"list \[\[3\]\]"),
        ((3, 2.0), r"tuple \(3, 2\.0\)"),
        ((3, True), r"tuple \(3, True\)"),
        (None, "NoneType None"),
    ]:
        with pytest.raises(
            TypeError, match=f"normalized_shape must be an int or a tuple of ints, got {got}$"
        ):
            norm_cls(bad)
    # wrong values: nn.LayerNorm builds an empty layer for 0 and (), and fails on -2 in torch.empty
    for bad in (0, (), [], (3, 0), -2):
        with pytest.raises(
            ValueError, match=r"normalized_shape must be a positive int or a non-empty"
        ):
            norm_cls(bad)
    # accepted: any int type, lists, torch.Size
    assert norm_cls(np.int64(4)).normalized_shape == (4,)
    assert norm_cls([2, 3]).normalized_shape == (2, 3)
    assert norm_cls(torch.Size([2, 3])).normalized_shape == (2, 3)
    assert all(type(d) is int for d in norm_cls((np.int64(2), 3)).normalized_shape)
    # eps: a finite number >= 0 (nn.LayerNorm takes -1 and NaN, and returns NaN)
    for bad, got in [("1e-5", "str '1e-5'"), (True, "bool True"), (torch.tensor(1e-5), "Tensor")]:
        with pytest.raises(TypeError, match=f"eps must be (None or )?a number, got {got}"):
            norm_cls(4, eps=bad)
    for bad in (-1, -1e-5, float("nan"), float("inf")):
        with pytest.raises(
            ValueError, match=f"eps must be (None or )?a finite number >= 0, got {bad}"
        ):
            norm_cls(4, eps=bad)
    assert norm_cls(4, eps=0).eps == 0 and norm_cls(4, eps=np.float32(1e-3)).eps == np.float32(1e-3)
