"""Serve the pinned KaTeX build from the site itself (no CDN), and the handbook's
modules as downloads.

KaTeX comes from npm (package.json pins it). Its files are added to the build as
generated files under ``assets/katex/``, so ``mkdocs build`` writes them and
``mkdocs serve`` serves them like any page asset.

Each module ``snippets/NAME.py`` is served at ``downloads/NAME.py``: the very file the
tests run, which a page links when its code imports it ("save it next to your script").
"""

from __future__ import annotations

from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File, Files

from resnorm_site.paths import KATEX_DIST, SNIPPETS

KATEX_FILES = ["katex.min.js", "katex.min.css", "contrib/auto-render.min.js"]


def on_files(files: Files, config) -> Files:
    dist = KATEX_DIST
    if not (dist / "katex.min.js").is_file():
        raise PluginError(f"KaTeX not found at {dist}: run `npm ci` (or `make setup`) first.")
    wanted = [dist / name for name in KATEX_FILES] + sorted((dist / "fonts").glob("*.woff2"))
    for path in wanted:
        uri = "assets/katex/" + path.relative_to(dist).as_posix()
        files.append(File.generated(config, uri, abs_src_path=str(path)))
    for path in sorted(SNIPPETS.glob("*.py")):
        files.append(File.generated(config, f"downloads/{path.name}", abs_src_path=str(path)))
    return files
