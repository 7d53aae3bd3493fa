"""Fill each excerpt fence of a page with the module lines it names
(``resnorm_site.excerpts``); a name the module lacks fails the build."""

from __future__ import annotations

from mkdocs.exceptions import PluginError

from resnorm_site import excerpts
from resnorm_site.labels import language


def on_page_markdown(markdown: str, page, config, files) -> str:
    try:
        return excerpts.expand(markdown, language(config.theme.get("language")))
    except excerpts.ExcerptError as err:
        raise PluginError(f"{page.file.src_uri}: {err}") from None
