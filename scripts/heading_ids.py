"""Print the anchor id of every heading of a page: ``python scripts/heading_ids.py docs/x.md``.

A Chinese page gives each heading the id its English twin's heading has
(``## 残差连接 { #residual-connections }``), so links and anchors are the same
in both languages; this prints the ids to copy, and the i18n tests compare them.
"""

from __future__ import annotations

import re
import sys

import markdown

EXTENSIONS = [
    "abbr",
    "admonition",
    "attr_list",
    "def_list",
    "footnotes",
    "md_in_html",
    "tables",
    "toc",
    "pymdownx.details",
    "pymdownx.superfences",
    "pymdownx.tabbed",
]


def _any_options(language, inputs, options, attrs, md) -> bool:
    options.update(inputs)  # plantuml_markdown reads alt="..." and the like; all are fine here
    return True


# A diagram's fence carries options (```plantuml alt="..."), which superfences refuses on a
# plain fence: the diagram would then read as text, and hide the headings after it.
CONFIGS = {
    "toc": {"permalink": False},
    "pymdownx.superfences": {
        "custom_fences": [
            {
                "name": "plantuml",
                "class": "uml",
                "format": lambda *args, **kwargs: "",
                "validator": _any_options,
            }
        ]
    },
}


# A fence's options beyond its language (```python excerpt="file.py:name", which the build
# fills with the module's lines) are not superfences syntax: such a fence would read as
# text, and an empty one would open a block that hides every heading after it.
FENCE_OPTIONS = re.compile(r"^([ \t]*(?:`{3,}|~{3,})[ \t]*(?!plantuml)[\w+-]+)[ \t]+[^`\n]*$", re.M)


def heading_ids(text: str) -> list[tuple[int, str, str]]:
    """(level, id, title) of every heading, in page order, code blocks ignored."""
    md = markdown.Markdown(extensions=EXTENSIONS, extension_configs=CONFIGS)
    md.convert(FENCE_OPTIONS.sub(r"\1", text))
    out: list[tuple[int, str, str]] = []

    def walk(tokens):
        for t in tokens:
            out.append((t["level"], t["id"], t["name"]))
            walk(t["children"])

    walk(md.toc_tokens)
    return out


if __name__ == "__main__":
    for path in sys.argv[1:]:
        print(f"# {path}")
        with open(path, encoding="utf-8") as f:
            for level, anchor, title in heading_ids(f.read()):
                print(f"{'#' * level} {title}  {{ #{anchor} }}")
