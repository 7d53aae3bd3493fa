"""A rendered notebook page, trimmed: no request to another host, the inlined snippet
cells and the long cells tagged ``collapse`` folded, the cells tagged ``publish`` left
out, and the heading anchors a translation gives its headings."""

from __future__ import annotations

import re

from resnorm_site.htmltools import element_end
from resnorm_site.notebooks.inline import SNIPPET_TAG

# Scripts that mkdocs-jupyter adds and this site does not need (it typesets with its own
# KaTeX): from CDNs (MathJax, Mermaid), nbconvert's MathJax configuration, and the
# MathJax loader that mkdocs-jupyter 0.27 puts on every page, notebook or not.
REMOTE_SCRIPT = re.compile(
    r"<script[^>]*\bsrc=[\"']https?://[^\"']*[\"'][^>]*>\s*</script>"
    r"|<script type=\"module\">(?:(?!</script>).)*?https?://(?:(?!</script>).)*?</script>",
    re.DOTALL,
)
MATHJAX_CONFIG = re.compile(
    r"<!-- Load mathjax -->.*?<!-- End of mathjax configuration -->", re.DOTALL
)
MATHJAX_LOADER = re.compile(
    r"<script data-mkdocs-jupyter-mathjax=\"[^\"]*\">.*?</script>\n?", re.DOTALL
)


def without_remote_scripts(html: str) -> str:
    html = MATHJAX_LOADER.sub("", html)
    html = MATHJAX_CONFIG.sub("", html)
    return REMOTE_SCRIPT.sub("", html)


# A translated notebook's heading carries its English twin's anchor, as Markdown pages do:
# "## 设置 { #settings }". Notebook Markdown has no attribute syntax, so the page's
# heading ids, table of contents and title are set from it here.
HEADING = re.compile(
    r'<h([1-6]) id="([^"]*)">(.*?)\s*\{\s*#([\w-]+)\s*\}(<a class="anchor-link" href="#)([^"]*)"'
)
ANCHOR_ATTR = re.compile(r"\s*\{\s*#[\w-]+\s*\}\s*$")


def heading_ids(html: str) -> tuple[str, dict[str, str]]:
    """The page with each ``{ #id }`` heading given that id; old id -> new id."""
    ids: dict[str, str] = {}

    def heading(match: re.Match) -> str:
        level, old, text, new, link, _ = match.groups()
        ids[old] = new
        return f'<h{level} id="{new}">{text}{link}{new}"'

    return HEADING.sub(heading, html), ids


def without_anchor_attr(title: str) -> str:
    return ANCHOR_ATTR.sub("", title)


SNIPPET_CELL = re.compile(r'<div[^>]*class="jp-Cell [^"]*\bcelltag_' + SNIPPET_TAG + r'\b[^"]*"')


def _fold(html: str, starts, summary_of, css: str, later: bool = False) -> str:
    """Wrap each <div> opened at one of ``starts`` in a closed <details class="info css">
    whose summary is ``summary_of(the div's html)``. With ``later``, the div waits in a
    <template> that docs/javascripts/folds.js puts in place when the fold first opens."""
    out, pos = [], 0
    for start in starts:
        if start < pos:
            continue  # inside a part already folded (cannot happen with nbconvert's markup)
        end = element_end(html, start, "div")
        part = html[start:end]
        out.append(html[pos:start])
        body = f'<template class="rn-later">{part}</template>' if later else part
        out.append(
            f'<details class="info {css}"><summary>{summary_of(part)}</summary>\n{body}\n</details>'
        )
        pos = end
    out.append(html[pos:])
    return "".join(out)


def collapse_snippet_cells(html: str, summary: str) -> str:
    """Wrap each inlined snippet cell of a notebook page in a closed <details> whose
    summary reads ``summary`` and the snippet's file name. The cell's highlighted code
    (thousands of elements for the handbook's largest module, four fifths of a notebook
    page's document) is only parsed into the page when a reader opens the fold."""

    def summary_of(cell: str) -> str:
        name = re.search(r"snippets/(\w+)\.py", cell)
        label = f"snippets/{name.group(1)}.py" if name else "snippet"
        return f"{summary} <code>{label}</code>"

    starts = (m.start() for m in SNIPPET_CELL.finditer(html))
    return _fold(html, starts, summary_of, "rn-snippet-cell", later=True)


# A notebook's own code cell tagged ``collapse`` (``# %% tags=["collapse"]``): a long cell
# whose code the page does not explain line by line (plotting, bookkeeping). Its code is
# folded; its output stays open. ``collapse-output`` folds a long output instead (the
# numbers a run publishes, listed in full).
COLLAPSE_TAGS = {"collapse": "jp-Cell-inputWrapper", "collapse-output": "jp-Cell-outputWrapper"}


def collapse_tagged_cells(html: str, tag: str, summary: str) -> str:
    """Fold the part of each cell tagged ``tag`` that COLLAPSE_TAGS names into a closed
    <details>; ``summary`` may name the folded part's number of lines, ``{lines}``."""
    cell_re = re.compile(r'<div[^>]*class="jp-Cell [^"]*\bcelltag_' + re.escape(tag) + r'(?=["\s])')
    part_re = re.compile(r'<div[^>]*class="' + COLLAPSE_TAGS[tag] + r'\b[^"]*"')

    def starts():
        for cell in cell_re.finditer(html):
            part = part_re.search(html, cell.end(), element_end(html, cell.start(), "div"))
            if part is not None:
                yield part.start()

    def summary_of(part: str) -> str:
        pres = re.findall(r"<pre\b.*?</pre>", part, re.S)
        texts = [re.sub(r"<[^>]+>", "", pre).rstrip("\n") for pre in pres]
        return summary.format(lines=sum(len(text.splitlines()) for text in texts))

    return _fold(html, starts(), summary_of, "rn-code-cell")


# A cell tagged ``publish`` (``# %% tags=["publish"]``) only hands a run's numbers to the
# build ([[measured:...]] on the pages); it runs, and the downloaded notebook keeps it,
# but a reader of the page has nothing to learn from its keys, so the page leaves it out.
PUBLISH_TAG = "publish"


def without_tagged_cells(html: str, tag: str = PUBLISH_TAG) -> str:
    """The page without the cells tagged ``tag``, input and output."""
    cell_re = re.compile(r'<div[^>]*class="jp-Cell [^"]*\bcelltag_' + re.escape(tag) + r'(?=["\s])')
    out, pos = [], 0
    for cell in cell_re.finditer(html):
        if cell.start() < pos:
            continue
        out.append(html[pos : cell.start()])
        pos = element_end(html, cell.start(), "div")
    out.append(html[pos:])
    return "".join(out)
