"""Every path the build reads or writes, and how a page's name maps to its files.

One module owns them so that each place that names a file agrees with the others,
and with ``mkdocs.yml``: mkdocs-jupyter renders a page only if the file behind it
matches its ``include`` globs (tests/test_paths.py checks every path made here).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]  # the repository
SNIPPETS = ROOT / "snippets"
KATEX_DIST = ROOT / "node_modules/katex/dist"  # npm's pinned KaTeX, served from the site

# The notebook sources, relative to docs/: jupytext percent-format .py files.
NOTEBOOK_GLOBS = ("notebooks/*.py", "experiments/*.py")
# What mkdocs-jupyter must render besides them: an executed run or a stand-in,
# <cache>/notebooks/<dir>/<name>.ipynb (mkdocs.yml's include says the same).
RUN_GLOB = "notebooks/*/*.ipynb"

DEFAULT_LANGUAGE = "en"
LOCALE = re.compile(r"\.(zh)$")  # name.zh.py: the Chinese twin of name.py
RUN_DIR = re.compile(r"^[0-9a-f]{20}$")  # a run's folder is its cache key


def cache_root() -> Path:
    """RESNORM_CACHE_DIR, or .cache/ in the repository; a relative path is taken from the
    repository, so a build started from another directory uses the same cache."""
    value = os.environ.get("RESNORM_CACHE_DIR", "")
    return ROOT / value if value else ROOT / ".cache"


def notebook_cache() -> Path:
    return cache_root() / "notebooks"


def run_path(key: str, name: str) -> Path:
    """The executed copy of notebook ``name`` (its file name, name.py) under cache ``key``."""
    return notebook_cache() / key / f"{Path(name).stem}.ipynb"


def earlier_runs(name: str) -> list[Path]:
    """Every executed copy of notebook ``name`` in the cache, whatever its key."""
    stem = Path(name).stem
    return [p for p in notebook_cache().glob(f"*/{stem}.ipynb") if RUN_DIR.match(p.parent.name)]


def placeholder_path(kind: str, stem: str) -> Path:
    """The stand-in page shown while a notebook runs (kind "running") or after it failed
    ("failed"); ``stem`` is name or name.zh. One level under notebooks/, as a run is."""
    if kind not in ("running", "failed"):
        raise ValueError(f"a placeholder is 'running' or 'failed', got {kind!r}")
    return notebook_cache() / kind / f"{stem}.ipynb"


def ready_stamp() -> Path:
    """Touched when a background run ends; mkdocs serve watches its folder and rebuilds."""
    return notebook_cache() / "ready" / "stamp"


def search_cache() -> Path:
    return cache_root() / "search"


def plantuml_cache() -> Path:
    return cache_root() / "plantuml"


def widget_cache() -> Path:
    return cache_root() / "widget"


def jupyter_render_cache() -> Path:
    return cache_root() / "mkdocs-jupyter"


def is_notebook(src_uri: str) -> bool:
    """Whether a docs/ path (``experiments/depth.zh.py``) is a notebook source."""
    return any(Path(src_uri).match(glob) for glob in NOTEBOOK_GLOBS)


def english_twin(source: Path) -> Path:
    """docs/x/name.zh.py -> docs/x/name.py: the notebook whose code both pages run."""
    return source.with_name(LOCALE.sub("", source.stem) + source.suffix)


def locale_of(source: Path) -> str:
    match = LOCALE.search(source.stem)
    return match.group(1) if match else DEFAULT_LANGUAGE


def notebook_stem(src_uri: str) -> str:
    """The name pages quote a notebook by, the same in every language."""
    return LOCALE.sub("", Path(src_uri).stem)
