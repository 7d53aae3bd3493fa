"""Every cell that draws a plot says in words what it shows, on every machine.

The build fails a plot without a description (``# %% alt="..."``), but only for the plots
its own run draws: a cell that plots only where CUDA is present passed every build on a
machine without a GPU and failed on one with it. This test reads the code instead: a cell
that calls matplotlib, or a function of its notebook that does, carries ``alt`` in the
English notebook and in its Chinese twin.
"""

from __future__ import annotations

import ast

import jupytext
import pytest

from tests.test_i18n import english_pages

NOTEBOOKS = [p for p in english_pages() if p.suffix == ".py"]
# matplotlib calls that draw a figure (plt.get_cmap, say, draws nothing)
DRAWS = {"show", "subplots", "figure", "plot", "imshow", "bar", "barh", "hist", "scatter"}


def _called(node: ast.AST, skip_defs: bool) -> set[str]:
    """Names called under ``node``: ``f(...)`` as "f", ``plt.show()`` as "plt.show"."""
    names = set()
    stack = [node]
    while stack:
        n = stack.pop()
        if skip_defs and n is not node and isinstance(n, (ast.FunctionDef, ast.Lambda)):
            continue
        if isinstance(n, ast.Call):
            f = n.func
            if isinstance(f, ast.Name):
                names.add(f.id)
            elif isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name):
                names.add(f"{f.value.id}.{f.attr}")
        stack.extend(ast.iter_child_nodes(n))
    return names


def _draws(names: set[str], plotting: set[str]) -> bool:
    return bool(names & plotting) or any(n.startswith("plt.") and n[4:] in DRAWS for n in names)


def plotting_cells(source: str) -> list[int]:
    """Indexes of the code cells (counted among code cells) that draw a plot."""
    cells = jupytext.reads(source, fmt="py:percent").cells
    trees = [ast.parse(c.source) for c in cells if c.cell_type == "code"]
    defs = {
        d.name: _called(d, skip_defs=False)
        for t in trees
        for d in ast.walk(t)
        if isinstance(d, ast.FunctionDef)
    }
    plotting: set[str] = set()
    while True:  # a function that calls one that draws, draws too
        more = {name for name, calls in defs.items() if _draws(calls, plotting)} - plotting
        if not more:
            break
        plotting |= more
    return [i for i, t in enumerate(trees) if _draws(_called(t, skip_defs=True), plotting)]


def code_cells(path):
    return [c for c in jupytext.read(path).cells if c.cell_type == "code"]


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_a_cell_that_plots_describes_its_plot_in_both_languages(notebook):
    english = code_cells(notebook)
    chinese = code_cells(notebook.with_name(f"{notebook.stem}.zh.py"))
    missing = []
    for i in plotting_cells(notebook.read_text(encoding="utf-8")):
        first = english[i].source.splitlines()[0]
        if not english[i].metadata.get("alt"):
            missing.append(f"{notebook.name}, code cell {i + 1} ({first!r}): no alt")
        if not chinese[i].metadata.get("alt"):
            missing.append(f"{notebook.stem}.zh.py, code cell {i + 1} ({first!r}): no alt")
    assert not missing, "\n".join(missing)


def test_a_plot_drawn_only_with_cuda_is_found():
    source = """\
# %%
import matplotlib.pyplot as plt
import torch


def roofline(table):
    _, ax = plt.subplots()
    ax.plot(table)


def colours():
    return plt.get_cmap("Reds")


# %%
if torch.cuda.is_available():
    roofline([1, 2])

# %%
c = colours()
print(c)

# %%
plt.show()
"""
    assert plotting_cells(source) == [1, 3]
