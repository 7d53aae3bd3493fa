"""The Chinese edition stays in step with the English one.

Every English page (``docs/x/page.md``) and notebook (``docs/x/name.py``) has a
Chinese twin beside it (``page.zh.md``, ``name.zh.py``), built to ``/zh/``. A
twin translates the prose and nothing else: a page's code blocks are the English
page's byte for byte (so one run of each covers both), and a notebook twin's code
cells are empty, in the English notebook's places, for the build takes each from
``name.py``: they keep only a plot's translated alt text. A twin has as many
diagrams, figures and measured numbers, and the same heading anchors, so links
and the language switch land on the same section in either language.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import jupytext
import pytest

from resnorm_site.notebooks.source import DISPLAY_ONLY
from scripts.heading_ids import heading_ids
from tests import codeblocks
from tests.cjk_spaces import stray_spaces
from tests.conftest import ROOT

DOCS = ROOT / "docs"
NOTEBOOK_DIRS = ("notebooks", "experiments")
MEASURED = re.compile(r"\[\[measured:[\w-]+:[\w-]+\]\]")
FIGURE = re.compile(r"!\[[^\]]*\]\([^)]*\)|<img\b|<figure\b")
FENCE = re.compile(r"^([ \t]*)(`{3,}|~{3,}).*?^\1\2[ \t]*$", re.M | re.S)
MATH = re.compile(r"\$\$.*?\$\$|\$[^$\n]+\$|\\\(.*?\\\)", re.S)
CJK = re.compile(r"[\u4e00-\u9fff]")
LATIN = re.compile(r"[A-Za-z]")


def is_chinese(path: Path) -> bool:
    return path.stem.endswith(".zh")


def english_pages() -> list[Path]:
    pages = [p for p in DOCS.rglob("*.md") if not is_chinese(p)]
    for folder in NOTEBOOK_DIRS:
        pages += [p for p in (DOCS / folder).glob("*.py") if not is_chinese(p)]
    return sorted(pages)


def twin(page: Path) -> Path:
    return page.with_name(f"{page.stem}.zh{page.suffix}")


def english(page: Path) -> Path:
    return page.with_name(page.stem.removesuffix(".zh") + page.suffix)


def _name(page: Path) -> str:
    return page.relative_to(DOCS).as_posix()


PAGES = english_pages()
IDS = [_name(p) for p in PAGES]


def prose(text: str) -> str:
    """The text without code blocks, math, HTML comments, links' targets and tags."""
    text = FENCE.sub("", text)
    text = MATH.sub("", text)
    text = re.sub(r"<!--.*?-->|<[^>]+>|\]\([^)]*\)|`[^`]*`", "", text, flags=re.S)
    return text


def markdown_of(page: Path) -> str:
    """A page's Markdown: the page itself, or a notebook's Markdown cells."""
    if page.suffix == ".md":
        return page.read_text(encoding="utf-8")
    cells = jupytext.read(page).cells
    return "\n\n".join(c.source for c in cells if c.cell_type == "markdown")


def blocks(page: Path) -> tuple[list[tuple], int]:
    """A Markdown page's code blocks as they run (language, code, markers), and how many
    diagrams it has: a diagram's labels are translated, so only their number is compared."""
    found = codeblocks.parse(page)
    code = [
        (b.lang, b.source, b.cont, b.skip, b.is_output, b.expected_output is not None)
        for b in found
        if b.lang != "plantuml"
    ]
    return code, sum(b.lang == "plantuml" for b in found)


def test_the_pages_are_found():
    assert len(PAGES) >= 29
    assert {"index.md", "experiments/warmup.py", "experiments/claims.md"} <= set(IDS)


def test_headings_after_a_diagram_are_found():
    """A diagram's fence carries options; the headings after it are still headings."""
    page = (
        '# T\n\n```plantuml alt="A to B"\n@startuml\nA -> B\n@enduml\n```\n\n## After { #after }\n'
    )
    assert [anchor for _, anchor, _ in heading_ids(page)] == ["t", "after"]


def test_headings_after_an_excerpt_fence_are_found():
    page = '# T\n\n```python excerpt="resnorm.py:needs_final_norm"\n```\n\n## After { #after }\n'
    assert [anchor for _, anchor, _ in heading_ids(page)] == ["t", "after"]


@pytest.mark.parametrize("page", PAGES, ids=IDS)
def test_every_page_has_a_chinese_twin(page: Path):
    assert twin(page).is_file(), f"{page.relative_to(ROOT)} has no Chinese twin {twin(page).name}"


