"""Reading a notebook, and what a run of it depends on and publishes."""

from __future__ import annotations

import copy
import json
from pathlib import Path

from resnorm_site.state import STATE

# A notebook publishes headline numbers by displaying a dict under this MIME type;
# a page quotes one as [[measured:NOTEBOOK:KEY]] (NOTEBOOK = the file's stem).
RESULTS_MIME = "application/vnd.resnorm.results+json"
# Cell options that only change how a page shows a cell, not what the cell computes.
DISPLAY_ONLY = ("alt",)


def read_notebook(path: Path, *, executed: bool = False):
    """jupytext.read(path), or nbformat.read for an executed .ipynb, remembered while the
    file's size and mtime stay the same: a rebuild reads each notebook once per language
    otherwise, and parsing is most of a Markdown edit's rebuild. A copy is returned, so a
    caller may change it."""
    stat = path.stat()
    stamp = (stat.st_mtime_ns, stat.st_size)
    key = (executed, str(path))
    hit = STATE.process.reads.get(key)
    if hit is None or hit[0] != stamp:
        if executed:
            import nbformat

            hit = (stamp, nbformat.read(path, as_version=4))
        else:
            import jupytext

            hit = (stamp, jupytext.read(path))
        STATE.process.reads[key] = hit
    return copy.deepcopy(hit[1])


def title_line(source: Path) -> str:
    """The first line of the first cell with text: the page's title."""
    cells = read_notebook(source).cells
    return next((c.source.splitlines()[0] for c in cells if c.source.strip()), f"# {source.stem}")


def execution_source(notebook: Path) -> str:
    """What a run of the notebook depends on, from its own text: its code cells (with
    their options, but for those that only change the page) and its header. Prose and
    plot descriptions are left out: editing them re-renders the page without a re-run."""
    nb = read_notebook(notebook)
    code = [
        [c.source, {k: v for k, v in c.metadata.items() if k not in DISPLAY_ONLY}]
        for c in nb.cells
        if c.cell_type == "code"
    ]
    return json.dumps([nb.metadata.get("resnorm"), code], sort_keys=True, ensure_ascii=False)


def runs_alone(notebook: Path) -> bool:
    """A notebook whose header says ``resnorm: {runs_alone: ...}`` (it times code) gets
    the machine to itself: no other notebook executes while it runs."""
    return bool(read_notebook(notebook).metadata.get("resnorm", {}).get("runs_alone"))


def published_results(executed: Path) -> dict:
    """Every dict the executed notebook displayed under RESULTS_MIME, merged."""
    results: dict = {}
    for cell in read_notebook(executed, executed=True).cells:
        for output in cell.get("outputs", []):
            results.update(output.get("data", {}).get(RESULTS_MIME, {}))
    return results
