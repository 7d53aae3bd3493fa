"""The built pages' markup: valid HTML, one <h1> a page, and words for every picture.

Every PlantUML diagram carries its description as the SVG's <title>, every
notebook plot as its <img alt>, and a build without one fails. The Nu HTML
Checker (vnu.jar, pinned through npm) finds no error that the site's own markup
causes. What axe-core finds in the browser, and how large diagram text is drawn,
is checked in ``test_browser.py``.
"""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
from pathlib import Path

from resnorm_site.a11y import describe_diagrams, describe_plots
from tests.conftest import ROOT

VNU = ROOT / "node_modules/vnu-jar/build/dist/vnu.jar"
PLACEHOLDER = "No description has been provided for this image"
TITLE = re.compile(r'<title id="([\w-]+)">([^<]+)</title>')

# Errors that come from Material for MkDocs' own templates, which the site uses as they
# are: (the checker's message, a pattern the offending markup matches, where it is from).
THEME_ERRORS = [
    (
        "Attribute “autocomplete” is only allowed when the input type is",
        r'<input class="md-toggle" data-md-toggle="(drawer|search)" type="checkbox"',
        "material/templates/base.html: the drawer and search toggles",
    ),
    (
        "Bad value “” for attribute “tabindex” on element “label”",
        r'<label class="md-nav__link[^"]*" for="__nav_[\w]+" id="__nav_[\w]+_label" tabindex="">',
        "material/templates/partials/nav-item.html: section labels of the navigation",
    ),
]


def _pages(site: Path) -> list[Path]:
    return sorted(p for p in site.rglob("*.html") if "assets" not in p.parts)


def _is_theme_error(message: dict) -> bool:
    return any(
        message["message"].startswith(text) and re.search(markup, message.get("extract", ""))
        for text, markup, _ in THEME_ERRORS
    )


