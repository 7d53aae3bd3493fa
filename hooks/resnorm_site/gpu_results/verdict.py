"""What the figures conclude, in sentences: the verdict at the headline size (the fastest
and those the printed ranges cannot tell from them, then the rest), where the section's
own kernel is among the fastest and where it is slower, size by size (``sizes``), and the
host's time per call of each implementation (``host``)."""

from __future__ import annotations

from resnorm_site.gpu_results.figures import (
    PASSES,
    column,
    column_name,
    dagger,
    fastest_group,
    figure_text,
    gpu_us,
    headline,
    host_us,
    launch_bound,
    order,
    share,
)
from resnorm_site.gpu_results.tables import launch_note
from resnorm_site.gpu_results.words import WORDS, name, short_name, spaced


def verdict(rows, norms, lang: str, data: dict) -> str:
    """A few sentences, at the headline size: per operation and pass, the fastest
    implementations and those the ranges cannot tell from them (fastest_group), then the
    rest, with their figures; under them, what † means and the host's and the GPU's time
    per call of each figure it marks."""
    words, col, m = WORDS[lang], headline(rows), data["machine"]
    lines = [words["verdict"].format(gpu=m.get("gpu"), torch=m.get("torch"),
                                     triton=m.get("triton") or "–", size=column_name(col),
                                     date=str(data["date"])[:10])]  # fmt: skip
    flagged = []
    for norm in norms:
        for p in PASSES:
            here = [r for r in rows if (r["norm"], r["passes"]) == (norm, p)
                    and column(r) == col]  # fmt: skip
            if not here:
                continue
            here.sort(key=lambda r: -share(r)[0])
            best = fastest_group(here)
            top, rest = (
                words["sep"].join(
                    words["figure"].format(name=name(r, words), pct=figure_text(r) + dagger(r))
                    for r in here
                    if (r["impl"] in best) == inside
                )
                for inside in (True, False)
            )
            what, passes = words["norm"][norm], words["pass"][p].lower()
            key = "verdict_line" if rest else "verdict_all"
            lines.append("- " + words[key].format(what=what, passes=passes, best=top, rest=rest))
            flagged += [r for r in here if launch_bound(r)]
    # a blank line after the first: Python-Markdown starts a list only after one
    out = lines[0] + "\n\n" + "\n".join(lines[1:])
    if not flagged:
        return out
    items = words["sep"].join(
        words["launch_item"].format(
            name=name(r, words),
            passes=words["pass"][r["passes"]].lower(),
            host=host_us(r),
            gpu=gpu_us(r),
        )
        for r in flagged
    )
    times = words["launch_times"].format(size=column_name(col), items=items)
    return out + "\n\n" + launch_note(lang) + times


def _short(row, words) -> str:
    return f"{short_name(row, words)} {figure_text(row)}{dagger(row)}"


def sizes(rows, hand: str, lang: str) -> str:
    """Size by size, where the impl `hand` is among the fastest (fastest_group: bold in
    the tables) and where it is slower, with what was fastest there and, for its call,
    the host's and the GPU's median times: the advice by size, from the rule of the bold."""
    words = WORDS[lang]
    own = next(r for r in rows if r["impl"] == hand)
    wins, loses = {}, []  # wins: {dtype: [size, or size (the one pass it won)]}
    for c in sorted({column(r) for r in rows}, key=order):
        won, tried = [], []
        for p in PASSES:
            here = [r for r in rows if column(r) == c and r["passes"] == p]
            mine = next((r for r in here if r["impl"] == hand), None)
            if mine is None:
                continue
            tried.append(p)
            best = fastest_group(here)
            if hand in best:
                won.append(words["pass"][p].lower())
                continue
            top = sorted((r for r in here if r["impl"] in best), key=lambda r: -share(r)[0])
            host = host_us(mine)
            times = "" if host is None else words["per_call"].format(host=host, gpu=gpu_us(mine))
            loses.append(words["lose_item"].format(
                size=column_name(c), passes=words["pass"][p].lower(),
                best=words["comma"].join(_short(r, words) for r in top),
                name=short_name(mine, words), pct=figure_text(mine) + dagger(mine), times=times,
            ))  # fmt: skip
        size = f"{c[1]}×{c[2]}"
        if won and len(won) < len(tried):  # a size named alone was won in every pass
            size = words["win_item"].format(size=size, passes=words["and"].join(won))
        if won:
            wins.setdefault(c[0], []).append(size)
    mine = short_name(own, words)
    first = words["sizes_win" if wins else "sizes_win_none"].format(
        name=mine, wins=words["sep"].join(f"{d} " + words["list"].join(w) for d, w in wins.items())
    )
    then = words["sizes_lose" if loses else "sizes_lose_none"].format(
        loses=words["sep"].join(loses)
    )
    return spaced(first + then, lang)


def _span(values) -> str:
    low, high = f"{min(values):.0f}", f"{max(values):.0f}"
    return low if low == high else f"{low}–{high}"


def _per_pass(rows, key, words, time) -> str:
    """An implementation's times per call, lowest–highest over the sizes, per pass."""
    out = []
    for p in PASSES:
        us = [time(r) for r in rows if (r["norm"], r["impl"], r["passes"]) == (*key, p)]
        us = [u for u in us if u is not None]
        if us:
            out.append(words["host_pass"].format(span=_span(us), passes=words["pass"][p].lower()))
    return words["comma"].join(out)


def host(rows, hand: str | None, lang: str) -> str:
    """The host's median time to launch one call of each implementation, lowest–highest
    over the sizes, per pass; with the section's own kernel, the GPU's time for its call
    beside it. Host time grows little with the size and the GPU's grows with it: where the
    two meet, the GPU waits for the launches (launch_bound)."""
    words = WORDS[lang]
    impls = list(dict.fromkeys((r["norm"], r["impl"]) for r in rows))
    items = []
    for key in impls:
        times = _per_pass(rows, key, words, host_us)
        if times:
            row = next(r for r in rows if (r["norm"], r["impl"]) == key)
            items.append(words["host_item"].format(name=short_name(row, words), times=times))
    if not items:
        return words["host_none"]
    n = len({column(r) for r in rows})
    out = words["host"].format(n=n, items=words["sep"].join(items))
    own = next((r for r in rows if r["impl"] == hand), None)
    if own is not None:
        gpu = _per_pass(rows, (own["norm"], hand), words, gpu_us)
        out += words["host_gpu"].format(name=short_name(own, words), times=gpu)
    return spaced(out, lang)
