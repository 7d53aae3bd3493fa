"""Render every uncached PlantUML diagram in one Java process, before the pages render.

plantuml_markdown renders each diagram that its cache (``.cache/plantuml``) lacks
with a Java process of its own: on a first build, two dozen Java start-ups, one
after the other, about 20 s on two cores. This hook finds the diagrams of every
page (both languages) with plantuml_markdown's own parser and configuration,
renders the missing ones in one ``-pipe`` run of the same jar, and stores each
where plantuml_markdown looks for it; the pages then render from the cache as on
any later build. A diagram that PlantUML cannot parse is left out of the cache, so
plantuml_markdown renders it again and reports the error (hooks/plantuml_errors.py).

The run happens in a background thread named ``resnorm-shared-plantuml`` while the
notebooks execute; hooks/notebooks.py waits for such threads before a notebook that
times code runs alone.
"""

from __future__ import annotations

import logging
import os
import subprocess
import threading
from pathlib import Path
from zlib import adler32

from mkdocs.plugins import event_priority

log = logging.getLogger("mkdocs.hooks.plantuml_batch")

DELIMITER = "@@resnorm-plantuml-diagram-end@@"
ROOT = Path(__file__).resolve().parent.parent
_thread: threading.Thread | None = None


def missing_diagrams(pages: list[Path], options: dict) -> dict[Path, str]:
    """The cache file -> themed PlantUML source of each diagram the cache lacks."""
    import markdown

    md = markdown.Markdown(
        extensions=["plantuml_markdown"], extension_configs={"plantuml_markdown": options}
    )
    pre = md.preprocessors["plantuml"]
    wanted: dict[Path, str] = {}

    def collect(code: str, requested_format: str):
        name = f"{adler32(code.encode('UTF-8')) & 0xFFFFFFFF:08x}.{requested_format}"
        path = Path(os.path.expanduser(os.path.join(options["cachedir"], name)))
        if requested_format == "svg" and not path.is_file():
            wanted[path] = pre._set_theme(code)
        return None, "collected"  # an error: plantuml_markdown writes nothing to the cache

    pre._render_diagram = collect
    for page in pages:
        text = page.read_text(encoding="utf-8")
        if "plantuml" in text:
            md.reset()
            pre.run(text.splitlines())
    return wanted


def render(wanted: dict[Path, str], command: str) -> int:
    """Render the diagrams in one Java run; store those that PlantUML could parse."""
    if not wanted:
        return 0
    sources = list(wanted.items())
    cmd = [*command.split(" "), "-pipe", "-tsvg", "-charset", "UTF-8", "-pipedelimitor", DELIMITER]
    proc = subprocess.run(
        cmd,
        input="\n".join(code for _, code in sources).encode("utf-8"),
        capture_output=True,
        cwd=ROOT,
        timeout=600,
    )
    outputs = proc.stdout.decode("utf-8").split(DELIMITER)
    stored = 0
    for (path, _), svg in zip(sources, outputs, strict=False):
        svg = svg.strip()
        if svg.startswith("<svg") and "Syntax Error?" not in svg:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(svg, encoding="utf-8")
            stored += 1
    return stored


def _run(pages: list[Path], options: dict) -> None:
    try:
        wanted = missing_diagrams(pages, options)
        if wanted:
            stored = render(wanted, options["plantuml_cmd"])
            log.info("rendered %d of %d new PlantUML diagram(s) in one run", stored, len(wanted))
    except Exception as err:  # the pages still render each diagram themselves
        log.info("PlantUML batch rendering skipped: %s", err)


@event_priority(100)  # first: it runs while the notebooks execute
def on_files(files, config):
    global _thread
    options = dict(config["mdx_configs"].get("plantuml_markdown", {}))
    if not options.get("cachedir") or (_thread is not None and _thread.is_alive()):
        return files
    if config.theme.get("language", "en") != "en":
        return files  # the English build, which comes first, did every language's pages
    pages = sorted(Path(config["docs_dir"]).rglob("*.md"))  # every language's pages
    _thread = threading.Thread(
        target=_run, args=(pages, options), name="resnorm-shared-plantuml", daemon=True
    )
    _thread.start()
    return files


def on_pre_page(page, config, files):
    if _thread is not None:
        _thread.join()  # the cache is complete before the first page renders
    return page
