"""The figures and the rule that compares them: a row's share of the copy bandwidth with
the range of its times, as the page prints it; which implementations the printed ranges
cannot tell from the fastest (``fastest_group``); which figures the host's launches may
have slowed (``launch_bound``); the columns (dtype and size) and the headline one.

Every figure is a share of the copy bandwidth measured in the same run: the median time's,
and in brackets the share at the first and third quartiles of the times. One copy is
timed beside every implementation of a size, so its median scales a column alike and the
printed ranges overlap where the time ranges do. The verdict, the bold cells and the
advice by size apply the rule of snippets/norm_speed.py's compare to the ranges as
printed: a reader who compares two printed ranges reaches the page's verdict.
"""

from __future__ import annotations

import math

PASSES = ("forward", "forward+backward")
LAUNCH_BOUND = 0.8  # host time per call / GPU time per call, from which a figure is flagged


def quartiles(samples) -> tuple[float, float, float]:
    """(median, first quartile, third quartile), interpolated as numpy does."""
    xs = sorted(samples)

    def at(p):
        pos = p * (len(xs) - 1)
        i = math.floor(pos)
        return xs[i] if i == pos else xs[i] + (xs[i + 1] - xs[i]) * (pos - i)

    return at(0.5), at(0.25), at(0.75)


def share(row) -> tuple[float, float, float]:
    """A row's figure: the bandwidth of its median time as a percentage of the copy's median
    bandwidth (snippets/norm_speed.py's pct_of_copy), and the same at its third and first
    time quartiles: (median, low, high). The copy's spread is left to the copy's own line:
    it is common to every implementation of a size, and would blur their comparison."""
    (nm, nl, nh), copy = quartiles(row["samples"]), quartiles(row["copy_samples"])[0]
    scale = 100 * row["bytes"] / row["copy_bytes"] * copy
    return scale / nm, scale / nh, scale / nl


def printed(row) -> tuple[int, int, int]:
    """share(row) as the page prints it, in whole percent."""
    return tuple(int(f"{v:.0f}") for v in share(row))


def fastest_group(rows) -> set:
    """The impls of rows (one operation, size, dtype, pass) not measurably slower than the
    fastest: norm_speed.compare's rule (ranges that overlap or touch tell nothing apart),
    applied to the ranges as printed, and to each pair: every impl whose printed range
    overlaps that of one in the group joins it. So no impl left out overlaps one put in,
    and each left out is slower, by its whole range, than each put in."""
    figures = {r["impl"]: printed(r) for r in rows}
    group = {max(rows, key=lambda r: share(r)[0])["impl"]}
    grown = True
    while grown:
        joining = {
            impl
            for impl, (_, low, high) in figures.items()
            if impl not in group
            and any(low <= figures[g][2] and figures[g][1] <= high for g in group)
        }
        group |= joining
        grown = bool(joining)
    return group


def launch_bound(row) -> bool:
    """The host took nearly as long to launch a call as the GPU to run it: the GPU may
    have waited for the launches, and the figure is then not the kernel's."""
    host = row.get("host_samples")
    return bool(host) and quartiles(host)[0] >= LAUNCH_BOUND * quartiles(row["samples"])[0]


def host_us(row) -> float | None:
    """The host's median time to launch one call, in µs (None: not recorded)."""
    host = row.get("host_samples")
    return quartiles(host)[0] * 1e6 if host else None


def gpu_us(row) -> float:
    """The median time of one call as the events timed it, in µs."""
    return quartiles(row["samples"])[0] * 1e6


def figure_text(row) -> str:
    """The printed figure: median share (first–third quartile's)."""
    m, low, high = printed(row)
    return f"{m}% ({low}–{high})"


def dagger(row) -> str:
    return " †" if launch_bound(row) else ""


def column(row) -> tuple:
    return (row["dtype"], row["rows"], row["hidden"])


def order(col) -> tuple:
    """Columns float32 first, then by elements, then by tokens: one order on every build."""
    dtype, rows, hidden = col
    return (dtype != "float32", rows * hidden, rows)


def column_name(col) -> str:
    dtype, rows, hidden = col
    return f"{dtype} {rows}×{hidden}"


def headline(rows) -> tuple:
    """The column a verdict is drawn at: the bfloat16 size with the most elements (of two
    alike, the one with more tokens), the dtype and size of a real model's training."""
    cols = {column(r) for r in rows}
    half = [c for c in cols if c[0] == "bfloat16"] or cols
    return max(half, key=lambda c: (c[1] * c[2], c[1]))
