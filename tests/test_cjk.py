"""A line break between two Chinese characters shows as a space: resnorm_site/cjk.py joins
such lines in prose (hooks/chinese_lines.py on Chinese pages, notebooks/twin.py in Chinese
notebooks), and tests/cjk_spaces.py finds any such space left in a page's HTML."""

from __future__ import annotations

import re
from pathlib import Path

import jupytext
import markdown
import pytest
from nbconvert.filters.markdown_mistune import markdown2html_mistune

from resnorm_site.cjk import join_lines
from resnorm_site.cjk_text import cjk_pair
from scripts.heading_ids import CONFIGS
from tests import terms
from tests.cjk_spaces import half_width_marks, lead_in_gaps, stray_spaces
from tests.conftest import ROOT, bilingual_site, mkdocs_build
from tests.test_site import load_mkdocs_yml

# --- join_lines, construct by construct ---------------------------------------------------

JOINED = {
    "paragraph": ("因此无论深度如何，\n层与层之间。", "因此无论深度如何，层与层之间。"),
    "three lines": ("甲，\n乙，\n丙。", "甲，乙，丙。"),
    "list continuation": ("- 甲，\n  乙。\n- 丙，\n  丁。", "- 甲，乙。\n- 丙，丁。"),
    "numbered list": ("1. 甲，\n   乙。", "1. 甲，乙。"),
    "lazy list line": ("- 甲，\n乙。", "- 甲，乙。"),
    "nested list": ("- 甲\n    - 乙，\n      丙。", "- 甲\n    - 乙，丙。"),
    "list paragraph": ("- 甲\n\n    乙，\n    丙。", "- 甲\n\n    乙，丙。"),
    "blockquote": ("> 甲，\n> 乙。", "> 甲，乙。"),
    "nested blockquote": ("> > 甲，\n> > 乙。", "> > 甲，乙。"),
    "list in a blockquote": ("> - 甲，\n>   乙。", "> - 甲，乙。"),
    "admonition": ("!!! note\n    甲，\n    乙。", "!!! note\n    甲，乙。"),
    "details": ('??? note "注"\n    甲，\n    乙。', '??? note "注"\n    甲，乙。'),
    "tabs": (
        '=== "Post-LN"\n    甲，\n    乙。\n\n=== "Pre-LN"\n    丙，\n    丁。',
        '=== "Post-LN"\n    甲，乙。\n\n=== "Pre-LN"\n    丙，丁。',
    ),
    "list in a tab": ('=== "甲"\n    - 乙，\n      丙。', '=== "甲"\n    - 乙，丙。'),
    "admonition in a list": (
        "- 甲\n\n    !!! note\n        乙，\n        丙。",
        "- 甲\n\n    !!! note\n        乙，丙。",
    ),
    "blockquote in an admonition": ("!!! note\n    > 甲，\n    > 乙。", "!!! note\n    > 甲，乙。"),
    "footnote": ("[^1]: 甲，\n    乙。", "[^1]: 甲，乙。"),
    "definition": ("术语\n:   甲，\n    乙。", "术语\n:   甲，乙。"),
    "full-width punctuation": ("甲（注）\n乙：丙", "甲（注）乙：丙"),
    "quotation marks": ("他说完了。\n“下一句”\n的开头", "他说完了。“下一句”的开头"),
    "a link at the end": ("见[前置层归一化（Pre-LN）](pre-ln.md)\n一页。", None),
    "a link at the start": ("证据见\n[梯度](../gradients/)实验。", None),
    "emphasis that holds": ("**要点**\n在这里。", "**要点**在这里。"),
    "emphasis after punctuation": ("结束。\n*残差流*指", "结束。*残差流*指"),
    "front matter": ("---\ntitle: 甲\n---\n甲，\n乙。", "---\ntitle: 甲\n---\n甲，乙。"),
    "after a fence": ("```\n甲\n```\n甲，\n乙。", "```\n甲\n```\n甲，乙。"),
}


@pytest.mark.parametrize(("source", "joined"), JOINED.values(), ids=JOINED)
def test_a_break_between_two_chinese_characters_is_joined(source: str, joined: str | None):
    expected = joined if joined is not None else source.replace("\n", "")
    assert join_lines(source) == expected


