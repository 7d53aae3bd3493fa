"""The Chinese edition's terms, read from the glossary's usage table, and a scan for the
variants that table says not to use.

``docs/reference/glossary.zh.md`` has a section ``## 用词约定 { #usage }`` with a table
whose columns 用 and 不用 hold, as inline code, the terms a page uses for a concept and
the variants it does not. The table is the one list: nothing here repeats its terms.

A variant is looked for in what a reader reads as prose: a page's Markdown, a notebook
twin's Markdown cells and its plots' alt texts, and the labels of PlantUML diagrams
(translated text, not code). Fenced code, inline code, math, HTML comments and tags,
link targets, heading attributes, ``[[measured:...]]`` placeholders, quotations of the
five articles (“…”[A] … [E], or [B, D]) and the usage table itself are left out.
Whitespace is ignored, as the build joins wrapped lines, so a variant split over two
lines is still found. An occurrence that lies inside one of the row's own terms (各模型用什么
inside 各模型用什么归一化, 130B inside GLM-130B) is the term, not the variant; and a variant
found inside a longer variant (源文章 inside 来源文章) is reported once, as the longer one.
A variant that begins or ends with a Latin letter is a word: ``logits`` is not found in
``logit soft-capping`` (whitespace removed, the letters run on). A term that glosses a
variant in brackets (``注意力残差（AttnRes）``) may stand once on a page, at the first
mention; after that the page writes the name alone. The glossary's English column is
English, not prose.

The links of a page are read here too (:func:`links`, :func:`link_page`): a link's text
that names a page of the handbook is that page's name (tests/test_terms.py).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
GLOSSARY = DOCS / "reference" / "glossary.zh.md"
USAGE_HEADING = re.compile(r"^## .*\{ *#usage *\}[ \t]*$", re.M)
CODE_SPAN = re.compile(r"`([^`\n]+)`")

GLOSS = re.compile(r".+（(.+)）")  # a name and, in brackets, its other name
ATTRIBUTES = re.compile(r"\{[ \t]*[#.:][^}\n]*\}")  # { #anchor }, { .class }

# What is not prose, in the order it is masked (code first: it may hold anything).
FENCE = re.compile(r"^([ \t]*)(`{3,}|~{3,})(.*?)\n(.*?)^\1\2[ \t]*$", re.M | re.S)
NOT_PROSE = [
    re.compile(r"<!--.*?-->", re.S),  # HTML comments
    re.compile(r"`[^`\n]+`"),  # inline code
    re.compile(r"\$\$.*?\$\$|\$[^$\n]+\$|\\\(.*?\\\)", re.S),  # math
    re.compile(r"<[^>\n]+>"),  # HTML tags (the text between them is prose)
    re.compile(r"“[^”]*”\s*\[[A-E](?:\s*[,，、]\s*[A-E])*\]"),  # quotations of the articles
    re.compile(r"(?<=\])\([^()\s]*(?:\([^()\s]*\)[^()\s]*)*(?:\s+\"[^\"]*\")?\)"),  # link targets
    ATTRIBUTES,
    re.compile(r"\[\[measured:[^\]]*\]\]"),
]


@dataclass(frozen=True)
class Row:
    concept: str
    use: tuple[str, ...]
    avoid: tuple[str, ...]
    line: int


@dataclass(frozen=True)
class Hit:
    line: int
    variant: str
    row: Row
    repeated: bool = False  # a gloss written again after the first mention

    def message(self, name: str) -> str:
        use = " / ".join(self.row.use)
        if self.repeated:
            return (
                f"{name}:{self.line}: {self.variant!r} again: gloss a name once, at its first "
                f"mention ({self.row.concept})"
            )
        return f"{name}:{self.line}: {self.variant!r}, use {use} ({self.row.concept})"


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def usage_section(text: str) -> tuple[int, int]:
    """The character range of the usage section: its heading up to the next ``## ``."""
    start = USAGE_HEADING.search(text)
    if start is None:
        raise ValueError("the glossary has no '## … { #usage }' section")
    end = re.compile(r"^## ", re.M).search(text, start.end())
    return start.start(), end.start() if end else len(text)


