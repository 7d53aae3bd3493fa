"""One term per concept, and one name per page, in the Chinese edition.

The glossary's usage table (``docs/reference/glossary.zh.md``, ``## 用词约定 { #usage }``)
is the single source of terms: its 不用 column lists the variants no Chinese page uses,
and the scan (tests/terms.py) looks for them in every page's prose. A page's name is the
same in the navigation (mkdocs.yml's nav, translated by the i18n plugin's
``nav_translations``) and in the page's H1, which may add a subtitle after 「：」 or 「（」.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests import terms
from tests.conftest import ROOT

DOCS = ROOT / "docs"
ROWS = terms.usage_table(terms.GLOSSARY.read_text(encoding="utf-8"))
PAGES = terms.chinese_pages()


def _name(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def test_the_usage_table_is_read():
    """The table has rows, each with a term to use, and variants to look for."""
    assert len(ROWS) >= 20, f"{len(ROWS)} rows in the usage table"
    assert all(row.use for row in ROWS), [row.concept for row in ROWS if not row.use]
    variants = [v for row in ROWS for v in row.avoid]
    assert {"放置方式", "源文章", "整个堆叠", "核函数"} <= set(variants)
    assert len(variants) == len(set(variants)), "a variant is listed twice"
    assert len(PAGES) >= 29


@pytest.mark.parametrize("page", PAGES, ids=_name)
def test_no_variant_the_glossary_rules_out(page: Path):
    hits = terms.find_variants(terms.page_prose(page), ROWS)
    assert not hits, f"{len(hits)} variants:\n" + "\n".join(h.message(_name(page)) for h in hits)


def _variants_in(markdown: str) -> list[tuple[int, str]]:
    return [(h.line, h.variant) for h in terms.find_variants(terms.prose(markdown), ROWS)]


def test_a_planted_variant_is_found_with_its_line():
    """The scan bites: a variant in prose is found on its line, also when a line break
    splits it, and the hit names the term to use."""
    page = "# 标题\n\n第一行。\n这几种放置方式各有利弊，\n整个堆\n叠都用 Pre-LN。\n"
    assert _variants_in(page) == [(4, "放置方式"), (5, "整个堆叠")]
    message = terms.find_variants(terms.prose(page), ROWS)[0].message("p.zh.md")
    assert message.startswith("p.zh.md:4: '放置方式', use ") and "归一化位置" in message


def test_a_planted_variant_in_a_notebook_is_found(tmp_path: Path):
    notebook = tmp_path / "nb.zh.py"
    notebook.write_text(
        "# ---\n# jupyter:\n#   jupytext: {}\n# ---\n\n# %% [markdown]\n# # 标题\n#\n"
        '# 这几篇源文章都说过。\n\n# %% alt="核函数的耗时"\n\n# %% [markdown]\n# ## 观察结果\n',
        encoding="utf-8",
    )
    hits = terms.find_variants(terms.page_prose(notebook), ROWS)
    assert [(h.line, h.variant) for h in hits] == [
        (9, "源文章"),
        (11, "核函数"),
        (14, "## 观察结果"),
    ]


@pytest.mark.parametrize(
    "markdown",
    [
        "```python\n# 放置方式\nx = 1\n```\n",
        "代码 `放置方式` 里的不算。\n",
        "公式 $\\text{放置方式}$ 不算。\n",
        "<!-- 放置方式 -->\n",
        "见[这一页](../放置方式.md)。\n",
        "原文写道：“两种放置方式各有优劣”[D]。\n",
        "几篇文章都说：“源文章”[B, D]。\n",
        "模型名 GLM-130B 不算。\n",
        "[各模型用什么归一化](models.md)一页。\n",
        "先写 autograd（自动求导），再写 autograd。\n",
        "把四层堆叠起来：堆叠 N 层。\n",
    ],
    ids=[
        "fence", "inline-code", "math", "comment", "link-target", "quotation",
        "quotation-of-two", "model-name", "the-term-itself", "glossed", "verb",
    ],
)  # fmt: skip
def test_what_is_not_prose_or_is_the_term_is_not_flagged(markdown: str):
    assert _variants_in(markdown) == []


def test_outside_the_exceptions_the_same_words_are_flagged():
    """The counterparts of the cases above: the same words in prose are found."""
    markdown = (
        "两种放置方式。\n“两种放置方式”，没有标出处。\n规模 130B 的模型。\n"
        "见[各模型用什么](models.md)。\n只用自动求导。\n在堆叠中。\n"
    )
    assert _variants_in(markdown) == [
        (1, "放置方式"), (2, "放置方式"), (3, "130B"), (4, "各模型用什么"), (5, "自动求导"),
        (6, "堆叠中"),
    ]  # fmt: skip


def test_a_diagram_label_is_prose():
    diagram = '```plantuml alt="放置方式"\n@startuml\nrectangle "× weight γ"\n@enduml\n```\n'
    assert _variants_in(diagram) == [(1, "放置方式"), (3, "× weight γ")]


def test_the_longer_variant_is_reported_once():
    assert _variants_in("这几篇来源文章。\n") == [(1, "来源文章")]


def test_the_glossary_usage_table_itself_is_not_scanned():
    text = terms.GLOSSARY.read_text(encoding="utf-8")
    start, end = terms.usage_section(text)
    first, last = text.count("\n", 0, start) + 1, text.count("\n", 0, end) + 1
    assert _variants_in(text[start:end]), "the table lists the variants"
    hits = terms.find_variants(terms.page_prose(terms.GLOSSARY), ROWS)
    assert not [h for h in hits if first <= h.line <= last]


# --- page names -------------------------------------------------------------------------


class _AnyTagLoader(yaml.SafeLoader):
    """mkdocs.yml has custom tags (``!ENV``); their values do not matter here."""


_AnyTagLoader.add_multi_constructor("!", lambda loader, suffix, node: None)
CONFIG = yaml.load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"), Loader=_AnyTagLoader)
HOME = "index.md"


def _zh_nav_titles() -> dict[str, str]:
    for plugin in CONFIG["plugins"]:
        if isinstance(plugin, dict) and "i18n" in plugin:
            for language in plugin["i18n"]["languages"]:
                if language["locale"] == "zh":
                    return language["nav_translations"]
    raise AssertionError("mkdocs.yml has no zh nav_translations")


def nav_pairs(nav: list) -> list[tuple[str, str]]:
    """(title, page) for every nav entry; a section is paired with its index page."""
    pairs = []
    for entry in nav:
        if isinstance(entry, str):
            continue  # a section's index page: paired with the section's title
        ((title, target),) = entry.items()
        if isinstance(target, str):
            pairs.append((title, target))
        else:
            index = [child for child in target if isinstance(child, str)]
            if index:
                pairs.append((title, index[0]))
            pairs += nav_pairs(target)
    return pairs


def h1(page: Path) -> str:
    """The first line of a page (a notebook's first Markdown cell), without ``# `` and
    ``{ #anchor }``."""
    if page.suffix == ".py":
        text = terms.notebook_markdown(page.read_text(encoding="utf-8")).lstrip("\n")
    else:
        text = page.read_text(encoding="utf-8")
    first = text.split("\n", 1)[0]
    assert first.startswith("# "), f"{page.name} does not start with an H1: {first!r}"
    return terms.ATTRIBUTES.sub("", first[2:]).strip()


def names_agree(title: str, heading: str, separators: tuple[str, ...]) -> bool:
    return heading == title or any(heading.startswith(title + s) for s in separators)


PAIRS = [(t, p) for t, p in nav_pairs(CONFIG["nav"]) if p != HOME]
ZH_TITLES = _zh_nav_titles()


def test_the_nav_is_read():
    assert len(PAIRS) >= 35
    assert ("Where the norm goes", "placement/index.md") in PAIRS
    assert ("Post-LN", "placement/post-ln.md") in PAIRS


def _zh(page: str) -> Path:
    path = DOCS / page
    return path.with_name(f"{path.stem}.zh{path.suffix}")


@pytest.mark.parametrize(("title", "page"), PAIRS, ids=[p for _, p in PAIRS])
def test_the_chinese_nav_title_is_the_page_title(title: str, page: str):
    assert title in ZH_TITLES, f"mkdocs.yml's zh nav_translations has no {title!r}"
    zh_title, heading = ZH_TITLES[title], h1(_zh(page))
    assert names_agree(zh_title, heading, ("：", "（")), (
        f"nav {zh_title!r} vs H1 {heading!r} of {_zh(page).relative_to(ROOT)}"
    )


# English pages whose H1 is not their nav title today (the nav shortens it); they are
# reported, not changed here. Strict: once one agrees, it leaves this list.
ENGLISH_DIFFERS = {
    "notebooks/layer_norm_activations.py": "Activations before and after LayerNorm",
    "placement/sublayer-connection.md": "One sublayer connection, every placement",
    "placement/pytorch-equivalence.md": "Equivalence with PyTorch's layers",
    "models/blocks.md": "Encoder layer and causal decoder block",
}
ENGLISH_CASES = [
    pytest.param(
        t, p, id=p,
        marks=[pytest.mark.xfail(strict=True, reason="H1 differs")] if p in ENGLISH_DIFFERS else [],
    )
    for t, p in PAIRS
]  # fmt: skip


@pytest.mark.parametrize(("title", "page"), ENGLISH_CASES)
def test_the_english_nav_title_is_the_page_title(title: str, page: str):
    heading = h1(DOCS / page)
    assert names_agree(title, heading, (": ", " (")), f"nav {title!r} vs H1 {heading!r}"


@pytest.mark.parametrize(
    ("title", "heading", "agree"),
    [
        ("统一的子层连接", "统一的子层连接：一个参数切换所有归一化位置", True),
        ("Post-LN", "Post-LN（后置层归一化）", True),
        ("与 PyTorch 的等价性", "与 PyTorch 的等价性", True),
        ("一个子层连接", "一个子层连接，涵盖所有放置方式", False),
        ("各模型用什么", "各模型用什么归一化", False),
    ],
)
def test_a_title_that_differs_from_the_nav_fails(title: str, heading: str, agree: bool):
    assert names_agree(title, heading, ("：", "（")) is agree
