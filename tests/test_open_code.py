"""Teach first: a built page shows open only the code it explains.

Measured on the built site, in both languages: no code block (code or its output, in a
Markdown page or a notebook) longer than ``OPEN_LINES`` lines is open when the page
loads; a longer one sits in a closed ``<details>`` or is a download. An excerpt shows
the very lines of the module the site serves for download, under the line numbers its
title names.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from bs4 import BeautifulSoup

from resnorm_site import excerpts
from tests import codeblocks
from tests.test_codeblocks import OPEN_LINES

SNIPPETS = codeblocks.ROOT / "snippets"
TITLE = re.compile(r"^(?P<file>\w+\.py)(?:, lines |，第 )(?P<first>\d+)–(?P<last>\d+)(?: 行)?$")


def _pages(site: Path) -> list[Path]:
    skip = {"404.html"}
    return [
        p
        for p in sorted(site.rglob("index.html"))
        if p.name not in skip and "search" not in p.relative_to(site).parts
    ]


def _open_blocks(html: str) -> list[tuple[int, str]]:
    """(lines, first line) of every <pre> on the page that no closed <details> hides."""
    soup = BeautifulSoup(html, "html.parser")
    found = []
    for pre in soup.find_all("pre"):
        if any(d.name == "details" and not d.has_attr("open") for d in pre.parents):
            continue
        if pre.find_parent(class_="linenodiv"):  # the line numbers beside an excerpt
            continue
        text = pre.get_text().rstrip("\n")
        found.append((len(text.splitlines()), text.splitlines()[0] if text else ""))
    return found


def test_no_long_code_block_is_open_on_arrival(built_site: Path):
    too_long = []
    pages = _pages(built_site)
    assert len(pages) >= 70, "both languages' pages are measured"
    for page in pages:
        for lines, first in _open_blocks(page.read_text(encoding="utf-8")):
            if lines > OPEN_LINES:
                where = page.relative_to(built_site).parent.as_posix() or "/"
                too_long.append(f"{where}: {lines} lines, starting {first[:60]!r}")
    assert not too_long, "open code blocks over the limit:\n" + "\n".join(too_long)


def test_a_long_block_counts_unless_a_closed_details_holds_it():
    long = "<pre>" + "x\n" * (OPEN_LINES + 5) + "</pre>"
    assert _open_blocks(f"<main>{long}</main>")[0][0] == OPEN_LINES + 5
    assert _open_blocks(f"<details open><summary>s</summary>{long}</details>")
    assert not _open_blocks(f"<details><summary>s</summary><div>{long}</div></details>")


def test_excerpts_show_the_modules_lines_under_their_numbers(built_site: Path):
    """Each excerpt on a built page is the module's lines first–last, byte for byte (as
    the served download holds them), in both languages."""
    seen = 0
    for page in _pages(built_site):
        soup = BeautifulSoup(page.read_text(encoding="utf-8"), "html.parser")
        for name in soup.select("span.filename"):
            title = TITLE.match(name.get_text().strip())
            if not title:
                continue
            served = built_site / "downloads" / title["file"]
            assert served.read_bytes() == (SNIPPETS / title["file"]).read_bytes()
            module = served.read_text(encoding="utf-8").splitlines()
            first, last = int(title["first"]), int(title["last"])
            block = name.find_parent(class_="highlight")
            code = block.find("td", class_="code") or block
            shown = code.find("pre").get_text().rstrip("\n").splitlines()
            assert shown == module[first - 1 : last], f"{page}: {name.get_text()}"
            seen += 1
    sources = [b for b in codeblocks.all_blocks() if b.excerpt]
    assert seen == len(sources), "every excerpt of the sources is found on its built page"


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_excerpt_titles_are_read_back(lang: str):
    first, last, _ = excerpts.locate("layer_norm.py", "LayerNorm")
    title = excerpts.TITLE[lang].format(file="layer_norm.py", first=first, last=last)
    assert TITLE.match(title).group("first", "last") == (str(first), str(last))
