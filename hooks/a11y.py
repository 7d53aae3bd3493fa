"""Every diagram and plot described in words, and the generated markup made valid HTML
(resnorm_site/a11y.py says how). A picture without a description is a warning, so
``mkdocs build --strict`` fails."""

from __future__ import annotations

import logging

from resnorm_site import a11y
from resnorm_site.labels import label, language

log = logging.getLogger("mkdocs.hooks.a11y")


def on_page_content(html: str, page, config, files) -> str:
    where, lang = page.file.src_uri, language(config.theme.get("language"))
    html = a11y.describe_diagrams(html, where, label(lang, "diagram"), log.warning)
    html = a11y.without_markdown_attr(html)
    # a notebook page: abs_src_path is the executed notebook it renders (hooks/notebooks.py)
    if 'class="jupyter-wrapper"' in html and page.file.abs_src_path.endswith(".ipynb"):
        import nbformat

        notebook = nbformat.read(page.file.abs_src_path, as_version=4)
        html = a11y.describe_plots(html, a11y.plot_descriptions(notebook), where, log.warning)
        html = a11y.copy_buttons(html, label(lang, "copy"))
    return html
