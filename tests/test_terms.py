"""One term per concept, and one name per page, in the Chinese edition.

The glossary's usage table (``docs/reference/glossary.zh.md``, ``## 用词约定 { #usage }``)
is the single source of terms: its 不用 column lists the variants no Chinese page uses,
and the scan (tests/terms.py) looks for them in every page's prose. A page's name is the
same in the navigation (mkdocs.yml's nav, translated by the i18n plugin's
``nav_translations``) and in the page's H1, which may add a subtitle after 「：」 or 「（」.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

import pytest
import yaml

from scripts.heading_ids import heading_ids
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
    assert {"放置方式", "源文章", "整个堆叠", "核函数", "logits", "AttnRes"} <= set(variants)
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


def test_a_latin_variant_is_found_as_a_word():
    """logits, not the logit of 「logit soft-capping」 run on into the next word (the scan
    ignores whitespace)."""
    page = "计算 logits 的表示。\nlogit soft-capping 与 logit 上限。\n代码 `logits` 不算。\n"
    assert _variants_in(page) == [(1, "logits")]


def test_a_method_is_named_as_the_glossary_names_it_and_glossed_once():
    """注意力残差, not AttnRes (re-review: residual_streams.zh.py:49–53 and 181); the English
    may follow the Chinese name in brackets once, at the first mention."""
    page = (
        "注意力残差（AttnRes）读取各层。\n又写了一次注意力残差（AttnRes）。\n"
        "全量注意力残差（Full AttnRes）每层一个来源。\nAttnRes 的伪查询为零。\n"
    )
    hits = terms.find_variants(terms.prose(page), ROWS)
    assert [(h.line, h.variant, h.repeated) for h in hits] == [
        (2, "注意力残差（AttnRes）", True),
        (4, "AttnRes", False),
    ]
    assert "again: gloss a name once" in hits[0].message("p.zh.md")


def test_the_glossary_s_english_column_is_not_prose():
    table = (
        "| 中文 | English | 释义 |\n|---|---|---|\n"
        "| 注意力残差 | Attention Residuals (AttnRes) | 用 logits |\n"
    )
    masked = terms.mask_column(table, "English")
    assert "AttnRes" not in masked and "用 logits" in masked
    assert len(masked) == len(table)


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


# --- link texts ---------------------------------------------------------------------------

GLOSSARY_TERMS = terms.glossary_terms(terms.GLOSSARY.read_text(encoding="utf-8"))
NAV_PAGES = {page: ZH_TITLES.get(title) for title, page in nav_pairs(CONFIG["nav"])}


def _squeezed(text: str) -> str:
    return "".join(text.split())


def _with_head(title: str) -> set[str]:
    """A title, and the title before its subtitle (after 「：」 or in 「（」)."""
    return {title, *(title.split(s, 1)[0] for s in ("：", "（") if s in title)}


@functools.cache
def page_names(english: Path) -> frozenset[str]:
    """What a link to a page may say: the page's Chinese name (its nav title, its H1 with
    or without the subtitle), or a glossary term the glossary explains on that page."""
    names = set(GLOSSARY_TERMS.get(english, ()))
    nav = NAV_PAGES.get(english.relative_to(DOCS).as_posix())
    if nav:
        names.add(nav)
    zh = terms.twin(english)
    if zh.is_file():
        names |= _with_head(h1(zh))
    return frozenset(_squeezed(n) for n in names)


@functools.cache
def section_titles(english: Path) -> dict[str, str]:
    """The title of each section of a page's Chinese twin, by its anchor."""
    zh = terms.twin(english)
    if not zh.is_file():
        return {}
    return {anchor: title for _, anchor, title in heading_ids(terms.markdown_of(zh))}


def section_names(english: Path, anchor: str) -> set[str]:
    """What a link to a section may say: the section's title (with or without its
    subtitle), or the page's name and the section's: 「页名：节名」."""
    title = section_titles(english).get(anchor)
    if title is None:
        return set()
    own = {_squeezed(n) for n in _with_head(title)}
    return own | {f"{p}：{s}" for p in page_names(english) for s in own}


def names_the_page(text: str, names: frozenset[str]) -> bool:
    """``text`` is one of ``names``, or two of them as 「名称（另一名称）」."""
    if text in names:
        return True
    gloss = re.fullmatch(r"(.+)（(.+)）", text)
    return bool(gloss) and gloss.group(1) in names and gloss.group(2) in names


