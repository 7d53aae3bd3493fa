"""Print the anchor id of every heading of a page: ``python scripts/heading_ids.py docs/x.md``.

A Chinese page gives each heading the id its English twin's heading has
(``## 残差连接 { #residual-connections }``), so links and anchors are the same
in both languages; this prints the ids to copy, and the i18n tests compare them.
"""

from __future__ import annotations

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


def heading_ids(text: str) -> list[tuple[int, str, str]]:
    """(level, id, title) of every heading, in page order, code blocks ignored."""
    md = markdown.Markdown(extensions=EXTENSIONS, extension_configs={"toc": {"permalink": False}})
    md.convert(text)
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
