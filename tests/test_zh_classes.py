"""Classes of error in the Chinese edition, looked for on every Chinese page's prose.

Each check reads what a reader reads as prose (tests/terms.py masks fenced code, inline
code, math, HTML comments, link targets, heading attributes and placeholders; bare URLs
are masked here too) and fails on any instance, so a new page is held to the same rules:

- **n 倍 that changes the number.** 「多 n 倍」「多用 n 倍」「多了 n 倍」「高出 n 倍」「多出 n 倍」
  「增加了 n 倍」 read, in normative Chinese, as (n+1)×. An English *n×* or *n times more* is
  「n 倍」「是原来的 n 倍」「用 n 倍的……」. 「最多 n 倍」「差不多 n 倍」 (at most, about) are fine.
- **有效数字 for bits.** 有效数字 means significant decimal digits; the handbook speaks of
  bits of a float's significand: 「8 位有效位」「有效位数」「比特」.
- **Size abbreviations in prose.** A size is written in Chinese units: 「32 亿」「1 万亿」,
  never 3.2B, 27B, 1T, 340M. The rule for model names: a size that continues a name in
  Latin letters (「Llama 3 8B」「GLM-130B」「Qwen3-32B」「Gemma 2 9B」) is part of the name and
  stays as the English writes it; a size whose run of Latin text starts with the number
  itself (after Chinese text or punctuation: 「共 1T 参数」「最大 3.2B 的规模」「9B 和 27B」) is a
  size and must be written in Chinese units. Step counts (12k 步) are not sizes and are
  left to review.
- **One thousands-separator style per page.** A page that writes 「10,000 层」 does not also
  write 「1000 层」. Years (1900–2099), arXiv ids and version numbers (a number beside a
  dot), page numbers (「119:4475–4483」), numbers glued to Latin letters (names, hex),
  numbers in a run of English (a title's 「to 1,000 Layers」) and the digits before 万/亿
  (「4560 亿」) are not counted.
- **One equation-number form.** The house form is 「式 (3)」「式 (9)–(12)」 (tests/cjk_spaces.py);
  「式 4」 is flagged wherever it stands.
- **No space before a full-width quotation mark** (「DyT “大多……”」 is 「DyT“大多……”」): a
  space or tab between a character and “ ” ‘ ’.
- **Places in a source listed with 、.** A list of places in one source (「§3.1、§5.4」
  「摘要、§5」「§5.1、图 4、表 2」「§3.2（预热）、§3.3」) is separated by the enumeration comma
  、, as Chinese lists items of one kind, a gloss in parentheses or not; 「§3.1，§5.4」
  reads as two clauses. The comma stays between different kinds of item
  (「arXiv 1706.03762，§3.1」).
- **et al. and 等人 not mixed.** A page's prose, outside its list of sources (the
  ``{ #sources }`` section, whose entries are bibliographic), uses 等人 if it uses either;
  a page whose prose has both fails. The bibliography (``docs/reference/references.zh.md``)
  is all entries of sources and is not looked at.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests import terms
from tests.conftest import ROOT

PAGES = terms.chinese_pages()
BIBLIOGRAPHY = terms.DOCS / "reference" / "references.zh.md"
URL = re.compile(r"https?://\S+")
SOURCES_HEADING = re.compile(r"^## [^\n]*\{ *#sources *\}[^\n]*", re.M)
CJK = r"\u3000-\u303f\u3400-\u9fff\uff00-\uffef"


def _name(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def page_prose(page: Path) -> str:
    """A page's prose; the glossary without its usage table and its English column."""
    markdown = terms.markdown_of(page)
    if page.resolve() == terms.GLOSSARY.resolve():
        start, end = terms.usage_section(markdown)
        markdown = terms.mask_column(markdown, "English")
        markdown = markdown[:start] + re.sub(r"[^\n]", "\0", markdown[start:end]) + markdown[end:]
    return prose_of(markdown)


