"""The Chinese edition's build details that mkdocs-static-i18n leaves to the site.

mkdocs-static-i18n builds the English site, then the Chinese one into ``zh/`` of
the same directory, each as a build of its own. Two things follow:

- Material's language switch script reads a ``sitemap.xml`` at each language's
  root (``extra.alternate``), and only the English root gets one; the Chinese root
  gets the same file, so the script finds it there too instead of requesting a
  missing file on every page.
- mkdocs-static-i18n stacks up every language's search entries in a list it never
  empties, and ``mkdocs serve`` keeps the plugin from one rebuild to the next: each
  rebuild indexed every page again on top of the last. Under ``--dirty``, Material's
  search plugin also merges the previous index into each rebuild, and rebuilds grew
  slower by about three times each (0.5 s, 0.7, 1.1, 2.7, 7.4, 27, 97 s). Here the list
  is emptied when a build starts, and a dirty build's index is made from each page's
  latest entries, with mkdocs-static-i18n's own de-duplication.
- mkdocs-jupyter caches each rendered notebook page and, at the end of a build,
  deletes the entries that build did not use: the English build would delete the
  Chinese pages' entries and the Chinese build the English ones, so every build
  would convert every notebook again. Here the entries used by either language are
  kept, and the others deleted once both languages are built.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from mkdocs.plugins import event_priority

LANGUAGES = ("zh",)
DEFAULT_LANGUAGE = "en"


class _KeepAll(set):
    """The rendered-page cache entries used by every language of this build; to
    mkdocs-jupyter's own end-of-build clean-up, every entry counts as used."""

    def __contains__(self, item) -> bool:
        return True


_used = _KeepAll()
_dirty = False  # mkdocs serve --dirty renders some pages only: delete nothing then
_rebuilds = False  # mkdocs serve --dirty: rebuilds in one process, some pages each
_entries: dict[str, list[dict]] = {}  # page URL -> its latest search entries


def _plugin(config, *names):
    return next((config.plugins[n] for n in names if n in config.plugins), None)


def page_entries(entries: list[dict], url: str) -> list[dict]:
    """The search entries of the page at ``url`` ("" for the home page)."""
    return [e for e in entries if e["location"].split("#")[0] == url]


def on_startup(command: str, dirty: bool) -> None:
    global _dirty, _rebuilds
    _dirty = dirty
    _rebuilds = command == "serve" and dirty
    _entries.clear()


@event_priority(0)  # before mkdocs-static-i18n's (-100), which reads the language
def on_config(config):
    """Every build starts with the default language, as the first one does: the plugin
    remembers the last language it built, and mkdocs serve keeps the plugin from one
    rebuild to the next, so each rebuild built Chinese, then English, then Chinese again."""
    i18n = _plugin(config, "i18n")
    if i18n is not None and not i18n.building:
        i18n.current_language = i18n.default_language
    return config


@event_priority(-10)  # after Material's search plugin has indexed the page
def on_page_context(context, page, config, nav):
    search = _plugin(config, "material/search", "search")
    if _rebuilds and search is not None:
        _entries[page.url] = page_entries(search.search_index.entries, page.url)
    return context


# The language of each build under way, innermost last: mkdocs-static-i18n runs the
# Chinese build inside the English one's post_build, and leaves the configuration's
# language set to the last one built, so post_build cannot tell which build ends from it.
_building: list[str] = []


_given_back: list = []  # plugins whose reconfigure_search this process turned off
_search_plugins: list = []  # search plugins holding a dirty rebuild's index


def on_build_error(error) -> None:
    _building.clear()


def on_shutdown() -> None:
    """The plugins as they were: a process that builds again (tests do) starts clean."""
    while _given_back:
        _given_back.pop().config.reconfigure_search = True
    while _search_plugins:
        _search_plugins.pop().search_index_prev = None


@event_priority(-10)  # after mkdocs-jupyter's, which starts a new set for each build
def on_pre_build(config) -> None:
    _building.append(config.theme.get("language", DEFAULT_LANGUAGE))
    i18n = _plugin(config, "i18n")
    if i18n is not None and _building == [DEFAULT_LANGUAGE]:
        # A new build: the plugin never empties this list itself, and mkdocs serve
        # keeps the plugin from one rebuild to the next.
        i18n.search_entries.clear()
        if _rebuilds and i18n.config.reconfigure_search:
            # de-duplicated in write_dirty_index instead; given back in on_shutdown
            i18n.config.reconfigure_search = False
            _given_back.append(i18n)
    jupyter = config.plugins.get("mkdocs-jupyter")
    if jupyter is None:
        return
    if config.theme.get("language", DEFAULT_LANGUAGE) == DEFAULT_LANGUAGE:
        _used.clear()  # a new build: the English one comes first
    jupyter._used_cache_paths = _used


def write_dirty_index(config) -> None:
    """The search index of a dirty rebuild: every page's latest entries, once each."""
    search, i18n = _plugin(config, "material/search", "search"), _plugin(config, "i18n")
    entries = [entry for page in _entries.values() for entry in page]
    i18n.reconfigure_search_duplicates(entries)
    search.search_index.entries = entries
    search.search_index_prev = None
    path = Path(config["site_dir"]) / "search" / "search_index.json"
    path.write_text(search.search_index.generate_search_index(None), encoding="utf-8")
    search.search_index_prev = search.search_index
    if search not in _search_plugins:
        _search_plugins.append(search)


@event_priority(-200)  # after mkdocs-static-i18n has built every language
def on_post_build(config) -> None:
    outermost = _building.pop() == DEFAULT_LANGUAGE if _building else True
    search = _plugin(config, "material/search", "search")
    if _rebuilds and outermost and search is not None and _plugin(config, "i18n") is not None:
        write_dirty_index(config)
    jupyter = config.plugins.get("mkdocs-jupyter")
    if jupyter is not None and jupyter.config["cache"] and not _dirty:
        used = {Path(p) for p in set.__iter__(_used)}
        for entry in Path(jupyter.config["cache_dir"]).glob("*.json"):
            if entry not in used:
                entry.unlink()
    site = Path(config["site_dir"])
    for lang in LANGUAGES:
        if (site / lang).is_dir():
            for name in ("sitemap.xml", "sitemap.xml.gz"):
                if (site / name).is_file():
                    shutil.copyfile(site / name, site / lang / name)
