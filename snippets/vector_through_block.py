"""One vector through one sublayer connection, stage by stage, for three norm placements.

Post-LN computes y = N(x + F(x)), Pre-LN y = x + F(N(x)) and Sandwich/Peri-LN
y = x + N2(F(N1(x))). ``stages`` returns every intermediate vector in the order it
is computed, so the effect of each step can be printed and plotted. The norms
default to fresh ``nn.LayerNorm`` layers (weight 1, bias 0, as at initialization).

The site's interactive page computes the same picture in the reader's browser.
``widget_weights`` exports the sublayers it uses (the build writes them into the
site), and ``connection_stages`` and ``stream_stds`` are the float64 reference its
numbers are tested against.
"""

# --8<-- [start:stages]
import math
import struct

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


# --8<-- [start:widget]
# The interactive page: five placements, s scaling the sublayer's output F(.) in each
# (N is the norm; the page's controls show these formulas).
WIDGET_PLACEMENTS = ("post", "pre", "sandwich", "output", "none")
WIDGET_FORMULAS = {
    "post": "N(x + s·F(x))",
    "pre": "x + s·F(N(x))",
    "sandwich": "x + N2(s·F(N1(x)))",
    "output": "x + N(s·F(x))",
    "none": "x + s·F(x)",
}
WIDGET_NORMS = {"layernorm": "LN", "rmsnorm": "RMSNorm"}  # norm -> how the labels write it
WIDGET_SEED = 1  # the notebook draws its F right after torch.manual_seed(1)


def _float32_digits(t: torch.Tensor) -> list[float]:
    """Each float32 of t in the fewest significant digits that name it exactly (9 always do):
    rounding the written value to float32 gives the weight back."""
    out = []
    for v in t.detach().flatten().tolist():  # float32 values, widened exactly to float
        for digits in range(6, 10):
            short = float(f"{v:.{digits}g}")
            if struct.unpack("f", struct.pack("f", short))[0] == v:
                break
        out.append(short)
    return out


def widget_weights(dims=range(2, 17), seed: int = WIDGET_SEED) -> dict:
    """The widget's sublayer F for each d in dims, as JSON-ready lists.

    F is the handbook's FeedForward(d, 4d) (Linear d->4d, exact GELU, Linear 4d->d) at
    PyTorch's default initialization, drawn right after torch.manual_seed(seed) for every
    d; with d = 8 and seed 1 it is the notebook's F. Weights are float32, each written with
    the fewest significant digits that identify it; matrices are row-major, shaped as
    nn.Linear's weight (out_features, in_features). The caller's random state is kept.
    """
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be an int >= 0, got {seed!r}")
    dims = list(dims) if not isinstance(dims, (str, bytes)) else [dims]
    if not dims or any(isinstance(d, bool) or not isinstance(d, int) or d < 1 for d in dims):
        raise ValueError(f"dims must be one or more ints >= 1, got {dims!r}")
    if len(set(dims)) != len(dims):
        raise ValueError(f"dims must not repeat a dimension, got {dims!r}")
    ffn = {}
    with torch.random.fork_rng(devices=[]):
        for d in dims:
            torch.manual_seed(seed)
            # FeedForward's order of creation: Linear(d, 4d), then Linear(4d, d)
            sublayer = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
            fc, proj = sublayer[0], sublayer[2]
            ffn[str(d)] = {
                "d_model": d,
                "d_ff": 4 * d,
                "fc.weight": _float32_digits(fc.weight),
                "fc.bias": _float32_digits(fc.bias),
                "proj.weight": _float32_digits(proj.weight),
                "proj.bias": _float32_digits(proj.bias),
            }
    return {"seed": seed, "activation": "gelu", "dtype": "float32", "ffn": ffn}


def _widget_sublayer(weights: dict, d: int) -> tuple[torch.Tensor, ...]:
    """fc.weight, fc.bias, proj.weight, proj.bias for dimension d, as float64 on the CPU."""
    if not isinstance(weights, dict) or not isinstance(weights.get("ffn"), dict):
        raise TypeError(
            "weights must be the dict widget_weights returns (with an 'ffn' dict), "
            f"got {type(weights).__name__}"
        )
    entry = weights["ffn"].get(str(d))
    if entry is None:
        have = sorted(int(k) for k in weights["ffn"])
        raise ValueError(f"weights have no sublayer for d = {d}; they have d in {have}")
    shapes = {
        "fc.weight": (4 * d, d),
        "fc.bias": (4 * d,),
        "proj.weight": (d, 4 * d),
        "proj.bias": (d,),
    }
    out = []
    for name, shape in shapes.items():
        values = entry.get(name)
        if not isinstance(values, list) or len(values) != math.prod(shape):
            got = len(values) if isinstance(values, list) else type(values).__name__
            raise ValueError(f"{name} for d = {d} must be {math.prod(shape)} numbers, got {got}")
        # round to the float32 the digits name, then widen exactly: what the widget computes
        out.append(torch.tensor(values, dtype=torch.float32).view(shape).double())
    return tuple(out)


