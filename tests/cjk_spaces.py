"""Whitespace between two CJK characters in the text a reader sees, found in a page's HTML.

A browser shows a space (or a newline, which it turns into one) between two Chinese
characters as a gap in the sentence. The scan reads the text as a browser lays it out:
the text of inline elements (links, emphasis, spans) runs on across their tags; a block
element, a line break, an image or a form control ends the run. Code (``<pre>``,
``<code>``, ``<kbd>``, ``<samp>``), scripts, styles, SVG, MathML and KaTeX's math
(``.arithmatex``, ``.katex``) are not prose: their text is skipped, and they end the run.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

from resnorm_site.cjk_text import CJK, SHARED, cjk_pair

INLINE = {
    "a", "abbr", "b", "bdi", "bdo", "cite", "data", "del", "dfn", "em", "i", "ins", "mark",
    "q", "s", "small", "span", "strong", "sub", "sup", "time", "u", "wbr",
}  # fmt: skip
SKIPPED = {"pre", "code", "kbd", "samp", "script", "style", "svg", "math", "textarea"}
MATH_CLASSES = {"arithmatex", "katex", "katex-display", "MathJax"}
# The whitespace a browser collapses to one space; a no-break space is written on purpose.
GAP = re.compile(f"([{CJK}{SHARED}])([ \t\n\r\f]+)(?=([{CJK}{SHARED}]))")


class _Text(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.runs: list[str] = []
        self.run: list[str] = []
        self.skip: tuple[str, int] | None = None  # the element skipped, and its nesting

    def end_run(self) -> None:
        if self.run:
            self.runs.append("".join(self.run))
        self.run = []

    def handle_starttag(self, tag, attrs):
        if self.skip is not None:
            if tag == self.skip[0]:
                self.skip = (tag, self.skip[1] + 1)
            return
        classes = set((dict(attrs).get("class") or "").split())
        if tag in SKIPPED or classes & MATH_CLASSES:
            self.end_run()
            self.skip = (tag, 1)
        elif tag not in INLINE:
            self.end_run()

    def handle_startendtag(self, tag, attrs):
        if self.skip is None and tag not in INLINE:
            self.end_run()

    def handle_endtag(self, tag):
        if self.skip is not None:
            if tag == self.skip[0]:
                depth = self.skip[1] - 1
                self.skip = (tag, depth) if depth else None
            return
        if tag not in INLINE:
            self.end_run()

    def handle_data(self, data):
        if self.skip is None:
            self.run.append(data)


def _shown(text: str) -> str:
    return text.replace("\n", "⏎").replace("\t", "⇥")


def prose_runs(html: str) -> list[str]:
    """The prose of ``html`` as a browser lays it out: one text per run of inline content."""
    parser = _Text()
    parser.feed(html)
    parser.close()
    parser.end_run()
    return parser.runs


def stray_spaces(html: str, context: int = 12) -> list[str]:
    """Each place where whitespace stands between two CJK characters in ``html``'s prose,
    as the text around it with the whitespace marked: '…深度如何，[⏎]层与层之间…'."""
    found = []
    for run in prose_runs(html):
        for gap in GAP.finditer(run):
            if cjk_pair(gap.group(1), gap.group(3)):
                before = run[max(0, gap.start(2) - context) : gap.start(2)]
                after = run[gap.end(2) : gap.end(2) + context]
                found.append(f"…{_shown(before)}[{_shown(gap.group(2))}]{_shown(after)}…")
    return found


# --- In a page's source: the space after a bold lead-in, and the width of punctuation in a
# list of sources. Both are read from the Markdown (tests/terms.py blanks what is not prose).

FULL_WIDTH_END = "。：；！？，、）」』”"
# A paragraph or list item that opens with bold: 「**动机。**保留……」
LEAD_IN = re.compile(
    r"^(?P<lead>[ \t]*(?:>[ \t]*)*(?:(?:[-*+]|\d+[.)])[ \t]+)?)\*\*(?P<bold>[^*\n]+?)\*\*"
    r"(?P<outside>[。：；！？，、]?)(?P<gap>[ \t]*\n?[ \t]*)(?P<next>[^\s*]?)",
    re.M,
)


def lead_in_gaps(prose: str, notebook: bool) -> list[tuple[int, str]]:
    """(line, lead-in) of each bold lead-in of ``prose`` that ends in full-width punctuation
    and is not followed straight by its sentence.

    A page (Python-Markdown) writes 「**动机。**保留」: the space or line break in
    「**动机。** 保留」 shows after the full stop. A notebook's cells are rendered by mistune,
    which follows CommonMark: a closing ``**`` after punctuation closes only before a space
    or punctuation, so 「**动机。**保留」 shows its asterisks; a notebook writes
    「**动机**。保留」, the punctuation after the bold."""
    found = []
    for m in LEAD_IN.finditer(prose):
        bold, outside, gap, following = m["bold"], m["outside"], m["gap"], m["next"]
        if not following:
            continue  # a bold line of its own, or bold that ends the paragraph
        inside = bold[-1] in FULL_WIDTH_END
        # a break after a line that ends in punctuation is joined by the build (resnorm_site/
        # cjk.py); after a closing ** it is kept, for joining would break the emphasis
        spaced = (inside or outside) and gap != "" and not ("\n" in gap and outside)
        broken = notebook and inside and not outside
        if spaced or broken:
            line = prose.count("\n", 0, m.start()) + 1
            shown = f"**{bold}**{outside}{gap}{following}".replace("\n", "⏎")
            found.append((line, shown.replace("\0", "…")))
    return found


# In a list of sources the marks between the parts of an entry are full-width, as in the
# prose around it: 「Zhu et al. 2024，*Hyper-Connections*，[arXiv 2409.19606](…)（v3）：§2.1」.
# A half-width one stands only inside English: between two words of a name or a journal
# (「Zhang, Sennrich」, 「SIAM J. Matrix Anal. Appl., 2008」), or round an equation number
# (「式 (1)–(7)」). Titles (in italics), code, links and math are not looked at.
SOURCE_PARTS = re.compile(
    r"`[^`\n]+`|\[[^\]\n]*\]\([^()\s]*\)|(?<![*\w])\*[^*\n]+\*(?![*\w])|\$[^$\n]+\$|https?://\S+"
)
HALF_WIDTH = re.compile(r"[,;:()]")
EQUATION_NUMBER = re.compile(r"\((?:\d+[a-z]?|[a-z])\)")  # 式 (3), 图 2(b)
ENGLISH_SIDE = re.compile(r"[A-Za-z0-9.]")


def half_width_marks(section: str) -> list[tuple[int, str]]:
    """(line, context) of each line of a sources section with a half-width , ; : ( ) that
    is not inside English, the marks shown in 【】; lines counted from the section's first."""
    text = SOURCE_PARTS.sub(lambda m: "\0" * len(m.group(0)), section)
    text = EQUATION_NUMBER.sub(lambda m: "\0" * len(m.group(0)), text)
    marks: dict[int, list[int]] = {}
    for m in HALF_WIDTH.finditer(text):
        i = m.start()
        before = text[:i].rstrip(" ")[-1:]
        after = text[i + 1 :].lstrip(" ")[:1]
        inside_english = (
            m.group(0) in ",;:"
            and all(ENGLISH_SIDE.match(c) for c in (before, after) if c)
            and before
            and after
        )
        if not inside_english:
            marks.setdefault(text.count("\n", 0, i) + 1, []).append(i)
    lines = section.split("\n")
    found = []
    for line, offsets in marks.items():
        start = sum(len(x) + 1 for x in lines[: line - 1])
        shown = list(lines[line - 1])
        for i in reversed(offsets):
            if i - start < len(shown):
                shown[i - start] = f"【{shown[i - start]}】"
        found.append((line, "".join(shown)))
    return found