KEPT = {
    "ends in English": "这是 LayerNorm\n层的输出。",
    "starts in English": "这一层的输出\nLayerNorm 之后。",
    "ends in math": "每层加上 $x$\n的更新。",
    "ends in code": "调用 `norm`\n之后。",
    "starts with code": "调用\n`norm` 之后。",
    "a new list item": "- 甲，\n- 乙。",
    "a new numbered item": "1. 甲，\n2. 乙。",
    "a new blockquote paragraph": "> 甲，\n>\n> 乙。",
    "a blockquote begins": "甲，\n> 乙。",
    "a lazy blockquote line": "> 甲，\n乙。",
    "a new paragraph": "甲，\n\n乙。",
    "out of the admonition": "!!! note\n    甲，\n乙。",
    "admonition title": '!!! note "标题"\n    乙。',
    "heading": "# 标题\n正文。",
    "heading without a space": "#标题\n正文。",
    "setext heading": "甲，\n乙\n---",
    "definition terms": "术语一\n术语二\n:   定义。",
    "fenced code": "```text\n甲，\n乙。\n```",
    "tilde fence": "~~~\n甲，\n乙。\n~~~",
    "indented fence": "- 甲\n\n    ```\n    乙，\n    丙。\n    ```",
    "fence in an admonition": "!!! note\n    ```\n    甲，\n    乙。\n    ```",
    "indented code": "甲。\n\n    乙，\n    丙。",
    "math block": "$$\n\\text{甲，}\n\\text{乙}\n$$",
    "bracket math": "\\[\n\\text{甲，}\n\\text{乙}\n\\]",
    "math environment": "\\begin{aligned}\n\\text{甲，}\n\\text{乙}\n\\end{aligned}",
    "table": "| 甲 | 乙\n|---|---\n| 丙 | 丁",
    "table without outer pipes": "甲 | 乙\n--- | ---\n丙 | 丁",
    "html block": '<div class="x">\n甲，\n乙。\n</div>',
    "html comment": "<!--\n甲，\n乙。\n-->",
    "html with a blank line inside": "<div>\n<div>\n</div>\n\n甲，\n乙。\n</div>",
    "comment with a blank line inside": "<!--\n甲\n\n乙，\n丙。\n-->",
    "inside a code span": "代码 `a，\n乙` 之后",
    "inside inline math": "公式 $\\text{甲，}\n\\text{乙}$ 之后",
    "hard line break": "甲，  \n乙。",
    "emphasis would break": "**粗体。**\n对的",
    "underscore emphasis": "中文_斜体_\n对",
    "an image at the end": "![图](a.png)\n说明。",
    "a footnote mark at the end": "甲[^1]\n乙。",
    "front matter": "---\n甲: 一\n乙: 二\n---",
}


@pytest.mark.parametrize("source", KEPT.values(), ids=KEPT)
def test_a_break_that_is_not_between_two_lines_of_chinese_prose_stays(source: str):
    assert join_lines(source) == source


def test_only_the_lines_of_prose_are_joined_in_a_page_of_every_construct():
    source = "\n".join(
        [
            "# 标题",
            "",
            "第一段，",
            "接着写。",
            "",
            "```python",
            "# 注释，",
            "# 第二行",
            "```",
            "",
            "| 甲 | 乙 |",
            "|---|---|",
            "| 丙 | 丁 |",
            "",
            "!!! note",
            "    注意，",
            "    这里。",
            "",
            "    ```",
            "    代码，",
            "    第二行",
            "    ```",
            "",
            "结尾，",
            "完。",
        ]
    )
    out = join_lines(source)
    assert "第一段，接着写。" in out
    assert "    注意，这里。" in out
    assert "# 注释，\n# 第二行" in out
    assert "| 甲 | 乙 |\n|---|---|\n| 丙 | 丁 |" in out
    assert "    代码，\n    第二行" in out
    assert out.endswith("结尾，完。")
    assert out.count("\n") == source.count("\n") - 3


def test_which_characters_count_as_chinese():
    assert cjk_pair("，", "层") and cjk_pair("。", "“") and cjk_pair("”", "的")
    assert cjk_pair("の", "漢") and cjk_pair("（", "）")
    assert not cjk_pair("a", "层") and not cjk_pair("层", "1") and not cjk_pair("“", "”")
    assert not cjk_pair("层", " ")


# --- What the renderers make of a joined source --------------------------------------------

