"""The Chinese page says the same numbers as its English twin.

Each Chinese page (``x.zh.md``, a notebook's ``x.zh.py``) is paired with its English twin
and the numbers of their prose are compared as sets of values: every number, percentage
and multiplier the English prose states appears in the Chinese prose, and the Chinese
states none the English does not. Prose is what tests/terms.py leaves of a page (no
fenced code, inline code, math, comments, link targets, attributes, placeholders), here
also without bare URLs and footnote labels; a notebook's prose is its Markdown cells.

Equivalent forms are read to one value:

- digits with or without thousands separators: 1,000 = 1000;
- multipliers and percentages: 1.25× = 1.25 倍 = 1.25; 7% = 7%;
- sizes: 3.2B = 32 亿, 130B = 1300 亿, 1T = 1 万亿, 340M = 3.4 亿, 12k = 1.2 万;
  English words million/billion/trillion likewise;
- powers: 10^4 = 10⁴ (superscript digits), 1e-5;
- ranges 7%∼64%, 1.8–2.4: each end on its own.

What cannot be paired is listed, never passed over: a page whose sets differ fails with
the numbers found in one language only; a number that is right but cannot be matched by its
form is named in ``ALLOWED`` with its reason.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests import terms
from tests.conftest import ROOT

DOCS = ROOT / "docs"
URL = re.compile(r"https?://\S+")
INLINE_CODE = re.compile(r"`(?:[^`\n]|\n(?![ \t]*\n))+`")  # also over a line break
MATH = re.compile(r"\$(?:[^$\n]|\n(?![ \t#]*\n))+?\$")  # inline math over a line break
FOOTNOTE = re.compile(r"\[\^[^\]\s]+\]")
SUPERSCRIPT = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹⁻", "0123456789-")
SCALE = {
    "k": 1e3, "K": 1e3, "M": 1e6, "B": 1e9, "T": 1e12,
    "thousand": 1e3, "million": 1e6, "billion": 1e9, "trillion": 1e12,
    "万": 1e4, "亿": 1e8, "万亿": 1e12,
}  # fmt: skip
NUMBER = re.compile(
    r"(?<![A-Za-z0-9_.])(?P<n>\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?)"
    r"(?:(?P<pow>(?:\^|\*\*)\{?-?\d+\}?|[⁻⁰¹²³⁴⁵⁶⁷⁸⁹]+)|(?P<exp>e-?\d+))?"
    r"(?:[ \t]*(?P<cn>万亿|万|亿)|(?P<abbr>[kKMBT])(?![A-Za-z])"
    r"|[ \t]+(?P<word>thousand|million|billion|trillion)\b)?"
)

# (page, value as written by value_text) → why the number is in one language only.
ALLOWED: dict[tuple[str, str], str] = {
    ("docs/fast/rmsnorm-gpu.zh.md", "0"): "the English says the padding loads zeros, in words",
    (
        "docs/placement/qk-norm.zh.md",
        "0.5",
    ): "the English writes the default inside math: $= \\alpha = 0.5$",
    ("docs/reference/census.zh.md", "1"): "the English says the RMS stays at one, in words",
}


def prose(page: Path) -> str:
    """The prose of a page in either language, read alike. Unlike tests/terms.py, quotations
    of the five articles stay in (their numbers are the English's too), and inline code and
    math are found also where they run over a line break."""
    markdown = terms.markdown_of(page)
    if page.resolve() == terms.GLOSSARY.resolve():
        start, end = terms.usage_section(markdown)
        markdown = terms.mask_column(markdown, "English")
        markdown = markdown[:start] + re.sub(r"[^\n]", "\0", markdown[start:end]) + markdown[end:]
    elif page.resolve() == terms.GLOSSARY.with_name("glossary.md").resolve():
        start = markdown.find("{ #usage }")
        markdown = markdown if start < 0 else markdown[:start]
    text = terms.FENCE.sub(terms._blank, markdown)
    text = INLINE_CODE.sub(terms._blank, text)
    for pattern in terms.NOT_PROSE:
        if "[A-E]" not in pattern.pattern:  # the articles' quotations are prose here
            text = pattern.sub(terms._blank, text)
    text = URL.sub(lambda m: "\0" * len(m.group(0)), text)
    text = MATH.sub(lambda m: re.sub(r"[^\n]", "\0", m.group(0)), text)
    return FOOTNOTE.sub(lambda m: "\0" * len(m.group(0)), text)


def value_text(value: float) -> str:
    return f"{value:.10g}"


MONTHS = [
    "January", "February", "March", "April", "May", "June",
    "July", "August", "September", "October", "November", "December",
]  # fmt: skip
MONTH = re.compile(r"\b(" + "|".join(MONTHS) + r")\b")


def numbers(text: str) -> set[str]:
    """The values of the numbers of ``text`` (prose), each as :func:`value_text` writes it.
    An English month name counts as its number, as Chinese writes it (September → 9 月)."""
    found = {value_text(MONTHS.index(m[1]) + 1) for m in MONTH.finditer(text)}
    for m in NUMBER.finditer(text):
        value = float(m["n"].replace(",", ""))
        if m["pow"]:
            exponent = re.sub(r"[\^*{}]", "", m["pow"].translate(SUPERSCRIPT))
            value = value ** int(exponent) if exponent not in {"", "-"} else value
        elif m["exp"]:
            value = float(m["n"].replace(",", "") + m["exp"])
        scale = m["cn"] or m["abbr"] or m["word"]
        if scale:
            value *= SCALE[scale]
        found.add(value_text(value))
    return found


def _twin(page: Path) -> Path:
    return page.with_name(page.name.replace(".zh.", "."))


PAGES = [p for p in terms.chinese_pages() if _twin(p).is_file()]


def _name(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def differences(page: Path) -> tuple[list[str], list[str]]:
    """(numbers only the English states, numbers only the Chinese states), less ALLOWED."""
    name = _name(page)
    english, chinese = numbers(prose(_twin(page))), numbers(prose(page))
    only_en = sorted(v for v in english - chinese if (name, v) not in ALLOWED)
    only_zh = sorted(v for v in chinese - english if (name, v) not in ALLOWED)
    return only_en, only_zh


CASES = [pytest.param(page, id=_name(page)) for page in PAGES]


@pytest.mark.parametrize("page", CASES)
def test_the_chinese_states_the_english_numbers(page: Path):
    only_en, only_zh = differences(page)
    assert not only_en and not only_zh, (
        f"{_name(page)}: in the English only: {only_en}; in the Chinese only: {only_zh}"
    )


def test_the_allow_list_names_real_differences():
    """An ALLOWED entry names a page and a number that still differ; a stale one goes."""
    for (name, value), reason in ALLOWED.items():
        page = ROOT / name
        assert reason, (name, value)
        english, chinese = numbers(prose(_twin(page))), numbers(prose(page))
        assert value in english ^ chinese, f"{name}: {value} is no longer unpaired"


def test_every_chinese_page_has_a_twin():
    """A page without an English twin cannot be compared: there is none today."""
    assert [p for p in terms.chinese_pages() if not _twin(p).is_file()] == []


@pytest.mark.parametrize(
    ("english", "chinese"),
    [
        ("a 1.25× compute advantage", "1.25 倍的算力优势"),
        ("up to 3.2B parameters", "最大 32 亿参数"),
        ("130B and 1T parameters, 340M", "1300 亿和 1 万亿参数，3.4 亿"),
        ("at step 12k", "第 1.2 万步"),
        ("1,000 layers and 10,000", "1000 层和 10000"),
        ("reduces it by 7%∼64%", "减少 7%∼64%"),
        ("10^4 steps, 10⁻⁵", "10⁴ 步，10^-5"),
        ("2.5 million tokens", "250 万个词元"),
    ],
)
def test_equivalent_forms_are_one_value(english: str, chinese: str):
    assert numbers(english) == numbers(chinese), (numbers(english), numbers(chinese))


def test_a_changed_number_is_found():
    assert numbers("a 1.25× advantage") != numbers("多用 2.25 倍")
    assert numbers("3.2B") != numbers("3.2 亿")
