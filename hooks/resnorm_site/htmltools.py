"""Finding an element's end in generated HTML, where a regex alone cannot."""

from __future__ import annotations

import re
from functools import cache


@cache
def _tags(name: str) -> re.Pattern:
    return re.compile(rf"<{name}\b|</{name}>")


def element_end(html: str, start: int, name: str) -> int:
    """The index just past the ``</name>`` that closes the ``<name`` opened at ``start``
    (elements of the same name nest)."""
    depth = 0
    for tag in _tags(name).finditer(html, start):
        depth += 1 if tag.group(0) == f"<{name}" else -1
        if depth == 0:
            return tag.end()
    raise ValueError(f"a <{name}> at offset {start} has no closing </{name}>")
