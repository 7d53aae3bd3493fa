"""Material's search entries for each page, remembered between builds.

Material's search plugin parses every rendered page's HTML to split it into sections,
and segments Chinese text into words with jieba: most of a build whose notebooks are
already executed, and so most of the wait before ``mkdocs serve`` shows its first
page. A page's entries depend only on what the plugin reads: the page's HTML, table
of contents, URL, title and front matter, the plugin's configuration and the versions
of Material and jieba. Entries are kept under a hash of all of that, so a page that
did not change is not parsed again; any change is a new entry.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from resnorm_site import compat

WHAT = "hooks/search_cache.py"


def _toc(items) -> list:
    return [[i.id, i.url, i.title, _toc(i.children)] for i in items]


def entry_key(page, search_config: dict) -> str:
    """A hash of everything Material's search plugin reads to index ``page``."""
    import jieba
    import material

    h = hashlib.sha256()
    parts = (
        material.__version__,
        jieba.__version__,
        json.dumps(search_config, sort_keys=True, default=str),
        page.url,
        str(page.title),
        json.dumps(page.meta, sort_keys=True, default=str),
        json.dumps(_toc(page.toc)),
        page.content,
    )
    for part in parts:
        h.update(part.encode("utf-8"))
        h.update(b"\0")
    return h.hexdigest()[:32]


def remember(index, search_config: dict, folder: Path, used: set[str]) -> None:
    """Make ``index.add_entry_from_context`` read a page's entries from ``folder`` when
    they are there, and write them there when they are not. ``used`` collects the names
    of the entry files read or written."""
    parse = compat.private(index, "add_entry_from_context", "mkdocs-material", WHAT)
    if getattr(parse, "remembering", False):
        return

    def add_entry_from_context(page) -> None:
        path = folder / f"{entry_key(page, search_config)}.json"
        used.add(path.name)
        try:
            index.entries.extend(json.loads(path.read_text(encoding="utf-8")))
            return
        except (OSError, ValueError):
            pass  # not there yet (or unreadable): parse the page
        before = len(index.entries)
        parse(page)
        folder.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(index.entries[before:], ensure_ascii=False), encoding="utf-8")
        tmp.replace(path)  # whole, even with another build reading the folder

    add_entry_from_context.remembering = True
    index.add_entry_from_context = add_entry_from_context


def forget_unused(folder: Path, used: set[str]) -> None:
    """Delete the entries that no build of this process used."""
    for entry in folder.glob("*.json"):
        if entry.name not in used:
            entry.unlink(missing_ok=True)
