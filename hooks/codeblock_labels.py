"""Show the test markers of code blocks to the reader.

The tests run a block marked ``<!--pytest-codeblocks:cont-->`` after the block
above it, and compare the block after ``<!--pytest-codeblocks:expected-output-->``
with what the block above printed. Both markers are HTML comments, invisible on
the page; this hook adds a visible label next to each, so a reader knows which
block needs the one above and which block is output.
"""

from __future__ import annotations

import re

from resnorm_site.labels import label, language

MARKER = re.compile(
    r"^(?P<indent>[ \t]*)<!--pytest-codeblocks:(?P<kind>cont|expected-output)-->[ \t]*$", re.M
)
CLASS = {"cont": ("rn-cont", "cont"), "expected-output": ("rn-output", "output")}


def on_page_markdown(markdown: str, page, config, files) -> str:
    lang = language(config.theme.get("language"))

    def labelled(match: re.Match) -> str:
        css, name = CLASS[match.group("kind")]
        indent = match.group("indent")
        if indent:
            # inside an admonition or a tab, raw HTML would land inside a <p> of its own:
            # the label is a paragraph given its class by attr_list instead
            return f"{indent}{label(lang, name)}\n{indent}{{: .{css} }}\n\n{match.group(0)}"
        text = f'<p class="{css}">{label(lang, name)}</p>'
        return f"{text}\n\n{match.group(0)}"

    return MARKER.sub(labelled, markdown)