def wrong_link_texts(page: Path, markdown: str) -> list[str]:
    """Each link of a Chinese page to another page of the handbook whose text is not that
    page's name (or, for a link to a section, the section's), as 'file:line: ...'."""
    where = page.relative_to(ROOT).as_posix() if ROOT in page.parents else page.name
    found = []
    for link in terms.links(markdown):
        target = terms.link_page(page, link.target) if link.target else None
        if target is None:
            continue  # a link within the page (「见下文」), or to no page of the handbook
        section = section_names(target, link.anchor) if link.anchor else set()
        if names_the_page(link.text, page_names(target) | section):
            continue
        nav = NAV_PAGES.get(target.relative_to(DOCS).as_posix()) or h1(terms.twin(target))
        title = section_titles(target).get(link.anchor) if link.anchor else None
        section = f" or the section's 「{title}」" if title else ""
        found.append(
            f"{where}:{link.line}: [{link.text}]({link.target}{'#' if link.anchor else ''}"
            f"{link.anchor}) names {target.relative_to(DOCS).as_posix()}: write its name "
            f"「{nav}」{section}"
        )
    return found


@pytest.mark.parametrize("page", PAGES, ids=_name)
def test_a_link_to_a_page_is_named_by_the_page_s_name(page: Path):
    """A link's text that names a page says the page's Chinese name (its nav title or
    its H1), a term the glossary explains there, or for a link to a section the section's
    name: not a paraphrase such as 「模型说明」, 「上一页」 or 「预热实验」."""
    wrong = wrong_link_texts(page, terms.markdown_of(page))
    assert not wrong, f"{len(wrong)} link texts:\n" + "\n".join(wrong)


@pytest.mark.parametrize(
    ("markdown", "ok"),
    [
        ("见[各模型用什么归一化](../reference/models.md)。", True),
        ("见[各模型用什么归一化](../reference/models.md#palm-parallel)。", True),
        ("见[模型说明](../reference/models.md#palm-parallel)。", False),
        ("见[模型说明](../reference/models.md)。", False),
        ("见[模型\n说明](../reference/models.md)。", False),
        ("[Pre-LN](pre-ln.md)", True),
        ("[Pre-LN 一页](pre-ln.md)", False),
        ("[Pre-LN：归一化放在分支上](pre-ln.md)", True),
        ("[前置层归一化（Pre-LN）](pre-ln.md)", True),  # two names of its term
        ("[残差流](pre-ln.md)", True),  # a term the glossary explains there
        ("[上一页](post-ln.md)", False),
        ("[预热实验](../experiments/warmup.py)", False),
        ("[预热与学习率](../experiments/warmup.py)", True),
        ("[`resnorm.py`](../downloads/resnorm.py)", True),  # code, and no page
        ("[arXiv 2002.04745](https://arxiv.org/abs/2002.04745)", True),
        ("[这里](variants.md)", False),
        ("[Sandwich-LN 与 Peri-LN](variants.md#sandwich-ln-and-peri-ln)", True),  # its section
        ("[Sandwich-LN 与 Peri-LN](variants.md#deepnorm)", False),  # another section
        ("[变体：Sandwich-LN 与 Peri-LN](variants.md#sandwich-ln-and-peri-ln)", True),
        ("[见下文](#the-residual-stream-grows)", True),  # within the page: no other page named
    ],
)
def test_a_link_text_that_is_not_the_page_s_name_is_found(markdown: str, ok: bool):
    page = DOCS / "placement" / "pre-ln.zh.md"
    assert (wrong_link_texts(page, markdown) == []) is ok


def test_a_notebook_s_links_are_read_from_its_url():
    """A notebook is served at dir/name/, so its links climb one folder more."""
    page = DOCS / "experiments" / "warmup.zh.py"
    assert terms.link_page(page, "../../placement/post-ln/") == DOCS / "placement/post-ln.md"
    assert terms.link_page(page, "../depth/") == DOCS / "experiments/depth.py"
    assert wrong_link_texts(page, "[梯度实验](../gradients_at_init/)")
    assert not wrong_link_texts(page, "[初始化时的梯度范数](../gradients_at_init/)")