def usage_table(text: str) -> list[Row]:
    """The rows of the usage table: each row's concept, its terms (用) and variants (不用)."""
    start, end = usage_section(text)
    first_line = text.count("\n", 0, start) + 1
    lines = text[start:end].split("\n")
    table = [(first_line + i, ln) for i, ln in enumerate(lines) if ln.lstrip().startswith("|")]
    if len(table) < 3:
        raise ValueError("the usage section has no table")
    header = _cells(table[0][1])
    if "用" not in header or "不用" not in header:
        raise ValueError(f"the usage table's header has no 用 and 不用 columns: {header}")
    use_col, avoid_col = header.index("用"), header.index("不用")
    rows = []
    for number, line in table[2:]:
        cells = _cells(line)
        if len(cells) != len(header):
            raise ValueError(f"glossary.zh.md:{number}: {len(cells)} cells, not {len(header)}")
        rows.append(
            Row(
                concept=cells[0],
                use=tuple(CODE_SPAN.findall(cells[use_col])),
                avoid=tuple(CODE_SPAN.findall(cells[avoid_col])),
                line=number,
            )
        )
    return rows


def _blank(match: re.Match) -> str:
    """The match's characters as NULs (newlines kept): line numbers stay, matches break."""
    return re.sub(r"[^\n]", "\0", match.group(0))


def _mask_fence(match: re.Match) -> str:
    """A fence is code, but a diagram's labels and its alt text are translated prose."""
    if match.group(3).strip().startswith("plantuml"):
        opening = match.group(1) + match.group(2)
        return "\0" * len(opening) + match.group(0)[len(opening) :]
    return _blank(match)


def notebook_markdown(source: str) -> str:
    """A jupytext percent notebook as Markdown, line for line: its Markdown cells without
    their ``# `` prefix, and each code cell's options line (a plot's alt text); the header
    and the code are blank lines."""
    out, kind = [], None
    for line in source.split("\n"):
        if line.startswith("# %%"):
            kind = "markdown" if "[markdown]" in line else "code"
            out.append("" if kind == "markdown" else line[len("# %%") :])
        elif kind == "markdown" and line.startswith("#"):
            out.append(line[2:] if line.startswith("# ") else line[1:])
        else:
            out.append("")
    return "\n".join(out)


def prose(text: str, skip: tuple[int, int] | None = None) -> str:
    """``text`` with what is not prose replaced by NULs, newlines kept, so that an offset
    still names its line; ``skip`` is a further range to leave out (the usage table)."""
    if skip is not None:
        a, b = skip
        text = text[:a] + re.sub(r"[^\n]", "\0", text[a:b]) + text[b:]
    text = FENCE.sub(_mask_fence, text)
    for pattern in NOT_PROSE:
        text = pattern.sub(_blank, text)
    return text


def _squeezed(text: str) -> tuple[str, list[int]]:
    """The text without whitespace, and each remaining character's offset in ``text``."""
    offsets = [i for i, c in enumerate(text) if not c.isspace()]
    return "".join(text[i] for i in offsets), offsets


def _occurrences(haystack: str, needle: str) -> list[int]:
    found, i = [], haystack.find(needle)
    while i >= 0:
        found.append(i)
        i = haystack.find(needle, i + 1)
    return found


def _latin(c: str) -> bool:
    return c.isascii() and c.isalpha()


def _a_word(text: str, offsets: list[int], start: int, end: int, variant: str) -> bool:
    """Whether the variant found at flat[start:end] is a word of ``text``: a Latin letter
    at either end of it does not run on into a letter beside it."""
    first, last = offsets[start], offsets[end - 1]
    if _latin(variant[0]) and first > 0 and _latin(text[first - 1]):
        return False
    return not (_latin(variant[-1]) and last + 1 < len(text) and _latin(text[last + 1]))