def prose_of(markdown: str) -> str:
    """A page's prose with NULs for what is not prose, newlines kept (tests/terms.py); the
    heading of the list of sources is marked 〔sources〕 (its anchor is masked as not prose)."""
    markdown = SOURCES_HEADING.sub(lambda m: m.group(0) + "〔sources〕", markdown)
    text = terms.prose(markdown)
    return URL.sub(lambda m: "\0" * len(m.group(0)), text)


def _line(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def _shown(text: str, start: int, end: int) -> str:
    a = max(0, start - 8)
    return text[a : end + 4].replace("\0", "…").replace("\n", "⏎")


# --- n 倍 --------------------------------------------------------------------------------

TIMES = re.compile(
    r"(?<![最差至许不])(?:多用|多了|多出|高出|高了|增加了|增长了|大了|多)[ \t]*"
    r"(?:\d[\d.,]*|\0+|[一二两三四五六七八九十几数]+)[ \t]*倍"
)


def wrong_times(text: str) -> list[tuple[int, str]]:
    return [
        (_line(text, m.start()), _shown(text, m.start(), m.end())) for m in TIMES.finditer(text)
    ]


# --- 有效数字 ------------------------------------------------------------------------------


def decimal_digits(text: str) -> list[tuple[int, str]]:
    return [
        (_line(text, m.start()), _shown(text, m.start(), m.end()))
        for m in re.finditer(r"有效数字", text)
    ]


# --- sizes ---------------------------------------------------------------------------------

SIZE = re.compile(r"(?<![A-Za-z0-9_.\-])(\d+(?:\.\d+)?)[ \t]?([BMT])(?![A-Za-z0-9])")
LIST_ITEM = re.compile(r"([A-Za-z0-9.\-]+)[ \t]*(?:、|和|与|或|及|/|,)[ \t]*$")
PURE_SIZE = re.compile(r"\d+(?:\.\d+)?[BMT]")
LATIN_RUN = re.compile(rf"[^{CJK}\0\n（）()，。：；、“”]*$")


def sizes(text: str) -> list[tuple[int, str]]:
    """Sizes in Latin abbreviations that do not continue a model's name (see the module's
    docstring): the Latin run before the number has no letter."""
    found = []
    for m in SIZE.finditer(text):
        before = text[: m.start()]
        if before.endswith("“") and text[m.end() : m.end() + 1] == "”":
            continue  # a checkpoint's label, quoted: “124M”
        while (item := LIST_ITEM.search(before)) and PURE_SIZE.fullmatch(item.group(1)):
            before = before[: item.start()]  # 「9B 和 27B」: back over the sizes of a list
        if (item := LIST_ITEM.search(before)) and re.search(r"[A-Za-z]", item.group(1)):
            continue  # 「Gemma 4 E2B、E4B、31B」: a list of a family's checkpoint names
        if re.search(r"[A-Za-z]", LATIN_RUN.search(before).group(0)):
            continue  # 「Llama 3 8B」: the end of a model's name
        found.append((_line(text, m.start()), _shown(text, m.start(), m.end())))
    return found


# --- thousands separators ----------------------------------------------------------------

GROUPED = re.compile(r"(?<![A-Za-z0-9_.,])\d{1,3}(?:,\d{3})+(?![A-Za-z0-9_,]|\.\d)")
PLAIN = re.compile(r"(?<![A-Za-z0-9_.,\-/#:])\d{4,}(?![A-Za-z0-9_,]|\.\d|[ \t]*[万亿])")


def separators(text: str) -> list[tuple[int, str]]:
    """The plain numbers of four digits or more on a page that also groups them with commas
    (or the grouped ones, if they are fewer), not counting years."""

    def english(m: re.Match) -> bool:  # a title's 「to 1,000 Layers」
        return bool(re.search(r"[A-Za-z]", LATIN_RUN.search(text[: m.start()]).group(0)))

    grouped = [m for m in GROUPED.finditer(text) if not english(m)]
    plain = [
        m for m in PLAIN.finditer(text) if not 1900 <= int(m.group(0)) <= 2099 and not english(m)
    ]
    if not grouped or not plain:
        return []
    odd = plain if len(plain) <= len(grouped) else grouped
    return [(_line(text, m.start()), _shown(text, m.start(), m.end())) for m in odd]


# --- equation numbers --------------------------------------------------------------------

BARE_EQUATION = re.compile(r"(?<!分)式[ \t]*\d")  # 连分式 7.1.1 is a section


def equation_numbers(text: str) -> list[tuple[int, str]]:
    return [
        (_line(text, m.start()), _shown(text, m.start(), m.end()))
        for m in BARE_EQUATION.finditer(text)
    ]


# --- quotation marks ---------------------------------------------------------------------

SPACED_QUOTE = re.compile(r"(?<=[^\s\0|])[ \t]+[“”‘’]")  # a table cell may open with one


def spaced_quotes(text: str) -> list[tuple[int, str]]:
    return [
        (_line(text, m.start()), _shown(text, m.start(), m.end()))
        for m in SPACED_QUOTE.finditer(text)
    ]


# --- places in a source -------------------------------------------------------------------

PLACE = r"(?:§\d[\d.–-]*|摘要|[表图] [\dA-Z][\d.–-]*|附录 [A-Z][\d.]*)"
# a place may carry a gloss in parentheses (「§3.2（预热，用 Adam）」), one level nested
GLOSS = r"(?:（[^（）\n]*(?:（[^（）\n]*）[^（）\n]*)*）)?"
PLACES_WITH_COMMAS = re.compile(PLACE + GLOSS + r"(?:，" + PLACE + GLOSS + r")+")


def place_lists(text: str) -> list[tuple[int, str]]:
    """Each list of places in a source (sections, figures, tables, the abstract) whose items
    are separated by 「，」 instead of 「、」."""
    return [
        (_line(text, m.start()), _shown(text, m.start(), m.end()))
        for m in PLACES_WITH_COMMAS.finditer(text)
    ]


# --- et al. ------------------------------------------------------------------------------

SOURCES = re.compile(r"^## [^\n]*〔sources〕[^\n]*\n.*?(?=^## |\Z)", re.M | re.S)


def mixed_et_al(text: str) -> list[tuple[int, str]]:
    """Each 「et al.」 of a page's prose that also writes 等人 (sources list left out)."""
    body = SOURCES.sub(lambda m: re.sub(r"[^\n]", "\0", m.group(0)), text)
    if "等人" not in body:
        return []
    return [
        (_line(body, m.start()), _shown(body, m.start(), m.end()))
        for m in re.finditer(r"et al\.", body)
    ]


CHECKS = {
    "n-times": (wrong_times, "「多 n 倍」 reads as (n+1)×: write 「n 倍」 or 「是原来的 n 倍」"),
    "significant-digits": (decimal_digits, "有效数字 are decimal digits: bits are 有效位 / 比特"),
    "size-abbreviation": (sizes, "a size in prose is written 32 亿, not 3.2B"),
    "thousands-separator": (separators, "one thousands-separator style per page"),
    "equation-number": (equation_numbers, "equation numbers are written 式 (3)"),
    "space-before-quote": (spaced_quotes, "no space before a full-width quotation mark"),
    "et-al": (mixed_et_al, "et al. and 等人 on one page: write 等人"),
    "place-list": (place_lists, "places in one source are listed with 、: §3.1、§5.4"),
}
CASES = [
    (kind, page)
    for kind in CHECKS
    for page in PAGES
    if not (kind == "et-al" and page.resolve() == BIBLIOGRAPHY.resolve())
]


@pytest.mark.parametrize(
    ("kind", "page"), [pytest.param(k, p, id=f"{k}:{_name(p)}") for k, p in CASES]
)
def test_no_instance_of_the_class(kind: str, page: Path):
    check, rule = CHECKS[kind]
    found = check(page_prose(page))
    assert not found, f"{rule}:\n" + "\n".join(f"{_name(page)}:{n}: {s}" for n, s in found)


# --- each check bites, and leaves alone what it should ------------------------------------


@pytest.mark.parametrize(
    ("kind", "bad", "good"),
    [
        ("n-times", "基线要多用 1.25 倍算力。", "基线要用 1.25 倍的算力，最多 2 倍。"),
        ("n-times", "流量多了 $n$ 倍。", "流量是原来的 $n$ 倍。"),
        ("n-times", "高出 3 倍。", "差不多 3 倍。"),
        ("significant-digits", "bf16 有 8 位有效数字。", "bf16 有 8 位有效位。"),
        ("size-abbreviation", "最大 3.2B 的规模。", "最大 32 亿参数的规模。"),
        ("size-abbreviation", "共 1T 参数、激活 32B。", "Llama 3 8B 和 GLM-130B、Qwen3-32B。"),
        (
            "thousands-separator",
            "1000 层，10,000 层。",
            "1,000 层，10,000 层，2024 年，arXiv 2002.04745。",
        ),
        ("equation-number", "见式 4。", "见式 (4) 和式 (9)–(12)，`式 4` 是代码。"),
        ("space-before-quote", "DyT “大多”如此。", "DyT“大多”如此。\n“开头”不算。"),
        ("place-list", "见 arXiv 1706.03762，§3.1，§5.4。", "见 arXiv 1706.03762，§3.1、§5.4。"),
        ("place-list", "摘要，§5（表 4，图 6）。", "摘要、§5（表 4、图 6），共 3 层。"),
        ("place-list", "§3.2（预热，用 Adam），§3.3。", "§3.2（预热，用 Adam）、§3.3。"),
        (
            "et-al",
            "Henry et al. 提出，Chowdhery 等人沿用。",
            "Henry 等人提出。\n\n## 参考来源 { #sources }\n\n- Henry et al. 2020\n",
        ),
    ],
)
def test_a_planted_instance_is_found(kind: str, bad: str, good: str):
    check = CHECKS[kind][0]
    assert check(prose_of(bad)), bad
    assert not check(prose_of(good)), good


def test_code_math_and_urls_are_not_prose():
    page = (
        "```python\n# 多用 2 倍, 3.2B, 1000 and 10,000\n```\n"
        "`多 2 倍` $3.2B$ 见 https://example.com/3B 与 [链接](https://x.org/多了2倍)。\n"
    )
    text = prose_of(page)
    assert not any(check(text) for check, _ in CHECKS.values())


# --- one Chinese heading for each recurring English heading -------------------------------

HEADING = re.compile(r"^(#{2,4}) (.*?)[ \t]*(?:\{[^}\n]*\})?[ \t]*$", re.M)


def _headings(markdown: str) -> list[str]:
    return [m.group(2) for m in HEADING.finditer(terms.FENCE.sub(terms._blank, markdown))]


def renderings() -> dict[str, dict[str, list[str]]]:
    """English heading → its Chinese renderings → the Chinese pages that use each, from the
    pages' headings paired in order (tests/test_i18n.py checks they pair)."""
    found: dict[str, dict[str, list[str]]] = {}
    for page in PAGES:
        english = page.with_name(page.name.replace(".zh.", "."))
        if not english.is_file():
            continue
        en_heads, zh_heads = (
            _headings(terms.markdown_of(english)),
            _headings(terms.markdown_of(page)),
        )
        if len(en_heads) != len(zh_heads):
            continue  # tests/test_i18n.py reports it
        pairs = zip(en_heads, zh_heads, strict=True)
        for en, zh in pairs:
            found.setdefault(en, {}).setdefault(zh, []).append(_name(page))
    return found


def test_one_chinese_heading_for_each_english_heading():
    """「Sources」 is 参考来源 on every page, 「When to use it, and what it costs」 is
    什么时候用，代价是什么 on every page, and so on."""
    split = {en: zh for en, zh in renderings().items() if len(zh) > 1}
    assert not split, "\n".join(f"{en!r}: {zh}" for en, zh in split.items())


def test_recurring_headings_are_paired():
    found = renderings()
    assert set(found["Sources"]) == {"参考来源"}
    assert len(found["Sources"]["参考来源"]) >= 20