# mkdocs.yml's extensions, less those that do not shape prose and need the repository
# or Java (links in headings, highlighting, includes, diagrams); a diagram's fence is
# still a fence, as scripts/heading_ids.py reads it.
NOT_PROSE = {
    "toc",
    "pymdownx.highlight",
    "pymdownx.inlinehilite",
    "pymdownx.snippets",
    "plantuml_markdown",
}
EXTENSIONS, SETTINGS = [], {"pymdownx.superfences": CONFIGS["pymdownx.superfences"]}
for entry in load_mkdocs_yml()["markdown_extensions"]:
    name, options = next(iter(entry.items())) if isinstance(entry, dict) else (entry, None)
    if name not in NOT_PROSE:
        EXTENSIONS.append(name)
        if options:
            SETTINGS[name] = options


def python_markdown(text: str) -> str:
    """A page's Markdown as mkdocs.yml's prose extensions render it."""
    return markdown.markdown(text, extensions=EXTENSIONS, extension_configs=SETTINGS)


def skeleton(html: str) -> list[str]:
    """The tags of ``html`` in order, without their text."""
    return re.findall(r"</?[a-z][\w-]*", html)


PAGE = """\
第一段，
接着写。

- 列表项，
  续行。
- 第二项，
第三行（懒惰续行）。

> 引文，
> 续行。

!!! note "注意"
    提示，
    续行。

=== "Post-LN"
    - 标签页里的列表，
      续行。

=== "Pre-LN"
    标签页，
    续行。

```text
代码，
不变
```

| 甲 | 乙 |
|---|---|
| 丙 | 丁 |
"""

# A notebook's Markdown cell, as mkdocs-jupyter renders it (nbconvert's mistune)
CELL = """\
本页问的是，
每一层会怎样。

- **结论**有依据，
  但要附带限定条件。
- 另一个
  要点。

1. 第一，
   第二。

> 引文，
> 续行。
"""


@pytest.mark.parametrize(
    ("source", "render", "breaks"),
    [(PAGE, python_markdown, 7), (CELL, markdown2html_mistune, 5)],
    ids=["page (Python-Markdown)", "notebook cell (mistune)"],
)
def test_joined_lines_render_to_the_same_elements_without_the_spaces(source, render, breaks):
    before, after = render(source), render(join_lines(source))
    assert len(stray_spaces(before)) == breaks, "the breaks the join removes reach the HTML"
    assert stray_spaces(after) == []
    assert skeleton(after) == skeleton(before), "the join changed the page's elements"


def _chinese_sources() -> list[tuple[str, list[str], object]]:
    """Each Chinese page and notebook: its Markdown, and the renderer the site uses for it."""
    sources = []
    for path in sorted((ROOT / "docs").rglob("*.zh.*")):
        name = path.relative_to(ROOT / "docs").as_posix()
        if path.suffix == ".md":
            sources.append((name, [path.read_text(encoding="utf-8")], python_markdown))
        elif path.suffix == ".py":
            cells = jupytext.read(path).cells
            texts = [c.source for c in cells if c.cell_type == "markdown"]
            sources.append((name, texts, markdown2html_mistune))
    return sources


def test_every_chinese_source_renders_to_the_same_elements_and_words_once_joined():
    """On the handbook's own pages and notebooks, the join removes breaks and nothing else."""
    sources = _chinese_sources()
    assert len(sources) >= 30
    changed = []
    for name, texts, render in sources:
        for text in texts:
            before, after = render(text), render(join_lines(text))
            if skeleton(after) != skeleton(before):
                changed.append(f"{name}: elements")
            if re.sub(r"\s+", "", after) != re.sub(r"\s+", "", before):
                changed.append(f"{name}: words")
    assert not changed


# --- The scan of a page's HTML --------------------------------------------------------------


def test_a_line_break_between_two_chinese_characters_is_found_with_its_context():
    found = stray_spaces("<p>因此无论深度如何，\n层与层之间。</p>")
    assert found == ["…因此无论深度如何，[⏎]层与层之间。…"]


def test_a_typed_space_and_a_space_across_inline_elements_are_found():
    html = (
        "<li><strong>结论。</strong> 有依据</li>"
        '<p>见<a href="x">前置层归一化（Pre-LN）</a>\n和后文。</p>'
        "<p>他说：“完了。” 下一句</p>"
    )
    assert len(stray_spaces(html)) == 3