def find_variants(text: str, rows: list[Row]) -> list[Hit]:
    """Every variant of ``rows`` in ``text`` (already reduced to prose), by line; and each
    gloss of a variant (a term that holds one) after its first on the page."""
    flat, offsets = _squeezed(text)
    spans: list[tuple[int, int, str, Row]] = []
    repeated: list[Hit] = []
    for row in rows:
        uses = ["".join(u.split()) for u in row.use]
        avoid = ["".join(v.split()) for v in row.avoid]
        for use, u in zip(row.use, uses, strict=True):
            gloss = GLOSS.fullmatch(u)
            if gloss and any(v in gloss.group(1) for v in avoid):
                for start in _occurrences(flat, u)[1:]:
                    line = text.count("\n", 0, offsets[start]) + 1
                    repeated.append(Hit(line, use, row, repeated=True))
        for variant in row.avoid:
            v = "".join(variant.split())
            for start in _occurrences(flat, v):
                if not _a_word(text, offsets, start, start + len(v), v):
                    continue
                inside_a_term = any(
                    flat[start - k : start - k + len(u)] == u
                    for u in uses
                    for k in _occurrences(u, v)
                    if start - k >= 0
                )
                if not inside_a_term:
                    spans.append((start, start + len(v), variant, row))
    kept = [
        s
        for s in spans
        if not any(
            o is not s and o[0] <= s[0] and s[1] <= o[1] and o[1] - o[0] > s[1] - s[0]
            for o in spans
        )
    ]
    kept.sort(key=lambda s: s[0])
    hits = [Hit(text.count("\n", 0, offsets[s[0]]) + 1, s[2], s[3]) for s in kept]
    return sorted(hits + repeated, key=lambda h: h.line)


def mask_column(text: str, header: str) -> str:
    """``text`` with the cells of every table column headed ``header`` blanked."""
    lines, column = text.split("\n"), None
    for i, line in enumerate(lines):
        if not line.lstrip().startswith("|"):
            column = None
            continue
        cells = line.split("|")
        if column is None:
            names = [c.strip() for c in cells]
            column = names.index(header) if header in names else -1
        elif 0 <= column < len(cells):
            cells[column] = re.sub(r"[^\n]", "\0", cells[column])
            lines[i] = "|".join(cells)
    return "\n".join(lines)


def markdown_of(path: Path) -> str:
    """A Chinese page's Markdown; a notebook's as :func:`notebook_markdown` reads it."""
    text = path.read_text(encoding="utf-8")
    return notebook_markdown(text) if path.suffix == ".py" else text


def page_prose(path: Path) -> str:
    """A Chinese page's prose, as :func:`prose` makes it; the glossary without its usage
    table and its English column."""
    text = markdown_of(path)
    if path.resolve() != GLOSSARY.resolve():
        return prose(text)
    return prose(mask_column(text, "English"), usage_section(text))


def chinese_pages() -> list[Path]:
    return sorted(p for p in DOCS.rglob("*.zh.*") if p.suffix in {".md", ".py"})


# --- links ------------------------------------------------------------------------------

LINK = re.compile(r"(?<![!\]\\])\[((?:[^\[\]\n]|\n(?!\n))+)\]\(([^()\s]*)\)")
CODE_TEXT = re.compile(r"`[^`]+`")
URL_TEXT = re.compile(r"^(?:https?://|www\.)\S+$|^\S+\.(?:com|org|io|ai|dev)(?:/\S*)?$")


@dataclass(frozen=True)
class Link:
    line: int
    text: str  # whitespace removed, as the build joins a Chinese line break
    target: str
    anchor: str  # "" for a link to the page itself


def links(markdown: str) -> list[Link]:
    """Every Markdown link of a page whose text is words: not an image, not a link whose
    text is code or a URL, none inside code, math or a comment."""
    text = FENCE.sub(_blank, markdown)
    text = NOT_PROSE[0].sub(_blank, text)  # comments
    found = []
    for m in LINK.finditer(text):
        words, target = m.group(1).strip(), m.group(2)
        if "\0" in words or CODE_TEXT.sub("", words).strip() == "" or URL_TEXT.match(words):
            continue
        path, _, anchor = target.partition("#")
        path = path.partition("?")[0]  # a query (the widget's settings) names no other page
        line = text.count("\n", 0, m.start()) + 1
        found.append(Link(line, "".join(words.split()), path, anchor))
    return found


