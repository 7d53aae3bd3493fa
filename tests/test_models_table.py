"""The final-norm column of the model table, and what the pitfalls page says of it.

``reference/pitfalls.md#final-norm`` counts the Pre-LN rows of the table in
``reference/models.md`` that show a final norm, says none shows "no", and names
the rows that leave it open. The counts and names are read back from the table
here, in both languages, so that a row added, changed or contradicted there
makes the sentence fail instead of going stale.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = ROOT / "docs" / "reference"
COLUMNS = [
    "model", "placement", "norm", "eps", "final", "qk", "sinks", "cap", "residual", "source"
]  # fmt: skip
FOOTNOTE_MARK = re.compile(r"\[\^[^\]]+\]")
NUMBER_WORDS = {1: "one", 2: "two", 3: "three", 4: "four", 5: "five", 6: "six"}

# What a final-norm cell may say, per language: has one, has none, or leaves it open.
KINDS = {
    "en": {
        "yes": ("yes",),
        "no": ("no",),
        "not stated": ("not stated",),
        "not verified": ("not verified",),
    },
    "zh": {
        "yes": ("有",),
        "no": ("无", "没有"),
        "not stated": ("未说明",),
        "not verified": ("未核实",),
    },
}


def table_rows(page: Path) -> list[dict[str, str]]:
    """The rows of the page's first table (the one under "The table"), by column."""
    text = page.read_text(encoding="utf-8")
    start = text.index("{ #the-table }" if page.name.endswith(".zh.md") else "## The table")
    lines = text[start:].splitlines()[1:]
    first = next(i for i, line in enumerate(lines) if line.startswith("|"))
    table = []
    for line in lines[first:]:
        if not line.startswith("|"):
            break
        table.append(line)
    cells = [[c.strip() for c in line.strip().strip("|").split(" | ")] for line in table]
    header, body = cells[0], cells[2:]
    assert all(len(r) == len(header) for r in body), f"{page.name}: a row has a stray '|'"
    return [dict(zip(COLUMNS, r, strict=True)) for r in body]


def kind(cell: str, lang: str) -> str:
    cell = FOOTNOTE_MARK.sub("", cell).strip()
    # longest prefix first: "not stated" before "no", "没有" before "有"
    options = sorted(
        ((prefix, name) for name, prefixes in KINDS[lang].items() for prefix in prefixes),
        key=lambda p: -len(p[0]),
    )
    for prefix, name in options:
        if cell.startswith(prefix):
            return name
    raise AssertionError(f"final-norm cell {cell!r} is none of {sorted(KINDS[lang])}")


def pre_ln(rows: list[dict[str, str]]) -> list[dict[str, str]]:
    return [r for r in rows if r["placement"].startswith("Pre")]


def paragraph_with(page: Path, pattern: str) -> tuple[re.Match, str]:
    for para in page.read_text(encoding="utf-8").split("\n\n"):
        flat = " ".join(para.split())
        found = re.search(pattern, flat)
        if found:
            return found, flat
    raise AssertionError(f"{page.name}: no paragraph matches {pattern!r}")


EN_ROWS = table_rows(REFERENCE / "models.md")
ZH_ROWS = table_rows(REFERENCE / "models.zh.md")


def test_the_tables_are_read():
    assert len(EN_ROWS) >= 30

    def first(name):
        return re.split(r"[ （(,、]", name)[0]

    assert [first(r["model"]) for r in EN_ROWS] == [first(r["model"]) for r in ZH_ROWS]


@pytest.mark.parametrize("lang,rows", [("en", EN_ROWS), ("zh", ZH_ROWS)], ids=["en", "zh"])
def test_no_pre_ln_row_lacks_a_final_norm(lang, rows):
    """A Pre-LN stack needs one; a row that says it has none contradicts the pitfalls page."""
    lacking = [r["model"] for r in pre_ln(rows) if kind(r["final"], lang) == "no"]
    assert not lacking, f"Pre-LN rows with no final norm: {lacking}"


def test_both_languages_give_each_row_the_same_final_norm():
    en = [(r["placement"].startswith("Pre"), kind(r["final"], "en")) for r in EN_ROWS]
    zh = [(r["placement"].startswith("Pre"), kind(r["final"], "zh")) for r in ZH_ROWS]
    assert en == zh


def test_the_pitfalls_sentence_counts_the_table():
    rows = pre_ln(EN_ROWS)
    have = [r for r in rows if kind(r["final"], "en") == "yes"]
    found, para = paragraph_with(
        REFERENCE / "pitfalls.md",
        r"(\d+) of the (\d+) Pre-LN rows show a final norm and none shows \"no\"",
    )
    assert (int(found.group(1)), int(found.group(2))) == (len(have), len(rows))
    rest = [r for r in rows if r not in have]
    if rest:
        assert f"the other {NUMBER_WORDS[len(rest)]}" in para
    for r in rest:
        name = r["model"].split(" (")[0]
        assert name in para, f"the sentence does not name {name}, whose row gives no final norm"
        assert kind(r["final"], "en") in para


def test_the_chinese_sentence_counts_the_table():
    rows = pre_ln(ZH_ROWS)
    have = [r for r in rows if kind(r["final"], "zh") == "yes"]
    found, para = paragraph_with(
        REFERENCE / "pitfalls.zh.md", r"(\d+) 个 Pre-LN 行中有 (\d+) 行列出了最终归一化"
    )
    assert (int(found.group(2)), int(found.group(1))) == (len(have), len(rows))
    assert "没有一行写“无”" in para
    for r in rows:
        if r not in have:
            name = r["model"].split("（")[0]
            assert name in para, f"the sentence does not name {name}"


def test_a_contradicting_row_is_caught():
    """A Pre-LN row that says "no" fails; one that says "not stated" does not."""
    row = {"placement": "Pre", "final": "no"}
    assert [r for r in pre_ln([row]) if kind(r["final"], "en") == "no"]
    assert kind("not stated", "en") == "not stated"
    assert kind("not verified[^k3-config]", "en") == "not verified"
    assert kind("没有额外的", "zh") == "no" and kind("有，`norm`", "zh") == "yes"
    with pytest.raises(AssertionError):
        kind("unclear", "en")
