"""One vector through one sublayer connection, stage by stage, for three norm placements.

Post-LN computes y = N(x + F(x)), Pre-LN y = x + F(N(x)) and Sandwich/Peri-LN
y = x + N2(F(N1(x))). ``stages`` returns every intermediate vector in the order it
is computed, so the effect of each step can be printed and plotted. The norms
default to fresh ``nn.LayerNorm`` layers (weight 1, bias 0, as at initialization).
"""

# --8<-- [start:stages]
import matplotlib.pyplot as plt
import numpy as np
import torch
from torch import nn

PLACEMENTS = ("post", "pre", "sandwich")
TITLES = {"post": "Post-LN", "pre": "Pre-LN", "sandwich": "Sandwich / Peri-LN"}


def stages(
    x: torch.Tensor,
    sublayer: nn.Module,
    norm_position: str = "pre",
    norm: nn.Module | None = None,
    norm_branch: nn.Module | None = None,
    name: str = "LN",
) -> dict[str, torch.Tensor]:
    """Every vector one sublayer connection computes from x, keyed by its formula.

    x: one token, shape (d,). ``norm`` is N (N1 for sandwich), ``norm_branch`` is
    sandwich's N2; ``name`` is how the labels write the norm.
    """
    if norm_position not in PLACEMENTS:
        raise ValueError(f"norm_position must be one of {PLACEMENTS}, got {norm_position!r}")
    if not torch.is_tensor(x) or not x.is_floating_point():
        got = x.dtype if torch.is_tensor(x) else type(x).__name__
        raise TypeError(f"x must be a floating-point tensor, got {got}")
    if x.dim() != 1 or len(x) == 0:
        raise ValueError(f"x must be one vector of shape (d,), d >= 1, got shape {tuple(x.shape)}")
    d = x.shape[0]
    # a fresh norm per role, created on x's device: weight 1, bias 0
    norm = norm if norm is not None else nn.LayerNorm(d, device=x.device, dtype=x.dtype)
    if norm_branch is None:
        norm_branch = nn.LayerNorm(d, device=x.device, dtype=x.dtype)

    def f(h: torch.Tensor) -> torch.Tensor:
        out = sublayer(h)
        if out.shape != h.shape:
            raise ValueError(
                f"sublayer must map shape {tuple(h.shape)} to itself, got {tuple(out.shape)}"
            )
        return out

    with torch.no_grad():  # a picture of the forward pass; nothing is trained here
        if norm_position == "post":
            fx = f(x)
            s = x + fx
            return {"x": x, "F(x)": fx, "x + F(x)": s, f"{name}(x + F(x))": norm(s)}
        if norm_position == "pre":
            h = norm(x)
            fh = f(h)
            return {"x": x, f"{name}(x)": h, f"F({name}(x))": fh, f"x + F({name}(x))": x + fh}
        h = norm(x)  # sandwich
        fh = f(h)
        g = norm_branch(fh)
        n1, n2 = f"{name}1", f"{name}2"
        return {
            "x": x,
            f"{n1}(x)": h,
            f"F({n1}(x))": fh,
            f"{n2}(F({n1}(x)))": g,
            f"x + {n2}(F({n1}(x)))": x + g,
        }


def mean_std(v: torch.Tensor) -> tuple[float, float]:
    """Mean and standard deviation of a vector, the std biased (divide by d) as LayerNorm's."""
    return v.mean().item(), v.var(unbiased=False).sqrt().item()


def _r(t: float, decimals: int) -> float:
    return round(t, decimals) + 0.0  # + 0.0 turns -0.0 into 0.0, so "-0.00" never prints


def table(vectors: dict[str, torch.Tensor], decimals: int = 2) -> str:
    """One line per stage: the rounded vector, then its mean and (biased) std."""
    if not vectors:
        raise ValueError("table expects one or more vectors, got an empty dict")
    if isinstance(decimals, bool) or not isinstance(decimals, int) or decimals < 0:
        raise ValueError(f"decimals must be an int >= 0, got {decimals!r}")
    width = max(len(label) for label in vectors)
    lines = []
    for label, v in vectors.items():
        if v.dim() != 1 or len(v) == 0:
            raise ValueError(f"table expects vectors (d,), d >= 1; {label!r} is {tuple(v.shape)}")
        values = " ".join(f"{_r(t, decimals):{decimals + 4}.{decimals}f}" for t in v.tolist())
        mean, std = mean_std(v)
        lines.append(
            f"{label:>{width}}: [{values}]  mean {_r(mean, 2):6.2f}  std {_r(std, 2):5.2f}"
        )
    return "\n".join(lines)


# --8<-- [end:stages]


# --8<-- [start:plot]
def plot_stages(results: dict[str, dict[str, torch.Tensor]], figsize=None):
    """Grouped bar charts, one panel per placement: one bar group per feature, one bar per stage."""
    if not results or not all(results.values()):
        raise ValueError(
            "plot_stages expects one or more placements with stages, got stage counts "
            f"{ {placement: len(vectors) for placement, vectors in results.items()} }"
        )
    fig, axes = plt.subplots(
        1, len(results), figsize=figsize or (5 * len(results), 4.6), sharey=True, squeeze=False
    )
    for ax, (placement, vectors) in zip(axes[0], results.items(), strict=True):
        d = len(next(iter(vectors.values())))
        width = 0.8 / len(vectors)  # the stages of one feature share 80% of its slot
        index = np.arange(d)
        for i, (label, v) in enumerate(vectors.items()):
            ax.bar(
                index + (i - (len(vectors) - 1) / 2) * width, v.cpu().numpy(), width, label=label
            )
        ax.axhline(0, color="black", linewidth=0.6)
        ax.set_xticks(index)
        ax.set_xlabel("feature")
        ax.set_title(TITLES.get(placement, placement))
        ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=2)
    axes[0, 0].set_ylabel("value")
    fig.tight_layout()
    return fig


# --8<-- [end:plot]


# --8<-- [start:demo]
if __name__ == "__main__":
    torch.manual_seed(0)
    d = 8
    x = 2.0 + 3.0 * torch.randn(d)  # off-centre and wide, so the norm's effect shows
    f = nn.Linear(d, d)
    for placement in PLACEMENTS:
        print(TITLES[placement])
        print(table(stages(x, f, placement)))
# --8<-- [end:demo]
