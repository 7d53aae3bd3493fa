"""Fast rebuilds for ``mkdocs serve --dirty`` (what ``make serve`` runs), with no stale page.

A dirty build renders again only the pages whose source file is newer than their
output. A page here depends on more than its source: the snippets it includes, the
notebooks whose numbers it quotes, the navigation (every page's title) and the
configuration, theme overrides and hooks. Before each build this hook computes a
signature of all of that for every page and deletes the output of each page whose
signature changed since the previous build, so that MkDocs renders it again. A
Markdown edit then re-renders one page instead of all of them.

MkDocs also warns on every dirty build that navigation may be inaccurate, which
``strict: true`` would turn into a failed build; the signatures are what keeps the
navigation right, so the warning is dropped.
"""

from __future__ import annotations

import hashlib
import logging
import re
from pathlib import Path

from mkdocs.plugins import event_priority
from mkdocs.structure.files import Files

INCLUDE = re.compile(r"""--8<--\s+["']([^"':]+)""")
MEASURED = re.compile(r"\[\[measured:([\w-]+):")
HEADING = re.compile(r"^#\s+(.+)$", re.MULTILINE)

_dirty = False
_signatures: dict[str, dict[str, str]] = {}  # per language built (mkdocs-static-i18n)
LOCALE = re.compile(r"\.(zh)$")  # notebook.zh.py quotes and is quoted as "notebook"


class _DropDirtyWarning(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return "A 'dirty' build is being performed" not in record.getMessage()


logging.getLogger("mkdocs.commands.build").addFilter(_DropDirtyWarning())


def _compiled_templates():
    """A Jinja bytecode cache kept in memory for the life of the process: every build
    (each rebuild of ``mkdocs serve``, and each language's) gets a new Jinja environment,
    which would parse and compile the theme's templates again. Jinja checks each entry
    against its template's source, so an edited override is compiled anew."""
    import jinja2

    class Cache(jinja2.BytecodeCache):
        def __init__(self) -> None:
            self.store: dict[str, bytes] = {}

        def load_bytecode(self, bucket) -> None:
            if bucket.key in self.store:
                bucket.bytecode_from_string(self.store[bucket.key])

        def dump_bytecode(self, bucket) -> None:
            self.store[bucket.key] = bucket.bytecode_to_string()

    return Cache()


_templates = _compiled_templates()


def on_env(env, config, files):
    env.bytecode_cache = _templates
    return env


def on_startup(command: str, dirty: bool) -> None:
    global _dirty
    _dirty = command == "serve" and dirty
    _signatures.clear()


def _digest(*parts: bytes | str) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(part.encode() if isinstance(part, str) else part)
        h.update(b"\0")
    return h.hexdigest()


def _read(path: Path) -> bytes:
    return path.read_bytes() if path.is_file() else b""


def signatures(files: Files, root: Path, config_file: Path) -> dict[str, str]:
    """For every page: a hash of everything its rendered output depends on."""
    pages = sorted(files.documentation_pages(), key=lambda f: f.src_uri)
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
    # a notebook page renders the file hooks/notebooks.py pointed it at: its run, or a
    # stand-in while it runs; a page quoting its numbers depends on that same file
    notebooks = {
        LOCALE.sub("", Path(f.src_uri).stem): f.abs_src_path
        for f in pages
        if f.src_uri.endswith(".py")
    }
    out = {}
    for f in pages:
        text = texts[f.src_uri]
        parts = [everyone, f.abs_src_path, text]
        for include in sorted(set(INCLUDE.findall(text))):
            parts += [include, _read(root / include)]
        for stem in sorted(set(MEASURED.findall(text))):
            source = notebooks.get(stem, "")
            stamp = str(Path(source).stat().st_mtime_ns) if Path(source).is_file() else ""
            parts += [stem, source, stamp]
        out[f.src_uri] = _digest(*parts)
    return out


@event_priority(-160)  # after hooks/notebooks.py has pointed notebook pages at their runs
def on_files(files: Files, config) -> Files:
    if not _dirty:
        return files
    config_file = Path(config.config_file_path)
    current = signatures(files, config_file.parent, config_file)
    # each language's build (the Chinese one follows the English one) has its own pages
    previous = _signatures.setdefault(config.theme.get("language", "en"), {})
    for f in files.documentation_pages():
        if previous.get(f.src_uri) != current[f.src_uri]:
            Path(f.abs_dest_path).unlink(missing_ok=True)  # MkDocs renders it again
    previous.clear()
    previous.update(current)
    return files
