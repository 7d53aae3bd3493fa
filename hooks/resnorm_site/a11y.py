"""Every diagram and every notebook plot says in words what it shows.

The words are written next to the source of the picture:

- a PlantUML diagram: the fence's ``alt="..."``, plantuml_markdown's option
  (```` ```plantuml alt="Post-LN: ..." ````). The inline ``<svg>`` gets it as its
  first child, ``<title>``, with ``role="img"`` and ``aria-labelledby``;
  plantuml_markdown's ``alt`` and ``title`` attributes, which ``<svg>`` does not
  have, are removed. The diagram sits in a box that scrolls sideways at the
  diagram's natural size instead of shrinking its text on a narrow screen.
- a notebook plot: the ``alt`` metadata of the cell that draws it, written on the
  cell's marker in the jupytext source (``# %% alt="..."``; a list of strings for
  a cell that draws several plots, in order). It replaces the placeholder that
  nbconvert puts in the plot's ``<img alt>``.

A diagram or a plot without one is reported through ``warn``, which the hook makes a
MkDocs warning: ``mkdocs build --strict`` fails. The same pass makes the generated
markup valid HTML: PlantUML's SVG 1.1 attributes that HTML's ``<svg>`` does not have,
the ``markdown="0"`` that md_in_html leaves on a raw block, and the copy buttons of
notebook cells, which get the role they act in.
"""

from __future__ import annotations

import html as html_lib
import re
from collections.abc import Callable

from resnorm_site.htmltools import element_end

Warn = Callable[[str], None]

# plantuml_markdown's default alt text: the fence said nothing.
NO_DESCRIPTION = {"", "uml diagram"}
UML_SVG = re.compile(r"<svg\b[^>]*\bclass=\"uml\"[^>]*>")
ATTR = re.compile(r'\s(alt|title)="([^"]*)"')
# SVG 1.1 attributes that PlantUML writes and HTML's <svg> does not allow there.
SVG_ONLY_ATTR = re.compile(r'\s(?:contentStyleType|lengthAdjust)="[^"]*"')
PARAGRAPH_AROUND = re.compile(r"<p>\s*$")
PARAGRAPH_END = re.compile(r"\s*</p>")
MARKDOWN_ATTR = re.compile(r'(<[a-z][\w-]*\b[^<>]*?)\smarkdown="[^"]*"')
# mkdocs-jupyter's copy button of a code cell: an aria-label on an element without a
# role (and, in 0.26.3 and 0.27.0, a stray "," attribute). Its script makes it a button.
CLIPBOARD = re.compile(r'<clipboard-copy\b(?:\s+,="")?\s+aria-label="[^"]*"')
NBCONVERT_PLACEHOLDER = 'alt="No description has been provided for this image"'
CELL_START = re.compile(r'<div\b[^>]*\bid="cell-id=([^"]+)"')
IMG = re.compile(r"<img\b[^>]*>")


SVG_ID = re.compile(r'\bid="([^"]+)"')


def own_ids(svg: str, prefix: str) -> str:
    """A diagram's ids (PlantUML numbers each diagram's from ent0001) with a prefix of its
    own, and its references to them, so that two diagrams on a page share no id."""
    ids = set(SVG_ID.findall(svg))
    if not ids:
        return svg
    names = "|".join(re.escape(i) for i in sorted(ids, key=len, reverse=True))
    svg = re.sub(rf'\bid="({names})"', lambda m: f'id="{prefix}{m.group(1)}"', svg)
    return re.sub(rf"#({names})\b", lambda m: f"#{prefix}{m.group(1)}", svg)


def describe_diagrams(html: str, where: str, region_label: str, warn: Warn) -> str:
    """Each PlantUML <svg>: its fence's alt text as <title>, role="img", in a scroll box."""
    out, pos = [], 0
    for count, match in enumerate(UML_SVG.finditer(html), start=1):
        tag = match.group(0)
        attrs = dict(ATTR.findall(tag))
        description = html_lib.unescape(attrs.get("alt", "")).strip()
        if description in NO_DESCRIPTION:
            warn(
                f"{where}: PlantUML diagram {count} has no description; write what it shows "
                'in the fence: ```plantuml alt="..."'
            )
        end = element_end(html, match.start(), "svg")
        title_id = f"rn-diagram-{count}-title"
        tag = SVG_ONLY_ATTR.sub("", ATTR.sub("", tag))
        tag = tag[:-1] + f' role="img" aria-labelledby="{title_id}">'
        title = f'<title id="{title_id}">{html_lib.escape(description, quote=False)}</title>'
        body = own_ids(SVG_ONLY_ATTR.sub("", html[match.end() : end]), f"rn-d{count}-")
        box = f'<div class="rn-diagram" role="region" aria-label="{region_label}">'
        before = html[pos : match.start()]
        # Markdown puts the diagram in a <p>, which cannot hold the <div>: the box replaces it.
        around = PARAGRAPH_AROUND.search(before)
        after = PARAGRAPH_END.match(html, end)
        if around and after:
            before = before[: around.start()]
            end = after.end()
        out.append(before)
        out.append(box + tag + title + body + "</div>")
        pos = end
    out.append(html[pos:])
    return "".join(out)


def plot_descriptions(notebook) -> dict[str, tuple[str, list[str]]]:
    """Cell id -> (the cell's first line, the alt text of each plot it draws)."""
    cells = {}
    for cell in notebook.cells:
        alt = cell.get("metadata", {}).get("alt", [])
        texts = [alt] if isinstance(alt, str) else list(alt)
        first = next((line for line in cell.get("source", "").splitlines() if line.strip()), "")
        cells[cell.get("id", "")] = (first, texts)
    return cells


def describe_plots(html: str, cells: dict[str, tuple[str, list[str]]], where: str, warn: Warn):
    """Put each cell's alt text into its plots' <img alt>, in place of nbconvert's placeholder."""
    starts = [(m.start(), m.group(1)) for m in CELL_START.finditer(html)]
    drawn: dict[str, int] = {}
    missing = []

    def owner(index: int) -> str:
        cell = ""
        for start, cell_id in starts:
            if start > index:
                break
            cell = cell_id
        return cell

    def replace(match: re.Match) -> str:
        tag = match.group(0)
        if NBCONVERT_PLACEHOLDER not in tag:
            return tag
        cell = owner(match.start())
        n = drawn[cell] = drawn.get(cell, 0) + 1
        texts = cells.get(cell, ("", []))[1]
        text = texts[n - 1].strip() if n <= len(texts) else ""
        if not text:
            missing.append((cell, n))
            return tag
        return tag.replace(NBCONVERT_PLACEHOLDER, f'alt="{html_lib.escape(text)}"')

    html = IMG.sub(replace, html)
    for cell, n in missing:
        warn(
            f"{where}: plot {n} of the cell that starts {cells.get(cell, ('?', []))[0]!r} has "
            "no description; write what it shows on the cell's marker in the notebook "
            'source: # %% alt="..." (a list of strings for a cell that draws several plots)'
        )
    for cell, (first, texts) in cells.items():
        if cell in drawn and len(texts) > drawn[cell]:
            warn(
                f"{where}: the cell that starts {first!r} has {len(texts)} alt texts for "
                f"{drawn[cell]} plot(s)"
            )
    return html


def without_markdown_attr(html: str) -> str:
    return MARKDOWN_ATTR.sub(r"\1", html)


def copy_buttons(html: str, label: str) -> str:
    """Notebook cells' copy buttons as buttons, named in the page's language."""
    return CLIPBOARD.sub(f'<clipboard-copy role="button" aria-label="{label}"', html)
