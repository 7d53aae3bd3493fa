"""Where a notebook's run is kept, under a key of everything its outputs depend on."""

from __future__ import annotations

import hashlib
import platform
import re
import shutil
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from resnorm_site import paths
from resnorm_site.notebooks import inline, run
from resnorm_site.notebooks.source import execution_source

SNIPPET_NAME = re.compile(r"(?<![\w/])snippets[./]([A-Za-z_]\w*)")  # not tests/snippets/
# The packages a run executes with: a new version of one may change an output. Tools
# that only build or test the site (MkDocs, ruff, pytest, ...) are not among them.
RUNTIME_PACKAGES = (
    "torch",
    "numpy",
    "matplotlib",
    "pillow",
    "ipython",
    "ipykernel",
    "jupyter_client",
    "nbclient",
    "nbformat",
    "jupytext",
)


def runtime_versions() -> str:
    found = []
    for package in RUNTIME_PACKAGES:
        try:
            found.append(f"{package}=={version(package)}")
        except PackageNotFoundError:
            found.append(f"{package} missing")
    return f"python {platform.python_version()}; " + "; ".join(found)


def shaping_code() -> bytes:
    """The modules that shape an executed notebook: how snippets are inlined and how a
    run is made. How its page is rendered can change without a re-run."""
    return b"\0".join(Path(m.__file__).read_bytes() for m in (inline, run))


def cache_key(notebook: Path, root: Path = paths.ROOT) -> str:
    """Hash of everything an executed notebook's output depends on."""
    text = execution_source(notebook)
    h = hashlib.sha256()
    h.update(text.encode())
    for name in sorted(set(SNIPPET_NAME.findall(text))):
        snippet = root / "snippets" / f"{name}.py"
        if not snippet.is_file():
            raise ValueError(f"{notebook}: names snippets/{name}.py, which does not exist")
        h.update(name.encode() + b"\0" + snippet.read_bytes())
    h.update(shaping_code())
    h.update(runtime_versions().encode())
    return h.hexdigest()[:20]


def evict_older_runs(runs: dict[str, Path]) -> None:
    """Drop every other run of the notebooks this build used (other notebooks' runs
    may belong to another configuration, so they stay)."""
    for name, current in runs.items():
        for stale in paths.earlier_runs(name):
            if stale.parent != current:
                shutil.rmtree(stale.parent, ignore_errors=True)


def evict_rendered(folder: Path, used: set) -> None:
    """mkdocs-jupyter's rendered pages (its own cache) that no language of this site
    build used."""
    used = {Path(p) for p in used}
    for entry in folder.glob("*.json"):
        if entry not in used:
            entry.unlink()
