"""The tables of a section: one Markdown table per pass, a line per implementation and a
column per dtype and size, the fastest of each cell group in bold (``fastest_group``) and
a launch-bound figure marked † (``launch_note`` says what the mark means)."""

from __future__ import annotations

from resnorm_site.gpu_results.figures import (
    LAUNCH_BOUND,
    PASSES,
    column,
    column_name,
    dagger,
    fastest_group,
    figure_text,
    order,
    quartiles,
)
from resnorm_site.gpu_results.words import WORDS


def launch_note(lang: str) -> str:
    """What † means, with the bound it is drawn at."""
    return WORDS[lang]["launch"].format(bound=f"{LAUNCH_BOUND:.0%}")


def _copy_cells(here, cols, words) -> list[str]:
    """The copy's bandwidth per column: its median, and its own range."""
    cells = []
    for c in cols:
        r = next((r for r in here if column(r) == c), None)
        if r is None:
            cells.append(words["missing"])
            continue
        m, low, high = quartiles(r["copy_samples"])
        gb = r["copy_bytes"] / 1e9
        cells.append(f"{gb / m:.0f} GB/s ({gb / high:.0f}–{gb / low:.0f})")
    return cells


def table(rows, norms, lang: str) -> str:
    """One Markdown table per pass: a line per implementation, a column per dtype and size."""
    words = WORDS[lang]
    rows = [r for r in rows if r["norm"] in norms]
    cols = sorted({column(r) for r in rows}, key=order)
    out = []
    for p in PASSES:
        here = [r for r in rows if r["passes"] == p]
        if not here:
            continue
        lines = ["| " + words["pass"][p] + " | " + " | ".join(map(column_name, cols)) + " |"]
        lines.append("|---" * (len(cols) + 1) + "|")
        lines.append(f"| {words['copy']} | " + " | ".join(_copy_cells(here, cols, words)) + " |")
        best = {}
        for norm in norms:
            for c in cols:
                group = [r for r in here if r["norm"] == norm and column(r) == c]
                best[(norm, c)] = fastest_group(group) if group else set()
        impls = []
        for r in here:
            if (r["norm"], r["impl"]) not in impls:
                impls.append((r["norm"], r["impl"]))
        for norm, impl in impls:
            cells = []
            for c in cols:
                r = next((r for r in here if (r["norm"], r["impl"]) == (norm, impl)
                          and column(r) == c), None)  # fmt: skip
                if r is None:
                    cells.append(words["missing"])
                    continue
                cell = f"**{figure_text(r)}**" if impl in best[(norm, c)] else figure_text(r)
                cells.append(cell + dagger(r))
            name = words["impl"].get((norm, impl), f"{norm} {impl}")
            lines.append(f"| {name} | " + " | ".join(cells) + " |")
        out.append("\n".join(lines))
    return "\n\n".join(out)
