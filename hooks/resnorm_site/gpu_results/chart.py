"""The chart of a section: an inline SVG per pass, each implementation's share of the copy
bandwidth (bar: median; whisker: range) per dtype and size, under the copy's roof."""

from __future__ import annotations

import html

from resnorm_site.gpu_results.figures import column, column_name, order, share
from resnorm_site.gpu_results.words import WORDS


def chart(rows, norms, lang: str, passes: str, chart_id: str) -> str:
    """An inline SVG: each implementation's share of the copy bandwidth (bar: median;
    whisker: range) per dtype and size, under the roof, the copy at 100 % (dashed)."""
    words = WORDS[lang]
    rows = [r for r in rows if r["norm"] in norms and r["passes"] == passes]
    cols = sorted({column(r) for r in rows}, key=order)
    spans = {id(r): share(r) for r in rows}
    top = max([110.0] + [hi for _, _, hi in spans.values()])
    left, width, bar, y = 300, 320, 12, 10
    x = lambda v: left + width * v / top  # noqa: E731
    out = []
    for c in cols:
        out.append(f'<text x="0" y="{y + 10}" font-weight="bold">{column_name(c)}</text>')
        y += 16
        for r in (r for r in rows if column(r) == c):
            m, low, high = spans[id(r)]
            name = html.escape(words["impl"].get((r["norm"], r["impl"]), r["impl"]))
            out.append(f'<text x="8" y="{y + 10}">{name}</text>')
            out.append(
                f'<rect x="{left}" y="{y}" width="{x(m) - left:.1f}" height="{bar}" '
                'fill="#4a78b5"/>'
            )
            out.append(
                f'<line x1="{x(low):.1f}" x2="{x(high):.1f}" y1="{y + 6}" y2="{y + 6}" '
                'stroke="currentColor"/>'
            )
            y += bar + 4
        y += 8
    roof = (
        f'<line x1="{x(100):.1f}" x2="{x(100):.1f}" y1="0" y2="{y}" stroke="currentColor" '
        'stroke-dasharray="4 3"/>'
    )
    label = (
        f'<text x="{x(100):.1f}" y="{y + 12}" text-anchor="end">{words["copy"]} = 100 %</text>'
        f'<text x="{left}" y="{y + 12}">0 %</text>'
    )
    title = words["chart"].format(passes=words["pass"][passes].lower())
    return (
        f'<svg class="rn-gpu-chart" role="img" aria-labelledby="{chart_id}" '
        f'viewBox="0 0 {left + width + 20} {y + 20}" font-size="12" fill="currentColor">'
        f'<title id="{chart_id}">{html.escape(title)}</title>'
        # lines and labels in the page's text colour (currentColor), so that dark mode
        # keeps them readable; attributes, not a <style>: the notebook pages' hook moves
        # every <style> into a stylesheet <link>, which an <svg> cannot hold
        + "".join(out)
        + roof
        + label
        + "</svg>"
    )