def test_spaces_outside_chinese_prose_are_not_found():
    html = (
        "<p>LayerNorm 之后 RMSNorm 的 $x$ 与 English words here.</p>"
        "<p>第一段。</p>\n<p>第二段。</p>"  # between blocks: no space shown
        "<table><tr><td>甲</td>\n<td>乙</td></tr></table>"
        "<p>第一行<br>\n第二行</p>"
        "<p>不换行的\u00a0空格</p>"
        "<pre><code>甲，\n乙</code></pre>"
        "<p>代码 <code>甲 乙</code> 之后</p>"
        '<p>公式 <span class="arithmatex">\\(\\text{甲 乙}\\)</span> 之后</p>'
        '<div class="arithmatex">\\[\\text{甲 乙}\\]</div>'
        "<script>var s = '甲 乙';</script><style>/* 甲 乙 */</style>"
        "<svg><text>甲 乙</text><g><text>丙 丁</text></g></svg>"
    )
    assert stray_spaces(html) == []


def test_text_after_a_skipped_element_is_scanned_again():
    html = "<svg><g><text>甲</text></g></svg><p>乙 丙</p><code>x</code>丁 戊"
    assert len(stray_spaces(html)) == 2


# --- A Chinese page built ------------------------------------------------------------------

PROSE_EXTENSIONS = """markdown_extensions:
  - admonition
  - pymdownx.details
  - pymdownx.superfences
  - pymdownx.tabbed: {alternate_style: true}
"""


def _article(html: str) -> str:
    return html[html.index("<article") : html.index("</article>")]


@pytest.mark.build
def test_a_chinese_page_is_built_without_a_break_between_two_chinese_characters(tmp_path: Path):
    """The Chinese edition joins the wrapped lines of a paragraph, list items (a lazy
    continuation too), a blockquote, an admonition and tabs, and keeps the code block's; the
    English edition, built from the same text, shows the seven breaks Python-Markdown keeps
    (test above) reaching the HTML where nothing joins them."""
    pages = {"index.md": f"# Home\n\n{PAGE}", "index.zh.md": f"# 首页\n\n{PAGE}"}
    hooks = ["build_state.py", "i18n.py", "chinese_lines.py"]
    config = bilingual_site(tmp_path, pages, hooks, extensions=PROSE_EXTENSIONS)
    proc = mkdocs_build(tmp_path / "site", config, cache=tmp_path / ".cache")
    assert proc.returncode == 0, proc.stderr

    english = _article((tmp_path / "site/index.html").read_text(encoding="utf-8"))
    chinese = (tmp_path / "site/zh/index.html").read_text(encoding="utf-8")
    assert len(stray_spaces(english)) == 7
    assert stray_spaces(chinese) == []
    joins = ["第一段，接着写。", "列表项，续行。", "引文，续行。", "提示，续行。"]
    for joined in [*joins, "标签页里的列表，续行。", "标签页，续行。"]:
        assert joined in chinese
    assert "代码，\n不变" in chinese, "a code block keeps its lines"


# --- A bold lead-in, and the marks in a list of sources (read from the source) -------------

CHINESE_PAGES = terms.chinese_pages()


def _where(page: Path) -> str:
    return page.relative_to(ROOT).as_posix()


@pytest.mark.parametrize("page", CHINESE_PAGES, ids=lambda p: p.name)
def test_a_bold_lead_in_is_followed_straight_by_its_sentence(page: Path):
    """「**动机。**保留」 on a page; 「**动机**。保留」 in a notebook (tests/cjk_spaces.py)."""
    notebook = page.suffix == ".py"
    found = lead_in_gaps(terms.page_prose(page), notebook)
    how = "「**动机**。保留」" if notebook else "「**动机。**保留」"
    assert not found, f"{len(found)} bold lead-ins; write them as {how}:\n" + "\n".join(
        f"{_where(page)}:{line}: {text}" for line, text in found
    )


@pytest.mark.parametrize(
    ("source", "notebook", "found"),
    [
        ("**动机。**保留整个网络的深度。", False, []),
        ("**动机。** Pre-LN 的残差流随深度增长。", False, ["**动机。** P"]),  # variants.zh.md:119
        ("- **适用场景。** 最后几层看起来多余。", False, ["**适用场景。** 最"]),
        ("**动机。**\n保留深度。", False, ["**动机。**⏎保"]),
        ("**动机**。 保留深度。", False, ["**动机**。 保"]),
        ("**动机**：保留深度。", False, []),
        ("**要点**在这里。", False, []),
        ("**只有一行粗体。**\n\n下一段。", False, []),
        ("> **注意。** 引文里。", False, ["**注意。** 引"]),
        ("**动机**。保留深度。", True, []),
        ("**公式不等于速度。** RMSNorm 更少。", True, ["**公式不等于速度。** R"]),  # norm_speed
        ("**动机。**保留深度。", True, ["**动机。**保"]),
        ("**这里没有复现出图 3（a、b）**。在 Xiong 等人的测量中", True, []),
        ("- **偏离单位矩阵**。\n  为了看清", True, []),  # the build joins the two lines
    ],
)
def test_a_spaced_or_broken_lead_in_is_found(source: str, notebook: bool, found: list[str]):
    assert [text for _, text in lead_in_gaps(terms.prose(source), notebook)] == found


