"""Execute the jupytext notebooks under ``docs/`` at build time, with a cache.

mkdocs-jupyter renders a notebook but caches on the notebook's own bytes only,
so a change to a snippet that the notebook imports would not re-run it. This
hook executes each notebook itself (``nbclient``, errors fail the build) and
keys its cache on everything the output depends on: the notebook text, every
``snippets/*.py`` file the notebook names, this hook and ``requirements.txt``.

The executed ``.ipynb`` then replaces the page's source, so mkdocs-jupyter
renders the executed notebook and its ``include_source`` offers it for
download.

The notebook page's HTML is also trimmed: the stylesheet mkdocs-jupyter inlines
into every notebook page moves to one shared file, and the CDN scripts (MathJax,
Mermaid) it adds are removed, so the page stays small and makes no request to
another host. Math in notebooks is typeset by the site's own KaTeX.
"""

from __future__ import annotations

import hashlib
import logging
import re
import shutil
import time
from pathlib import Path

from mkdocs.exceptions import PluginError
from mkdocs.plugins import event_priority
from mkdocs.structure.files import Files

log = logging.getLogger("mkdocs.hooks.notebooks")

CACHE = Path(".cache/notebooks")
NOTEBOOK_GLOB = "notebooks/*.py"
SNIPPET_NAME = re.compile(r"\bsnippets[./]([A-Za-z_]\w*)")
CELL_TIMEOUT_S = 600

ROOT = Path(__file__).resolve().parent.parent  # the repository

_used: dict[str, Path] = {}  # notebook name -> its executed copy in this build
_stylesheets: dict[str, str] = {}


def cache_key(notebook: Path, root: Path) -> str:
    """Hash of everything an executed notebook's output depends on."""
    text = notebook.read_text(encoding="utf-8")
    h = hashlib.sha256()
    h.update(text.encode())
    for name in sorted(set(SNIPPET_NAME.findall(text))):
        snippet = root / "snippets" / f"{name}.py"
        if not snippet.is_file():
            raise PluginError(f"{notebook}: names snippets/{name}.py, which does not exist")
        h.update(name.encode() + b"\0" + snippet.read_bytes())
    h.update(Path(__file__).read_bytes())
    h.update((root / "requirements.txt").read_bytes())
    return h.hexdigest()[:20]


def execute(notebook: Path, root: Path, target: Path) -> float:
    """Run every cell of ``notebook`` in a fresh kernel; write the result to ``target``."""
    import jupytext
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    nb = jupytext.read(notebook)
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    client = NotebookClient(
        nb,
        timeout=CELL_TIMEOUT_S,
        kernel_name="python3",
        allow_errors=False,  # a cell tagged raises-exception may still fail on purpose
        resources={"metadata": {"path": str(root)}},
    )
    start = time.perf_counter()
    try:
        client.execute()
    except CellExecutionError as err:
        raise PluginError(f"notebook {notebook} failed:\n{err}") from None
    seconds = time.perf_counter() - start
    nb.metadata["resnorm"] = {"execution_seconds": round(seconds, 2)}
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(".tmp")
    nbformat.write(nb, tmp)
    tmp.replace(target)
    return seconds


@event_priority(-50)  # after mkdocs-jupyter has wrapped the notebook files
def on_files(files: Files, config) -> Files:
    root = ROOT
    _used.clear()
    for file in list(files):
        if not Path(file.src_uri).match(NOTEBOOK_GLOB):
            continue
        source = Path(file.abs_src_path)
        key = cache_key(source, root)
        executed = root / CACHE / key / (source.stem + ".ipynb")
        if executed.is_file():
            log.info("notebook cache hit: %s", file.src_uri)
        else:
            seconds = execute(source, root, executed)
            log.info("executed %s in %.1f s", file.src_uri, seconds)
        _used[executed.name] = executed.parent
        # Set on the file object mkdocs-jupyter made (its wrapper), which reads the
        # notebook from abs_src_path when it renders the page.
        file.abs_src_path = str(executed)
    return files


# mkdocs-jupyter inlines Jupyter's stylesheets into every notebook page.
INLINE_STYLE = re.compile(r"<style[^>]*>(.*?)</style>", re.DOTALL)
# and scripts from CDNs (MathJax, Mermaid) that this site does not need
REMOTE_SCRIPT = re.compile(
    r"<script[^>]*\bsrc=[\"']https?://[^\"']*[\"'][^>]*>\s*</script>"
    r"|<script type=\"module\">(?:(?!</script>).)*?https?://(?:(?!</script>).)*?</script>",
    re.DOTALL,
)
MATHJAX_CONFIG = re.compile(
    r"<!-- Load mathjax -->.*?<!-- End of mathjax configuration -->", re.DOTALL
)


def on_post_page(html: str, page, config) -> str:
    if not Path(page.file.src_uri).match(NOTEBOOK_GLOB):
        return html
    html = MATHJAX_CONFIG.sub("", html)
    html = REMOTE_SCRIPT.sub("", html)

    def move_out(match: re.Match) -> str:
        css = match.group(1)
        if len(css) < 2000:  # small page-specific rules stay in the page
            return match.group(0)
        digest = hashlib.sha256(css.encode()).hexdigest()[:12]
        _stylesheets[digest] = css
        href = "/".join([".."] * page.url.count("/")) or "."
        return f'<link rel="stylesheet" href="{href}/assets/jupyter/{digest}.css">'

    return INLINE_STYLE.sub(move_out, html)


def on_post_build(config) -> None:
    out = Path(config["site_dir"]) / "assets" / "jupyter"
    out.mkdir(parents=True, exist_ok=True)
    for digest, css in _stylesheets.items():
        (out / f"{digest}.css").write_text(css, encoding="utf-8")
    # Drop older executions of the notebooks this build used (other notebooks'
    # entries may belong to another configuration, so they stay).
    for name, current in _used.items():
        for stale in (ROOT / CACHE).glob(f"*/{name}"):
            if stale.parent != current:
                shutil.rmtree(stale.parent, ignore_errors=True)
