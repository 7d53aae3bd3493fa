"""Make a broken PlantUML diagram fail ``mkdocs build --strict``.

plantuml_markdown logs a syntax error on the ``MARKDOWN`` logger and puts an
error picture in the page, so the build would pass. This hook turns both the log
record and an error picture that comes from its diagram cache into mkdocs
warnings, which ``--strict`` treats as failures.
"""

from __future__ import annotations

import logging
import re

log = logging.getLogger("mkdocs.hooks.plantuml")

# What PlantUML writes into the picture it returns for a diagram it cannot parse.
ERROR_IN_SVG = re.compile(r"<svg[^>]*>(?:(?!</svg>).)*?Syntax Error\?", re.DOTALL)


class _Forward(logging.Handler):
    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if "plantuml" in message.lower():
            log.warning("PlantUML: %s", message.strip())


_handler = _Forward(level=logging.WARNING)


def on_config(config):
    markdown_log = logging.getLogger("MARKDOWN")
    if _handler not in markdown_log.handlers:
        markdown_log.addHandler(_handler)
    return config


def on_page_content(html: str, page, config, files) -> str:
    if ERROR_IN_SVG.search(html):
        log.warning("PlantUML syntax error in a diagram on %s", page.file.src_uri)
    return html