def link_page(page: Path, target: str) -> Path | None:
    """The English source of the handbook page a link of ``page`` (a Chinese page or
    notebook under docs/) leads to, or None (an outside address, a download, an image).
    A link to a source file (``x.md``, ``x.py``) is read from the page's folder, as MkDocs
    reads it; any other link is a URL, read from the page's own URL (``dir/name/``)."""
    if "://" in target or target.startswith(("mailto:", "/")):
        return None
    source = page.with_name(page.name.replace(".zh.", "."))
    if not target:
        return source
    if target.endswith((".md", ".py")):
        base = source.parent
    else:
        base = source.parent if source.stem == "index" else source.parent / source.stem
    resolved = Path(os.path.normpath(base / target))
    if resolved.suffix in {".md", ".py"}:
        candidates = [resolved]
    else:
        candidates = [
            resolved.with_suffix(".md"),
            resolved.with_suffix(".py"),
            resolved / "index.md",
        ]
    for candidate in candidates:
        if candidate.is_file() and DOCS in candidate.parents:
            return candidate
    return None


def twin(english: Path) -> Path:
    return english.with_name(f"{english.stem}.zh{english.suffix}")


# --- the glossary's terms, by the page that explains them -------------------------------

TERM_SEPARATORS = re.compile(r"[（）()，,、/]")


def _term_names(cell: str) -> set[str]:
    """The names a glossary cell gives: 'Peri-LN（直译：外围层归一化）' gives Peri-LN and
    外围层归一化; 'layer normalization (LayerNorm, LN)' three names; math and code aside."""
    cell = re.sub(r"直译[：:]?|\$[^$]*\$|`[^`]*`", "", cell)
    return {n.strip() for n in TERM_SEPARATORS.split(cell) if n.strip()}


def glossary_terms(text: str) -> dict[Path, set[str]]:
    """For each page a term's 详见 link leads to, the names the glossary gives that term
    (its 中文 and English cells): a link to the page may be named by its term."""
    start, _ = usage_section(text)
    terms: dict[Path, set[str]] = {}
    header: list[str] | None = None
    for line in text[:start].split("\n"):
        if not line.lstrip().startswith("|"):
            header = None
            continue
        cells = _cells(line)
        if header is None:
            header = cells
            continue
        if {"中文", "English", "详见"} - set(header) or set(line) <= set("|-: "):
            continue
        if len(cells) != len(header):
            raise ValueError(f"glossary.zh.md: {len(cells)} cells, not {len(header)}: {line}")
        row = dict(zip(header, cells, strict=True))
        names = _term_names(row["中文"]) | _term_names(row["English"])
        for m in LINK.finditer(row["详见"]):
            page = link_page(GLOSSARY, m.group(2).partition("#")[0])
            if page is not None:
                terms.setdefault(page, set()).update(names)
    return terms


# --- a page's list of sources -------------------------------------------------------------

SOURCES_HEADING = re.compile(r"^(#{2,}) .*\{ *#sources *\}[ \t]*$", re.M)


def sources_section(markdown: str) -> tuple[int, int] | None:
    """The character range of a page's sources section (``## 参考来源 { #sources }``, up to
    the next heading of its level or above, the page's closing line naming the next step,
    or its footnote definitions), or None."""
    start = SOURCES_HEADING.search(markdown)
    if start is None:
        return None
    level = len(start.group(1))
    end = re.compile(
        rf"^#{{1,{level}}} |^\[\^[^\]\n]+\]:|^\*\*(?:Next:|下一步：)\*\*", re.M
    ).search(markdown, start.end())
    return start.start(), end.start() if end else len(markdown)
