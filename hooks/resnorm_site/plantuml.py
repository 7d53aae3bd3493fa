"""PlantUML diagrams: every uncached one rendered in one Java run, and errors found.

plantuml_markdown renders each diagram that its cache lacks with a Java process of its
own: on a first build, two dozen Java start-ups, one after the other, about 20 s on
two cores. ``missing_diagrams`` finds the diagrams of every page (both languages) with
plantuml_markdown's own parser and configuration, and ``render`` renders the missing
ones in one ``-pipe`` run of the same jar, storing each where plantuml_markdown looks
for it; the pages then render from the cache. A diagram that PlantUML cannot parse is
left out of the cache, so plantuml_markdown renders it again and reports the error.
"""

from __future__ import annotations

import logging
import os
import re
import subprocess
import threading
from pathlib import Path
from zlib import adler32

from resnorm_site import compat, paths

DELIMITER = "@@resnorm-plantuml-diagram-end@@"
# What PlantUML writes into the picture it returns for a diagram it cannot parse.
ERROR_IN_SVG = re.compile(r"<svg[^>]*>(?:(?!</svg>).)*?Syntax Error\?", re.DOTALL)
WHAT = "hooks/plantuml.py's batch rendering"
log = logging.getLogger("mkdocs.hooks.plantuml")


def cache_name(code: str, requested_format: str) -> str:
    """The name plantuml_markdown 3.11.5 gives a diagram in its cache directory."""
    return f"{adler32(code.encode('UTF-8')) & 0xFFFFFFFF:08x}.{requested_format}"


def cache_dir(root: Path, options: dict) -> Path:
    """plantuml_markdown names a cached diagram after its source alone: a folder per
    renderer (the command, with the jar's version in its name, and the options that
    change the picture) keeps a new jar from serving an old one's pictures."""
    import hashlib
    import json

    settings = {k: v for k, v in options.items() if k != "cachedir"}
    digest = hashlib.sha256(json.dumps(settings, sort_keys=True, default=str).encode())
    return root / digest.hexdigest()[:12]


def missing_diagrams(pages: list[Path], options: dict) -> dict[Path, str]:
    """The cache file -> themed PlantUML source of each diagram the cache lacks."""
    import markdown

    md = markdown.Markdown(
        extensions=["plantuml_markdown"], extension_configs={"plantuml_markdown": options}
    )
    pre = md.preprocessors["plantuml"]
    set_theme = compat.private(pre, "_set_theme", "plantuml-markdown", WHAT)
    compat.private(pre, "_render_diagram", "plantuml-markdown", WHAT)
    wanted: dict[Path, str] = {}

    def collect(code: str, requested_format: str):
        name = cache_name(code, requested_format)
        path = Path(os.path.expanduser(os.path.join(options["cachedir"], name)))
        if requested_format == "svg" and not path.is_file():
            wanted[path] = set_theme(code)
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
        cwd=paths.ROOT,
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


class Batch(threading.Thread):
    """Renders the diagrams the cache lacks; an error is raised again in the build."""

    def __init__(self, pages: list[Path], options: dict) -> None:
        super().__init__(name="plantuml-batch", daemon=True)
        self.pages, self.options, self.error = pages, options, None

    def run(self) -> None:
        try:
            wanted = missing_diagrams(self.pages, self.options)
            if wanted:
                stored = render(wanted, self.options["plantuml_cmd"])
                log.info(
                    "rendered %d of %d new PlantUML diagram(s) in one run", stored, len(wanted)
                )
        except Exception as err:  # an upstream change, Java missing, ...: fail loudly
            self.error = err
