"""A page's ``[[gpu-results:SECTION]]`` and ``[[gpu-results:SECTION-VIEW]]`` filled from the
results file: in Markdown (``fill_markdown``) or in a notebook's rendered Markdown cell
(``fill_html``); ``render`` puts together what each stands for.

``[[gpu-results:SECTION]]``: where and when the figures were measured, whether the code
changed since, the tables, the charts and their notes. The views, each a part alone:
``-verdict`` the verdict at the headline size; ``-versions`` one sentence naming the
torch, Triton and GPU that measured them; ``-sizes`` where the section's own kernel is
among the fastest and where it is slower, size by size (``-sizes-IMPL``: another
implementation); ``-host`` the host's time per call. Without the file the page says
that no GPU figures have been recorded yet, and how to record them.
"""

from __future__ import annotations

import re
from pathlib import Path

from resnorm_site.gpu_results.chart import chart
from resnorm_site.gpu_results.figures import PASSES, launch_bound
from resnorm_site.gpu_results.source import (
    HAND,
    RESULTS_FILE,
    SECTIONS,
    ResultsError,
    code_hash,
    read,
)
from resnorm_site.gpu_results.tables import launch_note, table
from resnorm_site.gpu_results.verdict import host, sizes, verdict
from resnorm_site.gpu_results.words import TIMER, WORDS
from resnorm_site.paths import ROOT

MARKER = re.compile(r"\[\[gpu-results:([\w-]+)\]\]")
PARAGRAPH = re.compile(r"<p>\s*\[\[gpu-results:([\w-]+)\]\]\s*</p>")
VIEWS = ("verdict", "versions", "sizes", "host")  # [[gpu-results:SECTION-VIEW]]
INLINE = ("versions", "sizes", "host")  # views that stand in a sentence of the page


def _notes(section, rows, data, words, lang) -> list[str]:
    """What the tables of a section (not the old method's) say under them: how each cell
    was timed, †, the compile settings, every size that could not run."""
    first = rows[0]
    repeats = len(first["samples"])
    timer = TIMER[lang].get(first.get("timer"), str(first.get("timer")))
    counts = sorted({r.get("rotate", 0) for r in rows})  # each size cycles its own number
    rotate = f"{counts[0]}" if len(counts) == 1 else f"{counts[0]}–{counts[-1]}"
    parts = [words["how"].format(timer=timer, rotate=rotate, repeats=repeats)]
    if any(launch_bound(r) for r in rows):
        parts.append(launch_note(lang))
    compiled = [r["compile"] for r in rows if r.get("compile")]
    if compiled:
        c = compiled[0]
        parts.append(
            words["compile"].format(
                dynamic=c["dynamic"],
                mode=c["mode"],
                graphs="/".join(sorted({str(x["graphs"]) for x in compiled})),
                recompiles="/".join(sorted({str(x["recompiles"]) for x in compiled})),
                timed=sum(x["timed_graphs"] for x in compiled),
            )
        )
    _, norms = SECTIONS[section]
    for f in data.get("failures", []):
        if f.get("norm") in norms:
            what = words["impl"].get((f["norm"], f["impl"]), f"{f['norm']} {f['impl']}")
            size = f"{f['dtype']} {f['rows']}×{f['hidden']}"
            parts.append(words["failed"].format(what=what, size=size, why=f["error"]))
    return parts


def render(section: str, data: dict | None, current_hash: str, lang: str) -> str:
    """The Markdown that stands for [[gpu-results:SECTION]]: provenance, table, notes;
    for [[gpu-results:SECTION-VIEW]], that view alone (VIEWS)."""
    section, _, view = section.partition("-")
    view, _, impl = view.partition("-")  # -sizes-IMPL: an impl other than the section's own
    if section not in SECTIONS:
        raise ResultsError(f"unknown section {section!r}; known: {sorted(SECTIONS)}")
    if view and view not in VIEWS:
        raise ResultsError(f"unknown view {view!r} of {section!r}; known: {list(VIEWS)}")
    if impl and view != "sizes":
        raise ResultsError(f"only the view 'sizes' takes an implementation, not {view!r}")
    impl = impl or HAND.get(section)
    if view == "sizes" and not impl:
        raise ResultsError(
            f"view 'sizes' of {section!r}, which has no kernel of its own, needs one named: "
            f"[[gpu-results:{section}-sizes-IMPL]]"
        )
    words = WORDS[lang]
    key, norms = SECTIONS[section]
    rows = [r for r in (data or {}).get(key, []) if r["norm"] in norms]
    if not rows:  # the old way is shown below the main table, which already says so
        none = "none_versions" if view in INLINE else "none"
        return words["none_old" if section == "old_method" else none].format(file=RESULTS_FILE)
    m = data["machine"]
    if view == "versions":
        return words["versions"].format(
            torch=m.get("torch"), triton=m.get("triton") or "–", gpu=m.get("gpu")
        )
    if view == "sizes":
        known = sorted({r["impl"] for r in rows})
        if impl not in known:
            raise ResultsError(f"no implementation {impl!r} in {section!r}; known: {known}")
        return sizes(rows, impl, lang)
    if view == "host":
        return host(rows, HAND.get(section), lang)
    stale = data["code_hash"] != current_hash
    since = words["stale" if stale else "fresh"].format(
        old=str(data["code_hash"])[:12], new=current_hash[:12], hash=current_hash[:12]
    )
    if view == "verdict":  # the verdict says only when its figures are stale
        return verdict(rows, norms, lang, data) + (f"\n\n{since}" if stale else "")
    parts = [
        words["where"].format(
            gpu=m.get("gpu"),
            driver=m.get("driver"),
            cuda=m.get("cuda"),
            torch=m.get("torch"),
            triton=m.get("triton") or "–",
            date=data["date"],
            commit=str(data["commit"])[:12],
            dirty=words["dirty"] if data.get("dirty") else "",
            file=RESULTS_FILE,
        ),
        since,
        table(rows, norms, lang),
    ]
    for i, p in enumerate(q for q in PASSES if any(r["passes"] == q for r in rows)):
        parts.append(chart(rows, norms, lang, p, f"rn-gpu-{section}-{i}"))
    if section == "old_method":
        parts.append(words["old"])
        return "\n\n".join(parts)
    return "\n\n".join(parts + _notes(section, rows, data, words, lang))


def fill_markdown(markdown: str, lang: str, root: Path = ROOT) -> str:
    """Each [[gpu-results:SECTION]] of a Markdown page replaced by its Markdown."""
    if "[[gpu-results:" not in markdown:
        return markdown
    data, current = read(Path(root) / RESULTS_FILE), code_hash(root)
    return MARKER.sub(lambda m: render(m.group(1), data, current, lang), markdown)


def fill_html(html: str, lang: str, root: Path = ROOT) -> str:
    """Each paragraph [[gpu-results:SECTION]] of a rendered page (a notebook's Markdown
    cell) replaced by its Markdown, rendered to HTML."""
    if "[[gpu-results:" not in html:
        return html
    import markdown as md

    data, current = read(Path(root) / RESULTS_FILE), code_hash(root)

    def block(m: re.Match) -> str:
        return md.markdown(render(m.group(1), data, current, lang), extensions=["tables"])

    html = PARAGRAPH.sub(block, html)
    if MARKER.search(html):
        raise ResultsError("[[gpu-results:...]] must be a paragraph of its own")
    return html