def test_every_chinese_page_has_an_english_one():
    chinese = [p for p in DOCS.rglob("*.zh.*") if p.suffix in {".md", ".py"}]
    orphans = [p.relative_to(ROOT).as_posix() for p in chinese if not english(p).is_file()]
    assert not orphans, f"Chinese pages without an English page: {orphans}"


@pytest.mark.parametrize("page", PAGES, ids=IDS)
def test_twin_has_the_same_anchors_numbers_and_figures(page: Path):
    zh = twin(page)
    if not zh.is_file():
        pytest.fail(f"no twin {zh.name}", pytrace=False)
    en_text, zh_text = markdown_of(page), markdown_of(zh)
    en_headings = [(level, anchor) for level, anchor, _ in heading_ids(en_text)]
    zh_headings = [(level, anchor) for level, anchor, _ in heading_ids(zh_text)]
    assert zh_headings == en_headings, (
        "headings differ (level, anchor); a Chinese heading carries its English twin's "
        "anchor, e.g. '## 设置 { #settings }': see scripts/heading_ids.py"
    )
    assert Counter(MEASURED.findall(zh_text)) == Counter(MEASURED.findall(en_text))
    assert len(FIGURE.findall(prose_with_images(zh_text))) == len(
        FIGURE.findall(prose_with_images(en_text))
    ), "the number of figures differs"


def prose_with_images(text: str) -> str:
    return MATH.sub("", FENCE.sub("", text))


@pytest.mark.parametrize("page", [p for p in PAGES if p.suffix == ".md"], ids=_name)
def test_twin_shows_the_same_code(page: Path):
    """Same blocks, same code, same markers; diagrams counted (their words are translated)."""
    zh = twin(page)
    if not zh.is_file():
        pytest.fail(f"no twin {zh.name}", pytrace=False)
    en_code, en_diagrams = blocks(page)
    zh_code, zh_diagrams = blocks(zh)
    assert zh_diagrams == en_diagrams, "the number of PlantUML diagrams differs"
    assert len(zh_code) == len(en_code), "the number of code blocks differs"
    for i, (a, b) in enumerate(zip(en_code, zh_code, strict=True)):
        assert a == b, f"code block {i + 1} differs from the English page's"


NOTEBOOKS = [p for p in PAGES if p.suffix == ".py"]


def read_twins(page: Path):
    zh = twin(page)
    if not zh.is_file():
        pytest.fail(f"no twin {zh.name}", pytrace=False)
    return jupytext.read(page), jupytext.read(zh)


def shape(option) -> tuple[str, int]:
    """One text, or a list of as many texts as the cell draws figures."""
    return ("list", len(option)) if isinstance(option, list) else ("text", 1)


def code_cell_problems(en_nb, zh_nb) -> list[str]:
    """What a twin's code cells carry beyond their display options, cell by cell."""
    en_code = [c for c in en_nb.cells if c.cell_type == "code"]
    zh_code = [c for c in zh_nb.cells if c.cell_type == "code"]
    if len(zh_code) != len(en_code):
        return [f"{len(zh_code)} code cells, the English notebook has {len(en_code)}"]
    problems = []
    for i, (en, zh) in enumerate(zip(en_code, zh_code, strict=True), start=1):
        if zh.source:
            problems.append(f"code cell {i} has code: {zh.source.splitlines()[0]!r}")
        if extra := sorted(set(zh.metadata) - set(DISPLAY_ONLY)):
            problems.append(f"code cell {i} has options {extra}; they come from the English cell")
        for key in DISPLAY_ONLY:
            if (key in zh.metadata) != (key in en.metadata):
                has = "has" if key in en.metadata else "has no"
                problems.append(f"code cell {i}: the English cell {has} {key}, the twin's not")
            elif key in en.metadata and shape(zh.metadata[key]) != shape(en.metadata[key]):
                problems.append(
                    f"code cell {i}: {key} is {shape(zh.metadata[key])}, "
                    f"the English cell's {shape(en.metadata[key])}"
                )
            texts = zh.metadata.get(key, [])
            texts = texts if isinstance(texts, list) else [texts]
            if not all(isinstance(t, str) and t.strip() for t in texts):
                problems.append(f"code cell {i}: {key} should be non-empty text, got {texts!r}")
    return problems


@pytest.mark.parametrize("page", NOTEBOOKS, ids=_name)
def test_notebook_twin_has_the_same_cells(page: Path):
    en_nb, zh_nb = read_twins(page)
    assert [c.cell_type for c in zh_nb.cells] == [c.cell_type for c in en_nb.cells]


