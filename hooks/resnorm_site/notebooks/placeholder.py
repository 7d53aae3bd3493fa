"""The page shown for a notebook whose run has not finished (``mkdocs serve``)."""

from __future__ import annotations

from pathlib import Path

from resnorm_site import paths
from resnorm_site.labels import label
from resnorm_site.notebooks.source import title_line


def placeholder(source: Path, failure: str | None, lang: str) -> Path:
    """A one-cell notebook: the page's title and what is happening; never an earlier
    run's outputs. mkdocs-jupyter renders it as it renders a run."""
    import nbformat

    text = label(lang, "failed").format(failure=failure) if failure else label(lang, "running")
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell(f"{title_line(source)}\n\n{text}")]
    path = paths.placeholder_path("failed" if failure else "running", source.stem)
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, path)
    return path
