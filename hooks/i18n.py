"""The Chinese edition, where mkdocs-static-i18n 1.3.1 leaves it to the site: every build
starts from English, its search list is emptied per build (it grew every serve rebuild:
0.5 s to 97 s), each language gets its own search index and sitemap
(resnorm_site/editions.py), and mkdocs-jupyter's render cache keeps both languages' pages.
hooks/README.md lists the internals each relies on; all go through resnorm_site.compat."""

from __future__ import annotations

from pathlib import Path

from mkdocs.plugins import event_priority

from resnorm_site import compat, editions
from resnorm_site.notebooks import cache
from resnorm_site.paths import DEFAULT_LANGUAGE
from resnorm_site.state import STATE

WHAT = "hooks/i18n.py"


def _get(obj, name: str, package: str = "mkdocs-static-i18n"):
    return compat.private(obj, name, package, WHAT)


@event_priority(0)  # before mkdocs-static-i18n's (-100), which reads the language
def on_config(config):
    i18n = config.plugins.get("i18n")
    if i18n is not None and not _get(i18n, "building"):
        i18n.current_language = _get(i18n, "default_language")
    return config


@event_priority(-10)  # after Material's search plugin has indexed the page
def on_page_context(context, page, config, nav):
    search = config.plugins.get("material/search")
    if STATE.process.dirty and search is not None:
        entries = _get(search, "search_index", "mkdocs-material").entries
        STATE.process.search_pages[page.url] = editions.page_entries(entries, page.url)
    return context


@event_priority(-10)  # after mkdocs-jupyter's, which starts a new set for each build
def on_pre_build(config) -> None:
    i18n, jupyter = config.plugins.get("i18n"), config.plugins.get("mkdocs-jupyter")
    if i18n is not None and STATE.languages == [DEFAULT_LANGUAGE]:  # a new site build
        _get(i18n, "search_entries").clear()
        if STATE.process.dirty and i18n.config.reconfigure_search:
            # its de-duplication of one index for every language is work for nothing here
            STATE.process.restore[id(i18n), "reconfigure_search"] = (i18n.config, True)
            i18n.config.reconfigure_search = False
    if jupyter is not None and _get(jupyter, "_used_cache_paths", "mkdocs-jupyter") is not None:
        jupyter._used_cache_paths = STATE.site.rendered


@event_priority(-200)  # after mkdocs-static-i18n has built every language
def on_post_build(config) -> None:
    i18n, search = config.plugins.get("i18n"), config.plugins.get("material/search")
    if i18n is None or STATE.languages != [DEFAULT_LANGUAGE]:
        return  # a nested language's build: the outermost one does the site's end
    languages = _get(i18n, "build_languages")
    if search is not None:
        pages, dirty = STATE.process.search_pages.values(), STATE.process.dirty
        entries = [e for p in pages for e in p] if dirty else list(i18n.search_entries)
        index = _get(search, "search_index", "mkdocs-material")
        editions.write_indexes(index, entries, languages, Path(config["site_dir"]))
        if dirty:  # the next rebuild merges its pages into this index, not into the last one's
            STATE.process.restore[id(search), "search_index_prev"] = (search, None)
            search.search_index_prev = index
    jupyter = config.plugins.get("mkdocs-jupyter")
    if jupyter is not None and jupyter.config["cache"] and not STATE.process.dirty:
        cache.evict_rendered(Path(jupyter.config["cache_dir"]), STATE.site.rendered.paths())
    editions.copy_sitemaps(Path(config["site_dir"]), languages)


def on_shutdown() -> None:
    """The plugins as they were: a process that builds again (tests do) starts clean."""
    for (_, name), (obj, value) in STATE.process.restore.items():
        setattr(obj, name, value)
    STATE.process.restore.clear()