def _check_widget_settings(placement, norm, eps, scale) -> None:
    if placement not in WIDGET_PLACEMENTS:
        raise ValueError(f"placement must be one of {WIDGET_PLACEMENTS}, got {placement!r}")
    if norm not in WIDGET_NORMS:
        raise ValueError(f"norm must be one of {tuple(WIDGET_NORMS)}, got {norm!r}")
    for name, value in (("eps", eps), ("scale", scale)):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TypeError(f"{name} must be a float, got {type(value).__name__}")
        if not math.isfinite(value):
            raise ValueError(f"{name} must be finite, got {value!r}")
    if eps <= 0:
        raise ValueError(
            f"eps must be > 0 (it keeps the norm of a constant vector finite), got {eps!r}"
        )


def _widget_vector(x) -> torch.Tensor:
    if not torch.is_tensor(x) or not x.is_floating_point():
        got = x.dtype if torch.is_tensor(x) else type(x).__name__
        raise TypeError(f"x must be a floating-point tensor, got {got}")
    if x.dim() != 1 or len(x) == 0:
        raise ValueError(f"x must be one vector of shape (d,), d >= 1, got shape {tuple(x.shape)}")
    return x.detach().to("cpu", torch.float64)  # float64 on the CPU: MPS has no float64


def _connection(x, sublayer, placement, norm, eps, scale) -> dict[str, torch.Tensor]:
    w1, b1, w2, b2 = sublayer
    name = WIDGET_NORMS[norm]

    def ffn(h):
        a = w1 @ h + b1
        return w2 @ (a * 0.5 * (1.0 + torch.erf(a * math.sqrt(0.5)))) + b2  # exact GELU

    def normalize(v):  # a fresh norm: weight 1, bias 0
        if norm == "layernorm":
            centred = v - v.mean()
            return centred / torch.sqrt(centred.pow(2).mean() + eps)  # biased variance
        return v / torch.sqrt(v.pow(2).mean() + eps)

    if placement == "post":
        fx = ffn(x)
        total = x + scale * fx
        return {
            "x": x,
            "F(x)": fx,
            "s·F(x)": scale * fx,
            "x + s·F(x)": total,
            f"{name}(x + s·F(x))": normalize(total),
        }
    if placement == "pre":
        h = normalize(x)
        fh = ffn(h)
        return {
            "x": x,
            f"{name}(x)": h,
            f"F({name}(x))": fh,
            f"s·F({name}(x))": scale * fh,
            f"x + s·F({name}(x))": x + scale * fh,
        }
    if placement == "sandwich":
        n1, n2 = f"{name}1", f"{name}2"
        h = normalize(x)
        fh = ffn(h)
        g = normalize(scale * fh)
        return {
            "x": x,
            f"{n1}(x)": h,
            f"F({n1}(x))": fh,
            f"s·F({n1}(x))": scale * fh,
            f"{n2}(s·F({n1}(x)))": g,
            f"x + {n2}(s·F({n1}(x)))": x + g,
        }
    fx = ffn(x)
    if placement == "output":
        g = normalize(scale * fx)
        return {
            "x": x,
            "F(x)": fx,
            "s·F(x)": scale * fx,
            f"{name}(s·F(x))": g,
            f"x + {name}(s·F(x))": x + g,
        }
    return {"x": x, "F(x)": fx, "s·F(x)": scale * fx, "x + s·F(x)": x + scale * fx}


def connection_stages(
    x: torch.Tensor,
    weights: dict,
    placement: str = "pre",
    norm: str = "layernorm",
    eps: float = 1e-5,
    scale: float = 1.0,
) -> dict[str, torch.Tensor]:
    """Every vector the widget's connection computes from x, keyed by its formula, in float64.

    ``weights`` is what widget_weights returns (or its JSON, loaded); F is its sublayer for
    d = len(x). ``scale`` is s, which multiplies F's output before anything else sees it:
    post N(x + s·F(x)), pre x + s·F(N(x)), sandwich x + N2(s·F(N1(x))), output
    x + N(s·F(x)), none x + s·F(x). The norm (LayerNorm or RMSNorm) is fresh, weight 1 and
    bias 0, with ``eps``; "none" has no norm, so norm and eps do nothing there.
    """
    x = _widget_vector(x)
    _check_widget_settings(placement, norm, eps, scale)
    return _connection(x, _widget_sublayer(weights, len(x)), placement, norm, eps, scale)


def stream_stds(
    x: torch.Tensor,
    weights: dict,
    placement: str = "pre",
    norm: str = "layernorm",
    eps: float = 1e-5,
    scale: float = 1.0,
    depth: int = 12,
) -> list[float]:
    """Standard deviation (biased) of the stream through ``depth`` identical connections.

    Entry l is after l connections (entry 0 is x itself), each one the connection of
    connection_stages with the same F and settings; no final norm is added.
    """
    if isinstance(depth, bool) or not isinstance(depth, int) or depth < 1:
        raise ValueError(f"depth must be an int >= 1, got {depth!r}")
    v = _widget_vector(x)
    _check_widget_settings(placement, norm, eps, scale)
    sublayer = _widget_sublayer(weights, len(v))
    stds = [mean_std(v)[1]]
    for _ in range(depth):
        v = list(_connection(v, sublayer, placement, norm, eps, scale).values())[-1]
        stds.append(mean_std(v)[1])
    return stds


# --8<-- [end:widget]


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
