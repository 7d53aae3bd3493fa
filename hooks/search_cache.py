"""Material's search entries for each page, remembered between builds.

Material's search plugin parses every rendered page's HTML to split it into sections,
and segments Chinese text into words with jieba: most of a build whose notebooks are
already executed, and so most of the wait before ``mkdocs serve`` shows its first
page. A page's entries depend only on what the plugin reads: the page's HTML, table
of contents, URL, title and front matter, the plugin's configuration and the versions
of Material and jieba. Entries are kept in ``.cache/search/`` under a hash of all of
that, so a page that did not change is not parsed again; any change is a new entry.
When ``mkdocs build`` (or a ``mkdocs serve`` without ``--dirty``) ends, the entries
that no build of the process used are deleted.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path

from mkdocs.plugins import event_priority

CACHE = Path(".cache/search")
_used: set[str] = set()  # entry files read or written by this process, every language
_folder: Path | None = None  # where they are
_dirty = False


def on_startup(command: str, dirty: bool) -> None:
    global _dirty
    _dirty = dirty
    _used.clear()


def on_serve(server, config, builder):
    """With entries read back, the first build may not have segmented any Chinese text,
    and jieba loads its dictionary on first use (about a second): load it now, while the
    server waits for the first edit, not during the first rebuild of a Chinese page. It
    starts a few seconds in, so as not to hold up the first pages the browser asks for."""
    import threading

    import jieba

    def load() -> None:
        time.sleep(3)
        jieba.initialize()

    threading.Thread(target=load, name="jieba-dictionary", daemon=True).start()
    return server


def _search(config):
    plugin = config.plugins.get("material/search") or config.plugins.get("search")
    return plugin if plugin is not None and hasattr(plugin, "search_index") else None


def _toc(items) -> list:
    return [[i.id, i.url, i.title, _toc(i.children)] for i in items]


def entry_key(page, search) -> str:
    """A hash of everything Material's search plugin reads to index ``page``."""
    import jieba
    import material

    h = hashlib.sha256()
    parts = (
        material.__version__,
        jieba.__version__,
        json.dumps(dict(search.config), sort_keys=True, default=str),
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


def remembering(index, search, folder: Path):
    """``index.add_entry_from_context``, reading a page's entries from ``folder`` when
    they are there and writing them there when they are not."""
    parse = index.add_entry_from_context

    def add_entry_from_context(page) -> None:
        path = folder / f"{entry_key(page, search)}.json"
        _used.add(path.name)
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
    return add_entry_from_context


@event_priority(10)  # before Material's search plugin indexes the page
def on_page_context(context, page, config, nav):
    search = _search(config)
    # each language's build has its own index; wrap whichever this one is
    if search is not None and search.config.enabled:
        index = search.search_index
        if not getattr(index.add_entry_from_context, "remembering", False):
            global _folder
            _folder = Path(config.config_file_path).parent / CACHE
            index.add_entry_from_context = remembering(index, search, _folder)
    return context


def on_shutdown() -> None:
    """Delete the entries that no build of this process used (every language's build
    runs in the one process), unless a dirty build indexed some pages only."""
    if _dirty or _folder is None or not _used:
        return
    for entry in _folder.glob("*.json"):
        if entry.name not in _used:
            entry.unlink(missing_ok=True)
