"""Less to wade through: no page puts more than ``open_words.LIMIT`` words of prose in
front of its reader on arrival (code, math, folded parts and footnotes aside), and no
page leaves a note on how a source was read in its open text: such notes are footnotes."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests import open_words
from tests.conftest import ROOT

PAGES = open_words.english_pages()
ALL = PAGES + [
    p.with_name(f"{p.stem}.zh{p.suffix}")
    for p in PAGES
    if p.with_name(f"{p.stem}.zh{p.suffix}").is_file()
]


def _id(page: Path) -> str:
    return page.relative_to(ROOT / "docs").as_posix()


@pytest.mark.parametrize("page", PAGES, ids=_id)
def test_no_page_carries_more_open_words_than_the_limit(page: Path):
    words = open_words.open_words(page)
    assert words <= open_words.LIMIT, (
        f"{_id(page)} shows {words} words open on arrival (limit {open_words.LIMIT}): fold "
        "side material under a closed ??? note, or split the page"
    )


@pytest.mark.parametrize("page", ALL, ids=_id)
def test_notes_on_how_a_source_was_read_are_footnotes(page: Path):
    notes = open_words.provenance_notes(page)
    assert not notes, f"{_id(page)} says in its open text how a source was read: {notes}"


def test_the_count_leaves_out_code_math_folds_footnotes_and_link_targets():
    page = "\n".join(
        [
            "# Title here",
            "",
            "One two three [four](https://example.org/a/b/c) $x + y = z$.",
            "",
            "```python",
            "print('not counted at all')",
            "```",
            "",
            "$$",
            "a + b",
            "$$",
            "",
            '??? note "Five six"',
            "    Folded words are not counted.",
            "",
            "    ```python",
            "    x = 1",
            "    ```",
            "",
            '???+ note "Open"',
            "    Seven eight.",
            "",
            "Nine.[^n]",
            "",
            "[^n]: Read in a verbatim copy, which is not counted.",
            "    A second line.",
        ]
    )
    # "Title here", "One two three four", "Open", "Seven eight.", "Nine."
    assert open_words.count(open_words.prose(page)) == 11


def test_a_note_in_the_open_is_found_and_one_in_a_footnote_is_not(tmp_path: Path):
    page = tmp_path / "p.md"
    page.write_text(
        "The paper could not be read.[^a]\n\n[^a]: Only the abstract.\n", encoding="utf-8"
    )
    assert open_words.provenance_notes(page) == ["could not be read"]
    zh = tmp_path / "p.zh.md"
    zh.write_text("这篇论文没能读到全文。[^a]\n\n[^a]: 只读了摘要。\n", encoding="utf-8")
    assert open_words.provenance_notes(zh) == ["没能读到"]


NOTEBOOKS = [p for p in ALL if p.suffix == ".py"]


@pytest.mark.parametrize("page", NOTEBOOKS, ids=_id)
def test_a_notebook_has_no_footnote_a_page_would_not_render(page: Path):
    """nbconvert renders a notebook's Markdown without footnotes: a ``[^note]`` would show
    as typed, and the counter would take its definition for one folded away."""
    assert "[^" not in open_words.markdown_of(page), _id(page)
