"""Material's search entries for each page, remembered between builds
(resnorm_site/search_entries.py says why and under which key). When ``mkdocs build``
(or a ``mkdocs serve`` without ``--dirty``) ends, the entries that no build of the
process used are deleted."""

from __future__ import annotations

import threading
import time

from mkdocs.plugins import event_priority

from resnorm_site import paths, search_entries
from resnorm_site.state import STATE


def on_serve(server, config, builder):
    """With entries read back, the first build may not have segmented any Chinese text,
    and jieba loads its dictionary on first use (about a second): load it now, while the
    server waits for the first edit, not during the first rebuild of a Chinese page. It
    starts a few seconds in, so as not to hold up the first pages the browser asks for."""
    import jieba

    def load() -> None:
        time.sleep(3)
        jieba.initialize()

    threading.Thread(target=load, name="jieba-dictionary", daemon=True).start()
    return server


@event_priority(10)  # before Material's search plugin indexes the page
def on_page_context(context, page, config, nav):
    search = config.plugins.get("material/search")
    # each language's build has its own index; wrap whichever this one is
    if search is not None and search.config.enabled and hasattr(search, "search_index"):
        search_entries.remember(
            search.search_index,
            dict(search.config),
            paths.search_cache(),
            STATE.process.search_used,
        )
    return context


def on_shutdown() -> None:
    """Every language's build runs in the one process; a dirty build indexed some pages
    only, so it deletes nothing."""
    if not STATE.process.dirty and STATE.process.search_used:
        search_entries.forget_unused(paths.search_cache(), STATE.process.search_used)
