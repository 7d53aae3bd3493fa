"""``[[gpu-results:SECTION]]`` on a page becomes the GPU figures of the results file
``make bench-gpu`` writes, with where and when they were measured, or says that none
have been recorded yet (resnorm_site/gpu_results/). A malformed file fails the build."""

from __future__ import annotations

from mkdocs.exceptions import PluginError

from resnorm_site import gpu_results
from resnorm_site.labels import language


def on_page_markdown(markdown: str, page, config, files) -> str:
    try:
        return gpu_results.fill_markdown(markdown, language(config.theme.get("language")))
    except gpu_results.ResultsError as err:
        raise PluginError(f"{page.file.src_uri}: {err}") from None


def on_page_content(html: str, page, config, files) -> str:
    # a notebook page: its Markdown cells arrive here already rendered
    try:
        return gpu_results.fill_html(html, language(config.theme.get("language")))
    except gpu_results.ResultsError as err:
        raise PluginError(f"{page.file.src_uri}: {err}") from None
