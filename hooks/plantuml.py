"""PlantUML: every new diagram rendered in one Java run, and a broken one fails the build.

- The batch (resnorm_site/plantuml.py) runs in a thread while the notebooks execute;
  the pages render once it is done, from plantuml_markdown's cache. A notebook that
  times code waits for it (``STATE.process.shared_work``).
- plantuml_markdown logs a syntax error on the ``MARKDOWN`` logger and puts an error
  picture in the page, so the build would pass: both become MkDocs warnings here,
  which ``--strict`` treats as failures.
"""

from __future__ import annotations

import logging
from pathlib import Path

from mkdocs.exceptions import PluginError

from resnorm_site import paths, plantuml
from resnorm_site.labels import language
from resnorm_site.state import STATE

log = logging.getLogger("mkdocs.hooks.plantuml")


class _Forward(logging.Handler):
    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if "plantuml" in message.lower():
            log.warning("PlantUML: %s", message.strip())


_forward = _Forward(level=logging.WARNING)


def on_config(config):
    if _forward not in logging.getLogger("MARKDOWN").handlers:
        logging.getLogger("MARKDOWN").addHandler(_forward)
    options = config["mdx_configs"].get("plantuml_markdown")
    if options is not None:  # under the cache root, and apart per renderer (jar, theme, ...)
        options["cachedir"] = str(plantuml.cache_dir(paths.plantuml_cache(), options))
    return config


def on_files(files, config):
    options = dict(config["mdx_configs"].get("plantuml_markdown", {}))
    if not options.get("cachedir") or language(config.theme.get("language")) != "en":
        return files  # the English build, which comes first, does every language's pages
    work = STATE.process.shared_work
    work[:] = [t for t in work if t.is_alive()]
    thread = plantuml.Batch(sorted(Path(config["docs_dir"]).rglob("*.md")), options)
    work.append(thread)
    thread.start()
    return files


def on_pre_page(page, config, files):
    for thread in list(STATE.process.shared_work):  # the cache is complete before pages render
        thread.join()
        if isinstance(thread, plantuml.Batch) and thread.error is not None:
            error, thread.error = thread.error, None
            raise PluginError(f"PlantUML batch rendering failed: {error}")
    return page


def on_page_content(html: str, page, config, files) -> str:
    if plantuml.ERROR_IN_SVG.search(html):
        log.warning("PlantUML syntax error in a diagram on %s", page.file.src_uri)
    return html
