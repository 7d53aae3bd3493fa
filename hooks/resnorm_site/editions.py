"""What each language's edition of the site gets of its own: a search index, a sitemap.

mkdocs-static-i18n 1.3.1 writes one index for the whole site, every language's pages in
it (its design: upstream PR #33, issue #271), so an English search found Chinese pages
and a Chinese search English ones. Material fetches ``search/search_index.json`` from
the ``base`` of a page's configuration and resolves each result's location from the
same base; ``overrides/main.html`` makes a Chinese page's base its language's home, and
here each language gets its own index there, its locations relative to that home.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from resnorm_site.paths import DEFAULT_LANGUAGE


def language_of(location: str, languages: list[str]) -> str:
    """The language of a page URL or entry location: "zh" for "zh/...", else the default."""
    return next(
        (
            lang
            for lang in languages
            if lang != DEFAULT_LANGUAGE and location.startswith(f"{lang}/")
        ),
        DEFAULT_LANGUAGE,
    )


def home(lang: str) -> str:
    """A language's home, relative to the site's root: "" or "zh/"."""
    return "" if lang == DEFAULT_LANGUAGE else f"{lang}/"


def per_language(entries: list[dict], languages: list[str]) -> dict[str, list[dict]]:
    """Every built language's entries, located from its home."""
    out: dict[str, list[dict]] = {lang: [] for lang in languages}
    for entry in entries:
        lang = language_of(entry["location"], languages)
        if lang in out:
            out[lang].append(dict(entry, location=entry["location"][len(home(lang)) :]))
    return out


def page_entries(entries: list[dict], url: str) -> list[dict]:
    """The search entries of the page at ``url`` ("" for the home page)."""
    return [e for e in entries if e["location"].split("#")[0] == url]


def write_indexes(index, entries: list[dict], languages: list[str], site_dir: Path) -> None:
    """Each language's index at its home: ``index`` is Material's SearchIndex, whose
    entries are set to one language's at a time (and back to ``entries`` after)."""
    for lang, own in per_language(entries, languages).items():
        index.entries = own
        path = site_dir / home(lang) / "search" / "search_index.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(index.generate_search_index(None), encoding="utf-8")
    index.entries = entries


def copy_sitemaps(site_dir: Path, languages: list[str]) -> None:
    """The root's sitemap at each other language's home too: Material's language switch
    reads it there (``extra.alternate``), and only the root gets one."""
    for lang in languages:
        if lang != DEFAULT_LANGUAGE and (site_dir / lang).is_dir():
            for name in ("sitemap.xml", "sitemap.xml.gz"):
                if (site_dir / name).is_file():
                    shutil.copyfile(site_dir / name, site_dir / lang / name)
