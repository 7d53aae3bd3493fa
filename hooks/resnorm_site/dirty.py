"""What each page's output depends on, for ``mkdocs serve --dirty``.

A dirty build renders again only the pages whose source file is newer than their
output (MkDocs 1.6 ``File.is_modified``). A page here depends on more than its source:
the snippets it includes or shows excerpts of, the notebooks whose numbers it quotes,
the GPU results file and the code it was measured with (``[[gpu-results:...]]``), the
navigation (every page's title) and the configuration, theme overrides and hooks.
``signatures`` hashes all of that for every page; a page whose signature changed is
rendered again.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from resnorm_site.excerpts import EXCERPT_ATTR
from resnorm_site.gpu_results import CODE_FILES, MARKER, RESULTS_FILE
from resnorm_site.paths import notebook_stem

INCLUDE = re.compile(r"""--8<--\s+["']([^"':]+)""")
MEASURED = re.compile(r"\[\[measured:([\w-]+):")
HEADING = re.compile(r"^#\s+(.+)$", re.MULTILINE)


def _digest(*parts: bytes | str) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(part.encode() if isinstance(part, str) else part)
        h.update(b"\0")
    return h.hexdigest()


def _read(path: Path) -> bytes:
    return path.read_bytes() if path.is_file() else b""


def signatures(pages: list, root: Path, config_file: Path) -> dict[str, str]:
    """For every page (MkDocs' documentation files: ``src_dir``, ``src_uri``,
    ``abs_src_path``): a hash of everything its rendered output depends on."""
    pages = sorted(pages, key=lambda f: f.src_uri)
    # the source in docs/ (a notebook page's abs_src_path is its run, see below)
    texts = {
        f.src_uri: _read(Path(f.src_dir) / f.src_uri).decode("utf-8", "replace") for f in pages
    }
    # what every page shows: configuration, theme overrides, hooks, and the navigation
    shared = [_read(config_file)]
    for folder in ("overrides", "hooks"):
        for path in sorted((root / folder).rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts:
                shared += [path.relative_to(root).as_posix(), _read(path)]
    for uri, text in texts.items():  # Markdown titles (notebook titles are in the nav)
        title = HEADING.search(text) if uri.endswith(".md") else None
        shared.append(f"{uri}\t{title.group(1) if title else ''}")
    everyone = _digest(*shared)
    # a notebook page renders the file hooks/notebooks.py points it at: its run, or a
    # stand-in while it runs; a page quoting its numbers depends on that same file
    notebooks = {
        notebook_stem(f.src_uri): f.abs_src_path for f in pages if f.src_uri.endswith(".py")
    }
    out = {}
    for f in pages:
        text = texts[f.src_uri]
        parts = [everyone, f.abs_src_path, text]
        for include in sorted(set(INCLUDE.findall(text))):
            parts += [include, _read(root / include)]
        for module in sorted({m.group("file") for m in EXCERPT_ATTR.finditer(text)}):
            parts += [module, _read(root / "snippets" / module)]
        for stem in sorted(set(MEASURED.findall(text))):
            source = notebooks.get(stem, "")
            stamp = str(Path(source).stat().st_mtime_ns) if Path(source).is_file() else ""
            parts += [stem, source, stamp]
        if MARKER.search(text):  # the figures, and whether the code changed since
            for name in (RESULTS_FILE, *CODE_FILES):
                parts += [name, _read(root / name)]
        out[f.src_uri] = _digest(*parts)
    return out
