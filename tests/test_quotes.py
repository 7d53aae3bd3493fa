"""The Chinese pages quote the five articles in the articles' own words (tests/quotes.py)."""

from __future__ import annotations

import re

import pytest

from tests import quotes, terms
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


# --- no English sentence quoted in Chinese prose ------------------------------------------

BIBLIOGRAPHY = ROOT / "docs" / "reference" / "references.zh.md"


def without_sources(markdown: str) -> str:
    """``markdown`` with its sources section blanked: a title may stand there as its
    authors wrote it."""
    section = terms.sources_section(markdown)
    if section is None:
        return markdown
    a, b = section
    return markdown[:a] + re.sub(r"[^\n]", " ", markdown[a:b]) + markdown[b:]


def quoted_english(page) -> list[str]:
    text = without_sources(terms.markdown_of(page))
    if page.resolve() == terms.GLOSSARY.resolve():
        text = terms.mask_column(text, "English")
    prose = terms.prose(text)
    where = page.relative_to(ROOT).as_posix()
    return [
        f"{where}:{prose.count(chr(10), 0, offset) + 1}: “{run}”"
        for offset, run in quotes.english_quotations(prose)
    ]


@pytest.mark.parametrize("page", [p for p in CHINESE if p != BIBLIOGRAPHY], ids=lambda p: p.name)
def test_no_english_sentence_is_quoted_in_chinese_prose(page):
    """Prose says in Chinese what a source says; quoting the English and glossing it reads
    as a translation. Titles are set in italics; source lists and code are left alone."""
    found = quoted_english(page)
    assert not found, (
        f"{len(found)} English sentences quoted; write the Chinese in their place:\n"
        + "\n".join(found)
    )


@pytest.mark.parametrize(
    ("markdown", "found"),
    [
        # residual_streams.zh.py, as the re-review found it
        (
            "是为了“make the initialization of the hyper-connections\n  equivalent to the "
            "Pre-Norm residual connections”（让超连接的初始化等价于 Pre-Norm 残差连接）",
            ["make the initialization of the hyper-connections equivalent to the Pre-Norm "
             "residual connections"],
        ),
        ("这个连乘积“inevitably deviates from the identity mapping”（不可避免地偏离恒等映射）",
         ["inevitably deviates from the identity mapping"]),
        ("源码注释写着「unlike olmo, only on the head dim!」。",
         ["unlike olmo, only on the head dim"]),
        ('论文说 "we scale the weights of residual layers" 。',
         ["we scale the weights of residual layers"]),
        ("这个连乘积不可避免地偏离恒等映射。", []),
        ("称为“Add & Norm”的结构", []),  # a name
        ("标题是 *Attention Is All You Need: a long title here*。", []),  # a title, in italics
        ("代码 `“make the initialization of the hyper-connections”` 里。", []),  # code
        ("“the published version of it”", []),  # five words
    ],
    ids=["streams-30", "streams-50", "corner-brackets", "ascii-quotes", "chinese",
         "name", "title", "code", "five-words"],
)  # fmt: skip
def test_quoted_english_is_found(markdown, found):
    assert [run for _, run in quotes.english_quotations(terms.prose(markdown))] == found


def test_a_title_in_the_sources_section_is_not_prose():
    title = "“Identity Mappings in Deep Residual Networks”"
    page = (
        f"# 题\n\n正文。\n\n## 参考来源 {{ #sources }}\n\n- {title}，2016。\n\n"
        f"## 附录 {{ #appendix }}\n\n{title}\n"
    )
    prose = terms.prose(without_sources(page))
    assert [prose.count("\n", 0, o) + 1 for o, _ in quotes.english_quotations(prose)] == [11]
