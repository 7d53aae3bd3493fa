"""``[[census:KEY]]`` on a page becomes the census of the installed transformers: its
version, the families left out, the counts, the tables (resnorm_site/census/). The census
is computed once per process, or read from the build cache; an error fails the build."""

from __future__ import annotations

from mkdocs.exceptions import PluginError

from resnorm_site import census
from resnorm_site.census import page as census_page
from resnorm_site.labels import language


def on_page_markdown(markdown: str, page, config, files) -> str:
    if "[[census:" not in markdown:
        return markdown
    try:
        data = census.census()
        return census_page.fill(markdown, language(config.theme.get("language")), data)
    except (census.CensusError, census_page.PageError) as err:
        raise PluginError(f"{page.file.src_uri}: {err}") from None
