"""The Chinese pages quote the five articles in the articles' own words (tests/quotes.py)."""

from __future__ import annotations

import pytest

from tests import quotes
from tests.conftest import ROOT
from tests.terms import chinese_pages, notebook_markdown

ARTICLES = quotes.load()
CHINESE = chinese_pages()


def marked(page):
    """Each marked quotation of ``page``, with its file:line (a notebook's Markdown cells
    read line for line)."""
    text = page.read_text(encoding="utf-8")
    if page.suffix == ".py":
        text = notebook_markdown(text)
    for offset, quote, letters in quotes.quotations(text):
        line = text.count("\n", 0, offset) + 1
        yield f"{page.relative_to(ROOT).as_posix()}:{line}", quote, letters


FOUND = [q for page in CHINESE for q in marked(page)]


def test_the_five_articles_have_fingerprints():
    assert sorted(ARTICLES) == ["A", "B", "C", "D", "E"]
    assert all(len(article["grams"]) > 1000 for article in ARTICLES.values())


def test_the_pages_quote_the_articles():
    """The scanner finds the quotations (a page that stopped marking them would drop out)."""
    assert len(FOUND) >= 9, FOUND  # at least the nine a review found back-translated


@pytest.mark.parametrize(("where", "quote", "letters"), FOUND, ids=[f[0] for f in FOUND])
def test_a_quotation_is_the_articles_own_words(where, quote, letters):
    wrong = [x for x in letters if not quotes.verbatim(quote, ARTICLES[x])]
    assert not wrong, f"{where}: “{quote}” is not in article {', '.join(wrong)} word for word"


@pytest.mark.parametrize(
    ("quote", "letter", "ok"),
    [
        # the article's words, with width and spacing changed: still the same words
        ("可直接使用较大学习率并把 warm-up 步数缩短到 0–500", "B", True),
        ("训练峰值显存可再降 5-10%", "B", True),
        ("可直接使用较大学习率……缩短到 0-500", "B", True),
        # an English paraphrase translated back: not the article's words
        ("可以使用更大的学习率，预热 0–500 步即可", "B", False),
        ("能省掉 7–64% 的归一化浮点运算量", "B", False),
        ("两者显存相同", "D", False),
        # a word: its two characters side by side in the article, or not
        ("相同", "D", True),
        ("显同", "D", False),
        ("同", "D", False),
        # right words, wrong article
        ("可直接使用较大学习率并把 warm-up 步数缩短到 0-500", "A", False),
        ("", "B", False),
    ],
)
def test_the_check_tells_the_articles_words_from_a_back_translation(quote, letter, ok):
    assert quotes.verbatim(quote, ARTICLES[letter]) is ok


def test_a_marked_quotation_is_found_with_its_letters():
    text = "原文说“可直接使用较大学习率”[B]，另一篇说「相同」[B, D]；“无标记”不算。"
    assert [(q, ls) for _, q, ls in quotes.quotations(text)] == [
        ("可直接使用较大学习率", ["B"]),
        ("相同", ["B", "D"]),
    ]