@pytest.mark.parametrize("page", NOTEBOOKS, ids=_name)
def test_notebook_twin_code_cells_are_empty(page: Path):
    """The build takes the code and its options from the English notebook, so a code
    change is made once; a twin keeps only how a cell is shown (a plot's alt text)."""
    problems = code_cell_problems(*read_twins(page))
    assert not problems, f"{twin(page).name}: " + "; ".join(problems)


@pytest.mark.parametrize("page", NOTEBOOKS, ids=_name)
def test_notebook_twin_header_leaves_the_run_to_the_english_one(page: Path):
    en_nb, zh_nb = read_twins(page)
    assert "resnorm" not in zh_nb.metadata, "the resnorm block belongs to the English header"
    assert zh_nb.metadata.get("kernelspec") == en_nb.metadata.get("kernelspec")


# Pages that are mostly citations, whose titles and authors stay as published: there,
# the headings and the notes around the list are checked instead.
BIBLIOGRAPHIES = {"reference/references.md"}


@pytest.mark.parametrize("page", PAGES, ids=IDS)
def test_twin_is_written_in_chinese(page: Path):
    """Most of a twin's prose is Chinese (names such as Pre-LN stay Latin)."""
    zh = twin(page)
    if not zh.is_file():
        pytest.fail(f"no twin {zh.name}", pytrace=False)
    text = prose(markdown_of(zh))
    if page.relative_to(DOCS).as_posix() in BIBLIOGRAPHIES:
        text = "\n".join(t for _, _, t in heading_ids(markdown_of(zh)))
        text += "\n".join(line for line in prose(markdown_of(zh)).splitlines() if "*" not in line)
    cjk, latin = len(CJK.findall(text)), len(LATIN.findall(text))
    assert cjk >= 0.3 * (cjk + latin), f"{zh.name}: {cjk} Chinese vs {latin} Latin letters"


def test_a_drifted_twin_is_caught(tmp_path: Path):
    """The code comparison is not vacuous: a changed line in a twin fails it."""
    en = tmp_path / "page.md"
    en.write_text("# T\n\n```python\nprint(1)\n```\n", encoding="utf-8")
    zh = tmp_path / "page.zh.md"
    zh.write_text("# 标题 { #t }\n\n```python\nprint(2)\n```\n", encoding="utf-8")
    assert blocks(en)[0] != blocks(zh)[0]
    assert [a for _, a, _ in heading_ids(en.read_text())] == ["t"]
    assert [a for _, a, _ in heading_ids(zh.read_text())] == ["t"]


@pytest.mark.parametrize(
    ("cell", "problem"),
    [
        ('# %% alt="一幅图"\nprint(2)\n', "code cell 1 has code: 'print(2)'"),
        ('# %% alt="一幅图" tags=["x"]\n', "code cell 1 has options ['tags']"),
        ("# %%\n", "code cell 1: the English cell has alt, the twin's not"),
        ('# %% alt=["一幅图", "另一幅"]\n', "code cell 1: alt is ('list', 2)"),
    ],
    ids=["code", "tags", "no-alt", "two-alts"],
)
def test_a_notebook_twin_with_more_than_prose_is_caught(tmp_path: Path, cell: str, problem: str):
    """The code-cell check is not vacuous: a line added to a twin's code cell, or an
    option that is not the English cell's, fails it; the empty cell passes."""
    en = tmp_path / "nb.py"
    en.write_text('# %% [markdown]\n# # T\n\n# %% alt="a plot"\nprint(1)\n', encoding="utf-8")
    zh = tmp_path / "nb.zh.py"
    zh.write_text('# %% [markdown]\n# # 标题\n\n# %% alt="一幅图"\n', encoding="utf-8")
    assert code_cell_problems(jupytext.read(en), jupytext.read(zh)) == []
    zh.write_text(f"# %% [markdown]\n# # 标题\n\n{cell}", encoding="utf-8")
    problems = code_cell_problems(jupytext.read(en), jupytext.read(zh))
    assert len(problems) == 1 and problems[0].startswith(problem), problems


def test_no_space_between_two_chinese_characters_on_a_built_chinese_page(built_site: Path):
    """A browser shows whitespace between two Chinese characters as a gap in the sentence:
    a line break the build did not join (hooks/chinese_lines.py, notebooks/twin.py) or a
    typed space. Prose only: code, scripts, styles, diagrams and math are skipped
    (tests/cjk_spaces.py)."""
    pages = sorted((built_site / "zh").rglob("*.html"))
    assert len(pages) >= len(PAGES), "every page has a Chinese edition"
    found = [
        f"{page.relative_to(built_site).as_posix()}: {snippet}"
        for page in pages
        for snippet in stray_spaces(page.read_text(encoding="utf-8"))
    ]
    assert not found, f"{len(found)} spaces between two Chinese characters:\n" + "\n".join(found)
