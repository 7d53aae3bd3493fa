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
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
GLOSSARY = DOCS / "reference" / "glossary.zh.md"
USAGE_HEADING = re.compile(r"^## .*\{ *#usage *\}[ \t]*$", re.M)
CODE_SPAN = re.compile(r"`([^`\n]+)`")

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

    def message(self, name: str) -> str:
        use = " / ".join(self.row.use)
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


def find_variants(text: str, rows: list[Row]) -> list[Hit]:
    """Every variant of ``rows`` in ``text`` (already reduced to prose), by line."""
    flat, offsets = _squeezed(text)
    spans: list[tuple[int, int, str, Row]] = []
    for row in rows:
        uses = ["".join(u.split()) for u in row.use]
        for variant in row.avoid:
            v = "".join(variant.split())
            for start in _occurrences(flat, v):
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
    return [Hit(text.count("\n", 0, offsets[s[0]]) + 1, s[2], s[3]) for s in kept]


def page_prose(path: Path) -> str:
    """A Chinese page's prose, as :func:`prose` makes it; the glossary without its usage table."""
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".py":
        text = notebook_markdown(text)
    skip = usage_section(text) if path.resolve() == GLOSSARY.resolve() else None
    return prose(text, skip)


def chinese_pages() -> list[Path]:
    return sorted(p for p in DOCS.rglob("*.zh.*") if p.suffix in {".md", ".py"})
