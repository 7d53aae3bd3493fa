"""A notebook's cell that only hands its run's numbers to the build runs, but its page
leaves it out: a reader of the page has nothing to learn from raw keys such as
``pre_depth_verdict: {'phrase': ...}``. The downloaded notebook keeps it."""

from __future__ import annotations

from pathlib import Path

import jupytext
import pytest

from resnorm_site.notebooks import page_html
from resnorm_site.notebooks.source import RESULTS_MIME
from tests.conftest import ROOT

NOTEBOOKS = sorted(
    p for p in (ROOT / "docs" / "experiments").glob("*.py") if not p.name.endswith(".zh.py")
)


def _tags(cell) -> list[str]:
    return list(cell.metadata.get("tags", []))


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.name)
def test_the_cell_that_publishes_results_is_tagged_publish(notebook: Path):
    cells = [c for c in jupytext.read(notebook).cells if c.cell_type == "code"]
    publishing = [c for c in cells if RESULTS_MIME in c.source]
    assert publishing, f"{notebook.name} publishes nothing"
    for cell in publishing:
        assert page_html.PUBLISH_TAG in _tags(cell), cell.source.splitlines()[0]


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.name)
def test_a_publish_cell_does_nothing_a_reader_needs(notebook: Path):
    """What a publish cell does: build the results dict and display it. It prints and
    plots nothing else, so leaving it off the page hides no result."""
    for cell in jupytext.read(notebook).cells:
        if page_html.PUBLISH_TAG in _tags(cell):
            assert "print(" not in cell.source and "plt." not in cell.source, notebook.name


def test_a_tagged_cell_is_left_out_input_and_output():
    kept = '<div class="jp-Cell jp-CodeCell"><div class="jp-Cell-inputWrapper">a = 1</div></div>'
    gone = (
        '<div class="jp-Cell jp-CodeCell celltag_publish">'
        '<div class="jp-Cell-inputWrapper">results = {}</div>'
        '<div class="jp-Cell-outputWrapper"><pre>pre_depth_verdict: {}</pre></div></div>'
    )
    other = '<div class="jp-Cell jp-CodeCell celltag_publisher"><div>b</div></div>'
    html = f"<main>{kept}{gone}{other}</main>"
    assert page_html.without_tagged_cells(html) == f"<main>{kept}{other}</main>"


def test_published_numbers_reach_the_pages_and_the_keys_do_not(built_site: Path):
    pages = [built_site / "experiments" / p.stem / "index.html" for p in NOTEBOOKS]
    pages += [built_site / "zh" / "experiments" / p.stem / "index.html" for p in NOTEBOOKS]
    for page in pages:
        html = page.read_text(encoding="utf-8")
        assert "celltag_publish" not in html, page
        assert "_verdict: {" not in html, page
