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