def test_why_a_notebook_puts_the_punctuation_after_the_bold():
    """mistune (notebook cells) closes 「**动机。**」 only before a space; Python-Markdown
    (pages) closes it before text too."""
    assert "<strong>" not in markdown2html_mistune("**动机。**保留")
    assert "<strong>动机</strong>。保留" in markdown2html_mistune("**动机**。保留")
    assert "<strong>动机。</strong>保留" in python_markdown("**动机。**保留")


def _sources(page: Path) -> str | None:
    markdown = terms.markdown_of(page)
    section = terms.sources_section(markdown)
    return None if section is None else markdown[section[0] : section[1]]


SOURCE_LISTS = [p for p in CHINESE_PAGES if _sources(p) is not None]


def test_the_lists_of_sources_are_found():
    assert len(SOURCE_LISTS) >= 20


@pytest.mark.parametrize("page", SOURCE_LISTS, ids=lambda p: p.name)
def test_a_list_of_sources_uses_full_width_marks(page: Path):
    """Between the parts of an entry, 「，」 「：」 「；」 「（」 「）」 as in the prose around
    them; half-width only inside English names and titles (tests/cjk_spaces.py)."""
    markdown = terms.markdown_of(page)
    first = markdown.count("\n", 0, terms.sources_section(markdown)[0])
    found = half_width_marks(_sources(page))
    assert not found, f"{len(found)} half-width marks:\n" + "\n".join(
        f"{_where(page)}:{first + line}: {context}" for line, context in found
    )


@pytest.mark.parametrize(
    ("entry", "found"),
    [
        # qk-norm.zh.md:388, full-width throughout
        ("- Vaswani et al. 2017，*Attention Is All You Need*，[arXiv 1706.03762](https://arxiv.org/"
         "abs/1706.03762)，§3.2.1（缩放点积注意力）。", 0),
        # hyper-connections.zh.md:290, half-width commas and brackets
        ("- Zhu et al. 2024, *Hyper-Connections*, [arXiv 2409.19606](https://arxiv.org/abs/"
         "2409.19606) (v3)：§2.1（静态形式，式 (1)–(7)，最后的求和）", 1),
        # depth-attention.zh.md:201
        ("- Xiong et al. 2020, [arXiv 2002.04745](https://arxiv.org/abs/2002.04745)，引理 2；"
         "Sun et al. 2025 (LayerNorm Scaling), [arXiv 2502.05795](https://arxiv.org/abs/"
         "2502.05795)。", 1),
        # qk_norm.zh.py:86, both widths in one entry
        ("- Wortsman et al. 2023, *Small-scale proxies*，[arXiv 2309.14322](https://arxiv.org/"
         "abs/2309.14322)，摘要。", 1),
        # English inside a name or a journal, code, an equation number: left alone
        ("- Zhang, Sennrich，*Root Mean Square Layer Normalization*，NeurIPS 2019。", 0),
        ("- P. A. Knight，*The Sinkhorn–Knopp algorithm*，SIAM J. Matrix Anal. Appl., 2008。", 0),
        ("- 代码：`f(x, y)`，式 (3)–(4)，图 2(b)。", 0),
    ],
    ids=["full-width", "hc-290", "depth-attention-201", "qk-norm-notebook-86", "authors",
         "journal", "code-and-equations"],
)  # fmt: skip
def test_a_half_width_mark_between_the_parts_of_an_entry_is_found(entry: str, found: int):
    assert len(half_width_marks(entry)) == found


def test_the_half_width_marks_of_a_line_are_shown_in_it():
    entry = "- 甲\n- Zhu et al. 2024, *HC*, [arXiv 1](https://a.b/1) (v3)：§2.1"
    assert half_width_marks(entry) == [
        (2, "- Zhu et al. 2024【,】 *HC*【,】 [arXiv 1](https://a.b/1) 【(】v3【)】：§2.1")
    ]
