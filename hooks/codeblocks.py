"""Show the test markers of code blocks to the reader.

The tests run a block marked ``<!--pytest-codeblocks:cont-->`` after the block
above it, and compare the block after ``<!--pytest-codeblocks:expected-output-->``
with what the block above printed. Both markers are HTML comments, invisible on
the page; this hook adds a visible label next to each, so a reader knows which
block needs the one above and which block is output.
"""

from __future__ import annotations

import re

MARKER = re.compile(
    r"^(?P<indent>[ \t]*)<!--pytest-codeblocks:(?P<kind>cont|expected-output)-->[ \t]*$", re.M
)
LABELS = {  # per language of the build (mkdocs-static-i18n sets the theme's)
    "en": {
        "cont": '<p class="rn-cont">Continues the code above: run that block first.</p>',
        "expected-output": '<p class="rn-output">Output</p>',
    },
    "zh": {
        "cont": '<p class="rn-cont">接续上面的代码：请先运行上一个代码块。</p>',
        "expected-output": '<p class="rn-output">输出</p>',
    },
}


def on_page_markdown(markdown: str, page, config, files) -> str:
    lang = config.theme.get("language", "en")
    labels = LABELS.get(lang, LABELS["en"])

    def label(match: re.Match) -> str:
        indent = match.group("indent")
        return f"{indent}{labels[match.group('kind')]}\n\n{match.group(0)}"

    return MARKER.sub(label, markdown)
