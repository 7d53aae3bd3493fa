"""Teach first: a built page shows open only the code it explains.

Measured on the built site, in both languages: no code block (code or its output, in a
Markdown page or a notebook) longer than ``OPEN_LINES`` lines is open when the page
loads; a longer one sits in a closed ``<details>`` or is a download. An excerpt shows
the very lines of the module the site serves for download, under the line numbers its
title names.
"""

from __future__ import annotations

import re
from functools import cache
from html.parser import HTMLParser
from pathlib import Path

import pytest

from resnorm_site import excerpts
from tests import codeblocks
from tests.test_codeblocks import OPEN_LINES

SNIPPETS = codeblocks.SNIPPETS
TITLE = re.compile(r"^(?P<file>\w+\.py)(?:, lines |，第 )(?P<first>\d+)–(?P<last>\d+)(?: 行)?$")


class _Blocks(HTMLParser):
    """One pass over a page: the text of every <pre> that no closed <details> hides, and
    each code block's title (Material's ``span.filename``) with the <pre> after it."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.open_pres: list[str] = []
        self.titled: list[tuple[str, str]] = []
        self._details: list[bool] = []  # one entry per <details> we are in: is it closed?
        self._pre: list[str] | None = None
        self._title: list[str] | None = None
        self._last_title: str | None = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "details":
            self._details.append("open" not in attrs)
        elif tag == "pre":
            self._pre = []
        elif tag == "span" and "filename" in (attrs.get("class") or "").split():
            self._title = []

    def handle_endtag(self, tag):
        if tag == "details" and self._details:
            self._details.pop()
        elif tag == "pre" and self._pre is not None:
            text = "".join(self._pre)
            if not any(self._details):
                self.open_pres.append(text)
            if self._last_title is not None:
                self.titled.append((self._last_title, text))
                self._last_title = None
            self._pre = None
        elif tag == "span" and self._title is not None:
            self._last_title, self._title = "".join(self._title).strip(), None

    def handle_data(self, data):
        if self._pre is not None:
            self._pre.append(data)
        if self._title is not None:
            self._title.append(data)


@cache
def _read(page: Path) -> _Blocks:
    blocks = _Blocks()
    blocks.feed(page.read_text(encoding="utf-8"))
    blocks.close()
    return blocks


def _pages(site: Path) -> list[Path]:
    return [
        p for p in sorted(site.rglob("index.html")) if "search" not in p.relative_to(site).parts
    ]


def _open_blocks(html: str) -> list[tuple[int, str]]:
    """(lines, first line) of every <pre> on the page that no closed <details> hides."""
    blocks = _Blocks()
    blocks.feed(html)
    return _lengths(blocks)


def _lengths(blocks: _Blocks) -> list[tuple[int, str]]:
    out = []
    for text in blocks.open_pres:
        lines = text.rstrip("\n").splitlines()
        out.append((len(lines), lines[0] if lines else ""))
    return out


def test_no_long_code_block_is_open_on_arrival(built_site: Path):
    too_long = []
    pages = _pages(built_site)
    assert len(pages) >= 70, "both languages' pages are measured"
    for page in pages:
        for lines, first in _lengths(_read(page)):
            if lines > OPEN_LINES:
                where = page.relative_to(built_site).parent.as_posix() or "/"
                too_long.append(f"{where}: {lines} lines, starting {first[:60]!r}")
    assert not too_long, "open code blocks over the limit:\n" + "\n".join(too_long)


def test_a_long_block_counts_unless_a_closed_details_holds_it():
    long = "<pre>" + "x\n" * (OPEN_LINES + 5) + "</pre>"
    assert _open_blocks(f"<main>{long}</main>")[0][0] == OPEN_LINES + 5
    assert _open_blocks(f"<details open><summary>s</summary>{long}</details>")
    assert not _open_blocks(f"<details><summary>s</summary><div>{long}</div></details>")
    nested = f"<details open><details><summary>s</summary>{long}</details></details>"
    assert not _open_blocks(nested)


def test_excerpts_show_the_modules_lines_under_their_numbers(built_site: Path):
    """Each excerpt on a built page is the module's lines first–last, byte for byte (as
    the served download holds them), in both languages."""
    seen = 0
    for page in _pages(built_site):
        for name, text in _read(page).titled:
            title = TITLE.match(name)
            if not title:
                continue
            served = built_site / "downloads" / title["file"]
            assert served.read_bytes() == (SNIPPETS / title["file"]).read_bytes()
            module = served.read_text(encoding="utf-8").splitlines()
            first, last = int(title["first"]), int(title["last"])
            assert text.rstrip("\n").splitlines() == module[first - 1 : last], f"{page}: {name}"
            seen += 1
    sources = [b for b in codeblocks.all_blocks() if b.excerpt]
    assert seen == len(sources), "every excerpt of the sources is found on its built page"


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_excerpt_titles_are_read_back(lang: str):
    first, last, _ = excerpts.locate("layer_norm.py", "LayerNorm")
    title = excerpts.TITLE[lang].format(file="layer_norm.py", first=first, last=last)
    assert TITLE.match(title).group("first", "last") == (str(first), str(last))