def test_html_is_valid(built_site: Path):
    """vnu finds no error in any page but the listed ones that Material's templates cause."""
    java = shutil.which("java")
    assert java, "Java runs the Nu HTML Checker (the README's prerequisites)"
    assert VNU.is_file(), "vnu.jar comes from npm: run `npm ci` (or `make setup`)"
    proc = subprocess.run(
        [java, "-jar", str(VNU), "--errors-only", "--format", "json", "--skip-non-html"]
        + [str(p) for p in _pages(built_site)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    messages = json.loads(proc.stderr)["messages"]
    assert messages, "vnu reports the theme's errors, so it did check the pages"
    ours = [m for m in messages if not _is_theme_error(m)]
    found = [
        f"{m['url'].split(str(built_site))[-1]}:{m.get('lastLine')}: {m['message']}\n"
        f"    {m.get('extract', '').strip()[:160]}"
        for m in ours
    ]
    assert not found, f"{len(found)} error(s):\n" + "\n".join(found[:40])


def test_one_h1_per_page(built_site: Path):
    counts = {
        p.relative_to(built_site).as_posix(): len(re.findall(r"<h1\b", p.read_text("utf-8")))
        for p in _pages(built_site)
    }
    assert len(counts) >= 20
    wrong = {page: n for page, n in counts.items() if n != 1}
    assert not wrong, f"pages whose number of <h1> is not 1: {wrong}"


def test_no_empty_table_header(built_site: Path):
    empty = re.compile(r"<th\b[^>]*>(?:\s|<[^>]*>)*</th>")
    found = [p.relative_to(built_site).as_posix() for p in _pages(built_site)]
    found = [page for page in found if empty.search((built_site / page).read_text("utf-8"))]
    assert not found, f"tables with an empty header cell: {found}"


def test_every_diagram_has_a_title(built_site: Path):
    """Each PlantUML SVG: role="img", named by its first child, a non-empty <title>; no
    alt= or title= attribute (<svg> has neither); in a box named for the reader."""
    svg_tag = re.compile(r"<svg\b[^>]*\bclass=\"uml\"[^>]*>")
    diagrams, problems = 0, []
    for page in _pages(built_site):
        text = page.read_text("utf-8")
        for match in svg_tag.finditer(text):
            diagrams += 1
            tag, where = match.group(0), page.relative_to(built_site).as_posix()
            labelled = re.search(r'\brole="img" aria-labelledby="([\w-]+)"', tag)
            title = TITLE.match(text, match.end())
            if not (labelled and title and title.group(1) == labelled.group(1)):
                problems.append(f"{where}: {tag[:80]}... has no <title> naming it")
            if re.search(r"\s(alt|title)=", tag):
                problems.append(f"{where}: alt= or title= on <svg>")
            box = text[max(0, match.start() - 120) : match.start()]
            if not re.search(r'<div class="rn-diagram" role="region" aria-label="[^"]+">$', box):
                problems.append(f"{where}: a diagram outside its scrolling box")
    assert diagrams >= 12, "the diagrams are inline SVG"
    assert not problems, "\n".join(problems)


def test_every_plot_has_alt_text(built_site: Path):
    plots, problems = 0, []
    for page in _pages(built_site):
        text = page.read_text("utf-8")
        if 'class="jupyter-wrapper"' not in text:
            continue
        for img in re.findall(r"<img\b[^>]*>", text):
            plots += 1
            alt = re.search(r'\balt="([^"]*)"', img)
            if not alt or not html.unescape(alt.group(1)).strip() or PLACEHOLDER in img:
                problems.append(f"{page.relative_to(built_site)}: {img[:90]}")
    assert plots >= 13
    assert not problems, "plots without a description:\n" + "\n".join(problems)


def test_notebook_pages_keep_styles_out_of_the_body(built_site: Path):
    """No <style> in a page's body; every shared notebook stylesheet is CSS, not the repr()
    of a Python list."""
    in_body = [
        p.relative_to(built_site).as_posix()
        for p in _pages(built_site)
        if "<style" in p.read_text("utf-8").split("<body", 1)[-1]
    ]
    assert not in_body, f"<style> in the body of {in_body}"
    sheets = sorted((built_site / "assets/jupyter").glob("*.css"))
    assert sheets, "the notebook pages link shared stylesheets"
    not_css = [s.name for s in sheets if s.read_text("utf-8").lstrip().startswith("[")]
    assert not not_css, f"not CSS: {not_css}"


# --- The hook, on its own ------------------------------------------------------------

SVG = (
    '<p><svg xmlns="http://www.w3.org/2000/svg" contentStyleType="text/css" class="uml" '
    'alt="{alt}" title=""><defs /><g lengthAdjust="spacing"><text>A</text></g></svg></p>'
)


def test_a_diagram_description_becomes_its_title():
    warnings: list[str] = []
    out = describe_diagrams(
        SVG.format(alt="A &quot;to&quot; B &amp; C"), "page.md", "Diagram", warnings.append
    )
    assert out.startswith('<div class="rn-diagram" role="region" aria-label="Diagram"><svg ')
    assert out.endswith("</svg></div>"), "the box replaces the <p>, which cannot hold it"
    assert '<title id="rn-diagram-1-title">A "to" B &amp; C</title><defs />' in out
    assert 'role="img" aria-labelledby="rn-diagram-1-title"' in out
    for gone in (" alt=", " title=", "contentStyleType", "lengthAdjust"):
        assert gone not in out
    assert not warnings


def test_two_diagrams_on_a_page_share_no_id():
    """PlantUML numbers every diagram's entities from ent0001: each gets a prefix of its
    own, and its references to them follow."""
    one = (
        '<svg class="uml" alt="A" title=""><g id="ent0001"><use href="#ent0001"/></g>'
        '<path fill="url(#ent0001)"/><g id="ent00010"/></svg>'
    )
    out = describe_diagrams(one + one, "page.md", "Diagram", [].append)
    ids = re.findall(r'\bid="([^"]+)"', out)
    assert len(ids) == len(set(ids)) == 6, ids
    assert 'id="rn-d1-ent0001"' in out and 'href="#rn-d2-ent0001"' in out
    assert "url(#rn-d1-ent0001)" in out and 'id="rn-d2-ent00010"' in out


def test_a_diagram_without_description_is_a_warning():
    warnings: list[str] = []
    describe_diagrams(SVG.format(alt="uml diagram"), "page.md", "Diagram", warnings.append)
    assert len(warnings) == 1
    assert "page.md: PlantUML diagram 1 has no description" in warnings[0]


def test_plot_descriptions_follow_their_cells():
    img = f'<img alt="{PLACEHOLDER}" src="data:image/png;base64,AA">'
    page = (
        f'<div class="jp-Cell" id="cell-id=one">{img}</div>'
        f'<div class="jp-Cell" id="cell-id=two">{img}{img}</div>'
        f'<div class="jp-Cell" id="cell-id=three">{img}</div>'
    )
    cells = {
        "one": ("plot(a)", ["a & b"]),
        "two": ("plot(c); plot(d)", ["c", "d"]),
        "three": ("plot(e)", []),
    }
    warnings: list[str] = []
    out = describe_plots(page, cells, "nb.py", warnings.append)
    assert re.findall(r'alt="([^"]*)"', out) == ["a &amp; b", "c", "d", PLACEHOLDER]
    assert len(warnings) == 1
    assert "nb.py: plot 1 of the cell that starts 'plot(e)' has no description" in warnings[0]


# That a build fails on either is checked in tests/test_site.py
# (test_pictures_without_words_or_with_broken_plantuml_fail_the_build).
