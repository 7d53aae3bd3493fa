"""The Chinese edition's build details that mkdocs-static-i18n leaves to the site.

mkdocs-static-i18n builds the English site, then the Chinese one into ``zh/`` of
the same directory, each as a build of its own. Two things follow:

- Material's language switch script reads a ``sitemap.xml`` at each language's
  root (``extra.alternate``), and only the English root gets one; the Chinese root
  gets the same file, so the script finds it there too instead of requesting a
  missing file on every page.
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


def on_startup(command: str, dirty: bool) -> None:
    global _dirty
    _dirty = dirty


@event_priority(-10)  # after mkdocs-jupyter's, which starts a new set for each build
def on_pre_build(config) -> None:
    jupyter = config.plugins.get("mkdocs-jupyter")
    if jupyter is None:
        return
    if config.theme.get("language", DEFAULT_LANGUAGE) == DEFAULT_LANGUAGE:
        _used.clear()  # a new build: the English one comes first
    jupyter._used_cache_paths = _used


@event_priority(-200)  # after mkdocs-static-i18n has built every language
def on_post_build(config) -> None:
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
