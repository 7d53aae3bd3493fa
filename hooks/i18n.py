"""The Chinese edition's build details that mkdocs-static-i18n leaves to the site.

mkdocs-static-i18n builds the English site, then the Chinese one into ``zh/`` of
the same directory. Material's language switch script reads a ``sitemap.xml``
at each language's root (``extra.alternate``), and only the English root gets
one; the Chinese root gets the same file, so the script finds it there too
instead of requesting a missing file on every page.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from mkdocs.plugins import event_priority

LANGUAGES = ("zh",)


@event_priority(-200)  # after mkdocs-static-i18n has built every language
def on_post_build(config) -> None:
    site = Path(config["site_dir"])
    for lang in LANGUAGES:
        if (site / lang).is_dir():
            for name in ("sitemap.xml", "sitemap.xml.gz"):
                if (site / name).is_file():
                    shutil.copyfile(site / name, site / lang / name)
