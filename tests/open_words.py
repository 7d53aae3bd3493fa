"""How many words of prose a page puts in front of a reader on arrival.

Code and math aside, and what the page folds aside: the body of a closed ``???`` block,
footnotes (they sit under the page, out of the argument), HTML comments, link targets.
What is left is the running text a reader wades through, headings and table cells
included. For a notebook page, its Markdown cells.

    python -m tests.open_words            # every English page, longest first
    python -m tests.open_words docs/placement/pre-ln.md
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"

# The most open words a page may carry (issue 32: five pages carried 4,300-6,200).
LIMIT = 3500

FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})")
FOLDED = re.compile(r"^(?P<indent>[ \t]*)\?\?\?(?!\+)\s")  # ??? closed; ???+ is open
FOOTNOTE = re.compile(r"^\[\^[^\]]+\]:")
DISPLAY_MATH = re.compile(r"\$\$.*?\$\$", re.S)
INLINE_MATH = re.compile(r"(?<![\\$])\$(?!\s)[^$\n]+?(?<!\s)\$")
COMMENT = re.compile(r"<!--.*?-->", re.S)
TAG = re.compile(r"<[^>]+>")
LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
REFLINK = re.compile(r"\[\^[^\]]+\]")  # a footnote's mark in the text
MEASURED = re.compile(r"\[\[[a-z-]+:[^\]]+\]\]")
ATTRS = re.compile(r"\{[:#.][^}]*\}")
WORD = re.compile(r"\S*[A-Za-z0-9\u4e00-\u9fff]\S*")

# Notes on how a source was read ("could not be read", "abstract only", "read in a
# verbatim copy"): they belong in a footnote, not in the argument (issue 32).
PROVENANCE = {
    "en": re.compile(
        r"could not be read|can ?not be read|abstract only|only (?:the|its|their) abstracts?"
        r"|from (?:its|the|their) abstracts?(?! of)|verbatim (?:cop(?:y|ies)|transcri\w*)"
        r"|secondary transcri\w*|read in (?:a |the )?(?:verbatim|secondary)"
        r"|not read for this page|checkpoint not read|known only from",
        re.I,
    ),
    "zh": re.compile(
        r"逐字(?:转载|转录|副本|抄本)|(?:只|仅)(?:读|看)(?:了|到)?(?:其|它的|论文的)?摘要"
        r"|只知道摘要|仅有摘要|未能读到|无法读到|没能读到|二手转录|没有读到"
    ),
}


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def _drop_blocks(lines: list[str]) -> list[str]:
    """Lines with fenced code, closed ``???`` bodies and footnote definitions removed."""
    kept: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        fence = FENCE.match(line)
        if fence:
            mark = fence.group("fence")
            closing = re.compile(rf"^[ \t]*{re.escape(mark[0])}{{{len(mark)},}}[ \t]*$")
            i += 1
            while i < len(lines) and not closing.match(lines[i]):
                i += 1
            i += 1
            continue
        folded = FOLDED.match(line)
        if folded or FOOTNOTE.match(line):
            base = _indent(line)
            i += 1
            while i < len(lines) and (not lines[i].strip() or _indent(lines[i]) > base):
                i += 1
            continue
        kept.append(line)
        i += 1
    return kept


def prose(markdown: str) -> str:
    """The open running text of a Markdown page or cell."""
    text = "\n".join(_drop_blocks(markdown.splitlines()))
    text = COMMENT.sub(" ", text)
    text = DISPLAY_MATH.sub(" ", text)
    text = INLINE_MATH.sub(" ", text)
    text = MEASURED.sub(" value ", text)
    text = LINK.sub(r"\1", text)
    text = REFLINK.sub(" ", text)
    text = ATTRS.sub(" ", text)
    return TAG.sub(" ", text)


def count(text: str) -> int:
    return len(WORD.findall(text))


def markdown_of(page: Path) -> str:
    if page.suffix == ".py":
        import jupytext

        notebook = jupytext.read(page)
        return "\n\n".join(c.source for c in notebook.cells if c.cell_type == "markdown")
    return page.read_text(encoding="utf-8")


def open_words(page: Path) -> int:
    return count(prose(markdown_of(page)))


def english_pages() -> list[Path]:
    pages = [p for p in DOCS.rglob("*.md") if not p.name.endswith(".zh.md")]
    pages += [
        p
        for folder in ("experiments", "notebooks")
        for p in (DOCS / folder).glob("*.py")
        if not p.name.endswith(".zh.py")
    ]
    return sorted(pages)


def provenance_notes(page: Path) -> list[str]:
    """The notes on how a source was read that a page leaves in its open text."""
    lang = "zh" if ".zh." in page.name else "en"
    # A phrase in inline code is named, not used (the glossary's usage table lists them).
    text = re.sub(r"`[^`\n]*`", " ", prose(markdown_of(page)))
    return PROVENANCE[lang].findall(text)


def main(argv: list[str]) -> int:
    pages = [Path(a).resolve() for a in argv] or english_pages()
    rows = sorted(((open_words(p), p) for p in pages), key=lambda r: -r[0])
    for words, page in rows:
        flag = "  over" if words > LIMIT else ""
        notes = provenance_notes(page)
        if page.suffix == ".md" and page.with_suffix(".zh.md").is_file():
            notes += provenance_notes(page.with_suffix(".zh.md"))
        elif page.suffix == ".py" and page.with_suffix(".zh.py").is_file():
            notes += provenance_notes(page.with_suffix(".zh.py"))
        flag += f"  provenance notes in the open (en+zh): {notes}" if notes else ""
        print(f"{words:6d}  {page.relative_to(ROOT).as_posix()}{flag}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
