"""Notebook pages run where the reader runs them.

The build inlines the snippet modules a notebook imports (resnorm_site.notebooks) and
executes it in an empty directory. Here:

- the inlining itself: imports become comments, each snippet becomes one tagged,
  collapsed cell, clashing names and imports that cannot be inlined are errors;
- a notebook that reaches for the repository fails the build;
- on the built site, every notebook page's code cells, as the page shows them, are the
  download's, which the build ran in a fresh kernel outside the repository; they are
  plain Python (no IPython syntax or names); and one page's cells, run again in order in
  a fresh interpreter in a scratch directory (the reader copying the cells), print what
  the page shows;
- every downloadable ``.ipynb`` is the build's own run of those cells: one fresh
  kernel, top to bottom, in an empty directory (what the reader downloading it runs).
"""

from __future__ import annotations

import ast
import html
import json
import os
import re
import subprocess
import sys
import time
from html.parser import HTMLParser
from pathlib import Path

import nbformat
import pytest

from resnorm_site.labels import LABELS
from resnorm_site.notebooks.page_html import PUBLISH_TAG
from tests import codeblocks
from tests.conftest import ROOT

# Notebooks whose printed outputs legitimately differ from run to run, and why. Their
# cells must still run; only the comparison of printed text is left out.
VARYING_OUTPUTS = {
    "norm_speed": "it prints timings and bandwidths measured on the machine that runs it",
}
TIMEOUT_S = 900


def _notebook(*cells: tuple[str, str]):
    nb = nbformat.v4.new_notebook()
    for kind, source in cells:
        make = nbformat.v4.new_markdown_cell if kind == "md" else nbformat.v4.new_code_cell
        nb.cells.append(make(source))
    return nb


def _snippets(tmp_path: Path, files: dict[str, str]) -> Path:
    (tmp_path / "snippets").mkdir()
    for name, code in files.items():
        (tmp_path / "snippets" / f"{name}.py").write_text(code, encoding="utf-8")
    return tmp_path


DEMO = '# --8<-- [start:demo]\nif __name__ == "__main__":\n    print("demo")\n# --8<-- [end:demo]\n'


# --- Inlining ---------------------------------------------------------------------------


def test_imports_become_cells_ahead_of_the_first_code_cell(tmp_path: Path):
    from resnorm_site.notebooks.inline import SNIPPET_TAG, inline_snippets

    root = _snippets(
        tmp_path,
        {
            "alpha": "# --8<-- [start:code]\nA = 1\n# --8<-- [end:code]\n\n" + DEMO,
            "beta": "def b():\n    return 2\n",
        },
    )
    nb = _notebook(
        ("md", "# Title"),
        ("code", "import math\nfrom snippets.alpha import A\nprint(A)"),
        ("code", "from snippets.beta import (\n    b,\n)\nfrom snippets.alpha import A\nb()"),
    )
    assert inline_snippets(nb, root) == ["alpha", "beta"]
    kinds = [(c.cell_type, c.metadata.get("tags", [])) for c in nb.cells]
    assert kinds == [
        ("markdown", []),
        ("code", [SNIPPET_TAG]),
        ("code", [SNIPPET_TAG]),
        ("code", []),
        ("code", []),
    ]
    alpha, beta = nb.cells[1], nb.cells[2]
    assert alpha.metadata["jupyter"] == {"source_hidden": True}
    assert alpha.source.startswith("# snippets/alpha.py")
    assert "A = 1" in alpha.source
    assert "--8<--" not in alpha.source and "demo" not in alpha.source  # demo section dropped
    assert "def b():" in beta.source
    assert "from snippets." not in nb.cells[3].source + nb.cells[4].source
    assert "# from snippets/alpha.py, in the first cells of this notebook: A" in nb.cells[3].source
    assert "# from snippets/beta.py, in the first cells of this notebook: b" in nb.cells[4].source
    namespace: dict = {}
    for cell in nb.cells[1:]:  # the rewritten notebook runs with no package on the path
        exec(compile(cell.source, "cell", "exec"), namespace)
    assert namespace["A"] == 1 and namespace["b"]() == 2


def test_a_remembered_notebook_is_read_again_when_its_file_changes(tmp_path: Path):
    from resnorm_site.notebooks.source import read_notebook

    path = tmp_path / "nb.py"
    path.write_text("# %%\nprint(1)\n")
    first = read_notebook(path)
    first.cells[0].source = "changed by a caller"  # a copy: the remembered one is intact
    assert read_notebook(path).cells[0].source == "print(1)"
    path.write_text("# %%\nprint(22)\n")  # another size: read again
    assert read_notebook(path).cells[0].source == "print(22)"
    stamp = path.stat().st_mtime_ns
    path.write_text("# %%\nprint(33)\n")  # same size, a new mtime: read again
    os.utime(path, ns=(stamp + 10**9, stamp + 10**9))
    assert read_notebook(path).cells[0].source == "print(33)"


def test_a_notebook_without_snippets_is_unchanged(tmp_path: Path):
    from resnorm_site.notebooks.inline import inline_snippets

    nb = _notebook(("code", "x = 1"))
    assert inline_snippets(nb, _snippets(tmp_path, {})) == []
    assert [c.source for c in nb.cells] == ["x = 1"]


@pytest.mark.parametrize(
    ("cell", "message"),
    [
        ("import snippets.alpha", "imports the snippets package itself"),
        ("from snippets.alpha import *", "only `from snippets.NAME import a, b`"),
        ("from snippets import alpha", "only `from snippets.NAME import a, b`"),
        ("from snippets.missing import X", "snippets/missing.py does not exist"),
        ("from snippets.alpha import A\nA = 2", "rebinds names its snippets define: 'A'"),
        ("from snippets.alpha import A\nfrom snippets.gamma import G", "both define 'A'"),
        ("from snippets.main_block import M", "has a __main__ block outside its demo section"),
    ],
)
def test_what_cannot_be_inlined_is_an_error(tmp_path: Path, cell: str, message: str):
    from resnorm_site.notebooks.inline import inline_snippets

    root = _snippets(
        tmp_path,
        {
            "alpha": "A = 1\n",
            "gamma": "A = 3\nG = 4\n",
            "main_block": 'M = 1\nif __name__ == "__main__":\n    print(M)\n',
        },
    )
    with pytest.raises(ValueError, match=re.escape(message)):
        inline_snippets(_notebook(("code", cell)), root)


def test_snippet_cells_are_collapsed_on_the_page():
    from resnorm_site.notebooks.page_html import collapse_snippet_cells

    cell = (
        '<div class="jp-Cell jp-CodeCell jp-Notebook-cell celltag_snippet-source">'
        '<div class="jp-InputArea"><pre><span># snippets/alpha.py, the code</span></pre></div>'
        "</div>"
    )
    other = '<div class="jp-Cell jp-CodeCell jp-Notebook-cell"><div><pre>x = 1</pre></div></div>'
    page = f"<main>{cell}{other}</main>"
    out = collapse_snippet_cells(page, LABELS["en"]["imports"])
    assert out == (
        '<main><details class="info rn-snippet-cell"><summary>Code this notebook imports: '
        "<code>snippets/alpha.py</code></summary>\n"
        f'<template class="rn-later">{cell}</template>\n</details>{other}</main>'
    )


def test_long_cells_tagged_collapse_fold_their_code_not_their_output():
    from resnorm_site.notebooks.page_html import collapse_tagged_cells

    code = (
        '<div class="jp-Cell-inputWrapper" tabindex="0"><div><pre>a = 1\nb = 2\n</pre></div></div>'
    )
    output = '<div class="jp-Cell-outputWrapper"><pre>3\n4\n</pre></div>'
    cell = (
        f'<div class="jp-Cell jp-CodeCell jp-Notebook-cell celltag_collapse">{code}{output}</div>'
    )
    other = '<div class="jp-Cell jp-CodeCell jp-Notebook-cell">' + code + "</div>"
    out = collapse_tagged_cells(
        f"<main>{cell}{other}</main>", "collapse", LABELS["zh"]["collapsed"]
    )
    assert out == (
        '<main><div class="jp-Cell jp-CodeCell jp-Notebook-cell celltag_collapse">'
        '<details class="info rn-code-cell"><summary>本单元的代码（2 行）</summary>\n'
        f"{code}\n</details>{output}</div>{other}</main>"
    )
    # collapse-output folds the output and leaves the code open; neither tag folds the other
    listed = cell.replace("celltag_collapse", "celltag_collapse-output")
    out = collapse_tagged_cells(listed, "collapse-output", LABELS["en"]["collapsed_output"])
    assert out == listed.replace(
        output,
        '<details class="info rn-code-cell"><summary>The output of this cell (2 lines)</summary>'
        f"\n{output}\n</details>",
    )
    assert collapse_tagged_cells(listed, "collapse", "x") == listed


def test_the_real_notebooks_inline_cleanly():
    """Every notebook of the site imports snippets that can share its namespace."""
    import jupytext

    from resnorm_site.notebooks.inline import inline_snippets

    notebooks = sorted((ROOT / "docs").glob("*/*.py"))
    notebooks = [p for p in notebooks if p.parent.name in {"notebooks", "experiments"}]
    assert notebooks
    for path in notebooks:
        inline_snippets(jupytext.read(path), ROOT)


# --- The build keeps notebooks away from the repository -------------------------------


# tests/test_site.py::test_failing_notebooks_fail_the_build_each_one_named checks it.


# --- The built site, as a reader uses it ------------------------------------------------


class _Cells(HTMLParser):
    """The code cells of a notebook page: the text of each input area, in order."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.cells: list[str] = []
        self._depth = 0  # <div> depth inside the current input editor, 0 outside
        self._in_pre = False

    def handle_starttag(self, tag, attrs):
        classes = (dict(attrs).get("class") or "").split()
        if tag == "div":
            if self._depth:
                self._depth += 1
            elif "jp-InputArea-editor" in classes:
                self._depth = 1
                self.cells.append("")
        elif tag == "pre" and self._depth:
            self._in_pre = True

    def handle_endtag(self, tag):
        if tag == "div" and self._depth:
            self._depth -= 1
        elif tag == "pre":
            self._in_pre = False

    def handle_data(self, data):
        if self._in_pre:
            self.cells[-1] += data


def page_cells(page: Path) -> list[str]:
    parser = _Cells()
    parser.feed(page.read_text(encoding="utf-8"))
    return [html.unescape(c).rstrip("\n") for c in parser.cells]


def stdout_of(cell) -> str:
    return "".join(o.get("text", "") for o in cell.get("outputs", []) if o.get("name") == "stdout")


def _clean_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "PYTHONSTARTUP"}}
    env["MPLBACKEND"] = "Agg"
    return env


# The cells run as codeblocks.RUNNER runs a page's blocks, except that what a cell shows
# with IPython's display() is kept apart from what it prints: a notebook page shows the
# two apart too (a display() outside Jupyter would print the object's repr).
CELL_RUNNER = """
import IPython.display
DISPLAYED = []
def _display(*objs, raw=False, **kwargs):
    for obj in objs:
        text = obj.get("text/plain", "") if raw and isinstance(obj, dict) else repr(obj)
        DISPLAYED.append((len(outputs), text))
IPython.display.display = _display
""" + codeblocks.RUNNER.replace(
    'print(json.dumps({"outputs": outputs, "failed": None}))',
    'print(json.dumps({"outputs": outputs, "failed": None, "displayed": DISPLAYED}))',
)


def _run_page_cells(name: str, cells: list[str], scratch: Path) -> codeblocks.Result:
    scratch.mkdir(parents=True)
    payload = json.dumps([(f"{name} cell {i + 1}", code) for i, code in enumerate(cells)])
    proc = subprocess.run(
        [sys.executable, "-I", "-c", CELL_RUNNER],  # -I: not even the cwd on sys.path
        input=payload,
        capture_output=True,
        text=True,
        cwd=scratch,
        env=_clean_env(),
        timeout=TIMEOUT_S,
    )
    last = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else "{}"
    data = json.loads(last) if last.startswith("{") else {"failed": "the interpreter"}
    result = codeblocks.Result(data.get("outputs", []), data.get("failed"), proc.stderr, 0)
    result.displayed = data.get("displayed", [])  # [(cell index, text/plain)]
    return result


def _downloads(site: Path) -> list[Path]:
    return sorted(site.rglob("*.ipynb"))


NOTEBOOK_STEMS = sorted(
    p.stem for d in ("notebooks", "experiments") for p in (ROOT / "docs" / d).glob("*.py")
)


def test_every_notebook_page_offers_its_download(built_site: Path):
    assert sorted(p.stem for p in _downloads(built_site)) == NOTEBOOK_STEMS


@pytest.mark.parametrize("stem", NOTEBOOK_STEMS)
def test_page_cells_are_the_downloaded_notebook(built_site: Path, stem: str):
    """What the page shows is the notebook the build executed, and it carries its code."""
    (ipynb,) = [p for p in _downloads(built_site) if p.stem == stem]
    nb = nbformat.read(ipynb, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    shown = [c.source.rstrip("\n") for c in code if not _publishes(c)]
    assert page_cells(ipynb.parent / "index.html") == shown
    assert all(c.execution_count for c in code), "every cell was executed by the build"
    assert not any(re.search(r"^\s*(from|import) snippets\b", c.source, re.M) for c in code)
    page = (ipynb.parent / "index.html").read_text(encoding="utf-8")
    inlined = [c.metadata["resnorm"]["snippet"] for c in code if "resnorm" in c.metadata]
    label = LABELS["zh" if stem.endswith(".zh") else "en"]["imports"]
    for snippet in inlined:  # visible on the page, collapsed
        assert f"{label} <code>{snippet}</code>" in page


def _publishes(cell) -> bool:
    """A cell that only hands the run's numbers to the build: the page leaves it out, the
    download keeps it."""
    return PUBLISH_TAG in cell.metadata.get("tags", [])


def plain_python_problems(cells: list[str]) -> list[str]:
    """What would stop a page's cells, copied into a plain Python file, from running as
    they ran in Jupyter: IPython's syntax (magics, shell escapes, top-level await) and the
    names only IPython defines (display, get_ipython). ruff's F821 finds the names."""
    source = "\n\n".join(cells) + "\n"
    try:  # compile, not only parse: a top-level await parses, and fails to compile
        ast.parse(source, feature_version=(3, 10))
        compile(source, "cells.py", "exec", dont_inherit=True)
    except SyntaxError as err:
        return [f"line {err.lineno} of the cells: {err.msg}"]
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "ruff",
            "check",
            "--isolated",
            "--select",
            "F821",
            "--output-format",
            "concise",
            "--stdin-filename",
            "cells.py",
            "-",
        ],
        input=source,
        capture_output=True,
        text=True,
        timeout=60,
    )
    return [line for line in proc.stdout.splitlines() if "F821" in line]


@pytest.mark.parametrize("stem", NOTEBOOK_STEMS)
def test_page_cells_are_plain_python(built_site: Path, stem: str):
    """Every notebook page's cells ran once, in the build: in a fresh kernel, in an empty
    directory outside the repository, with nothing of it on the path (the download is
    that run; see below). What a kernel adds to plain Python is checked here without a
    second run; test_a_notebook_runs_as_copied runs one page's cells for real."""
    (ipynb,) = [p for p in _downloads(built_site) if p.stem == stem]
    cells = page_cells(ipynb.parent / "index.html")
    assert cells, "the page shows its code"
    assert plain_python_problems(cells) == []


def test_plain_python_problems_are_found():
    assert plain_python_problems(["x = 1", "print(x)"]) == []
    assert plain_python_problems(["%timeit 1"])
    assert plain_python_problems(["!pip install torch"])
    assert plain_python_problems(["import asyncio", "await asyncio.sleep(0)"])
    (problem,) = plain_python_problems(["x = 1", "display(x)"])
    assert "display" in problem


def test_a_notebook_runs_as_copied(built_site: Path, tmp_path: Path):
    """The page's cells of the notebook whose build run is shortest, as a reader copies
    them: run in order in one fresh `python -I` in a scratch directory outside the
    repository. They print and display what the page shows."""
    assert not tmp_path.is_relative_to(ROOT)

    def seconds(ipynb: Path) -> float:
        return nbformat.read(ipynb, as_version=4).metadata["resnorm"]["execution_seconds"]

    downloads = [p for p in _downloads(built_site) if p.stem.split(".")[0] not in VARYING_OUTPUTS]
    ipynb = min(downloads, key=seconds)
    cells = page_cells(ipynb.parent / "index.html")
    result = _run_page_cells(ipynb.stem, cells, tmp_path / "scratch")
    assert result.failed is None, f"{result.failed} failed:\n{result.stderr[-4000:]}"
    cells_run = nbformat.read(ipynb, as_version=4).cells
    code = [c for c in cells_run if c.cell_type == "code" and not _publishes(c)]
    assert result.outputs == [stdout_of(c) for c in code], "a cell printed something else"
    shown = [
        (i, o["data"]["text/plain"])
        for i, c in enumerate(code)
        for o in c.get("outputs", [])
        if o.get("output_type") == "display_data"
        and "text/plain" in o.get("data", {})
        and "image/png" not in o["data"]
    ]
    assert [tuple(d) for d in result.displayed] == shown, "a cell displayed something else"


@pytest.mark.parametrize("stem", NOTEBOOK_STEMS)
def test_downloaded_notebook_is_one_clean_run_from_the_top(built_site: Path, stem: str):
    """The download is the notebook as the build executed it: every code cell, in order, in
    one fresh Jupyter kernel started in an empty directory outside the repository with no
    PYTHONPATH (resnorm_site/notebooks/run.py; a notebook that reaches for the repository
    fails the build, see above), which is what ``jupyter nbconvert --execute`` does with
    the downloaded file on a reader's machine. Running it a second time here would repeat
    that run; the page's cells run again above, as a reader copies them."""
    (ipynb,) = [p for p in _downloads(built_site) if p.stem == stem]
    nb = nbformat.read(ipynb, as_version=4)
    nbformat.validate(nb)
    assert nb.metadata["kernelspec"]["name"] == "python3"
    assert nb.metadata["kernelspec"]["language"] == "python"
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert [c.execution_count for c in code] == list(range(1, len(code) + 1)), (
        "one kernel, top to bottom"
    )
    errors = [o for c in code for o in c.outputs if o.output_type == "error"]
    assert not errors, f"a cell raised: {errors[0].get('ename')}: {errors[0].get('evalue')}"
    assert not any(re.search(r"^\s*(from|import) snippets\b", c.source, re.M) for c in code)
    assert nb.metadata["resnorm"]["execution_seconds"] > 0


# --- Executing notebooks in parallel -------------------------------------------------------

TIMED_NOTEBOOK = """{header}# %% [markdown]
# # {name} ({mode})

# %%
# run: {mode}
import json
import random
import time

START = time.time()
rng = random.Random({seed})
print([rng.random() for _ in range(3)])

# %%
time.sleep(1.0)
print(json.dumps({{"start": START, "end": time.time()}}))
"""
ALONE_HEADER = "# ---\n# jupyter:\n#   resnorm:\n#     runs_alone: it times code\n# ---\n\n"


def _timed_build(tmp_path: Path, mode: str, jobs: int, monkeypatch) -> tuple[dict, str]:
    from tests.test_site import _build

    pages = {"index.md": "# Home\n"}
    for name, seed, header in (("pa", 1, ""), ("pb", 2, ""), ("alone", 3, ALONE_HEADER)):
        # new code each run (the run's cache key is its code), so the cache cannot answer
        title = f"{mode} {time.time_ns()}"
        text = TIMED_NOTEBOOK.format(header=header, name=name, mode=title, seed=seed)
        pages[f"notebooks/{name}.py"] = text
    monkeypatch.setenv("RESNORM_NOTEBOOK_JOBS", str(jobs))
    proc = _build(tmp_path / mode, pages)
    assert proc.returncode == 0, proc.stderr
    runs = {}
    for name in ("pa", "pb", "alone"):
        nb = nbformat.read(tmp_path / mode / "site/notebooks" / name / f"{name}.ipynb", 4)
        code = [c for c in nb.cells if c.cell_type == "code"]
        runs[name] = {
            "code": [re.sub(r"^# run: .*\n", "", c.source) for c in code],  # less the nonce
            "values": stdout_of(code[0]),
            "span": json.loads(stdout_of(code[1])),
        }
    return runs, proc.stderr


@pytest.mark.build
def test_parallel_build_matches_serial_and_leaves_timing_notebooks_alone(tmp_path, monkeypatch):
    serial, _ = _timed_build(tmp_path, "serial", 1, monkeypatch)
    parallel, log = _timed_build(tmp_path, "parallel", 2, monkeypatch)
    for name in serial:  # the same cells and the same (non-timing) outputs
        assert parallel[name]["code"] == serial[name]["code"]
        assert parallel[name]["values"] == serial[name]["values"]

    def overlap(a: str, b: str) -> bool:
        x, y = parallel[a]["span"], parallel[b]["span"]
        return x["start"] < y["end"] and y["start"] < x["end"]

    assert overlap("pa", "pb"), "two notebooks ran at once"
    assert not overlap("alone", "pa") and not overlap("alone", "pb"), "it ran alone"
    # one line saying what happens, one per notebook; no kernel or cache chatter
    assert log.count("executing 3 notebook(s), 2 at a time, then notebooks/alone.py alone") == 1
    assert len(re.findall(r"executed notebooks/\w+\.py in [\d.]+ s \(\d of 3\)", log)) == 3
    for noise in ("without encryption", "Converting notebook", "Cache miss", "Copied jupyter"):
        assert noise not in log


# --- mkdocs serve does not wait for the notebooks -------------------------------------------

SLOW_NOTEBOOK = """# %% [markdown]
# # Slow

# %%
# run: {nonce}
import time

from IPython.display import display

time.sleep(6)
print("the slow notebook ran")
results = {{"answer": "42"}}
display({{"application/vnd.resnorm.results+json": results, "text/plain": "42"}}, raw=True)
"""


@pytest.mark.build
def test_serve_shows_pages_at_once_and_notebooks_when_they_are_ready(tmp_path: Path):
    import socket
    import urllib.request

    from tests.test_site import _config_with_docs

    pages = {
        "index.md": "# Home\n\nThe answer is [[measured:slow:answer]].\n",
        "notebooks/slow.py": SLOW_NOTEBOOK.format(nonce=time.time_ns()),
    }
    config = _config_with_docs(tmp_path, pages)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    base = f"http://127.0.0.1:{port}/resnorm/"
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    command = [
        sys.executable,
        "-m",
        "mkdocs",
        "serve",
        "-f",
        str(config),
        "-a",
        f"127.0.0.1:{port}",
    ]
    proc = subprocess.Popen(
        command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )

    def get(path: str) -> str | None:
        try:
            with urllib.request.urlopen(base + path, timeout=5) as r:
                return r.read().decode()
        except OSError:
            return None

    try:
        start = time.perf_counter()
        while (home := get("")) is None:
            assert proc.poll() is None, proc.stderr.read()
            assert time.perf_counter() - start < 60, "no page within 60 s"
            time.sleep(0.1)
        notebook = get("notebooks/slow/")
        # served before the notebook finished: its page and its number say so, the page
        # rendered as a notebook page (not the stand-in notebook's JSON as text)
        assert "being measured" in home and "This notebook is being executed" in notebook
        assert 'class="jupyter-wrapper"' in notebook and '"cell_type"' not in notebook
        assert "<h1" in notebook and ">Slow<" in notebook, "the page keeps its title"
        assert "the slow notebook ran" not in notebook
        while "the slow notebook ran" not in (get("notebooks/slow/") or ""):
            assert proc.poll() is None, proc.stderr.read()
            assert time.perf_counter() - start < 120, "the notebook page never became ready"
            time.sleep(0.2)
        for _ in range(50):  # the rebuild that shows the notebook also fills in its number
            if "The answer is 42." in (get("") or ""):
                break
            time.sleep(0.2)
        assert "The answer is 42." in get("")
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_cache_key_follows_the_code_that_shapes_a_run_only(tmp_path: Path, monkeypatch):
    """A run is kept under a key of what shapes its outputs: the modules that inline
    snippets and execute, and the versions of the packages it runs with. How its page
    is rendered, or a tool of the build or the tests, can change without a re-run."""
    from resnorm_site.notebooks import cache

    shaping = cache.shaping_code().decode()
    assert "def inline_snippets(" in shaping and "def execute(" in shaping
    assert "def collapse_snippet_cells(" not in shaping and "def prune_css(" not in shaping
    versions = cache.runtime_versions()
    for package in ("torch==", "numpy==", "matplotlib==", "nbclient==", "ipykernel=="):
        assert package in versions
    for tool in ("mkdocs", "ruff", "pytest", "playwright"):
        assert tool not in versions
    notebook = tmp_path / "nb.py"
    notebook.write_text("# %%\nprint(1)\n")
    key = cache.cache_key(notebook)
    monkeypatch.setattr(cache, "runtime_versions", lambda: versions.replace("torch==", "torch==0"))
    assert cache.cache_key(notebook) != key, "another torch is another run"


def test_parallel_runs_start_with_the_longest(tmp_path: Path, monkeypatch):
    """Longest first: by an earlier run's time where one is cached, else by source size,
    with notebooks never run before ahead of the rest."""
    from resnorm_site import paths
    from resnorm_site.notebooks.schedule import longest_first

    monkeypatch.setenv("RESNORM_CACHE_DIR", str(tmp_path / "cache"))
    sources = {}
    for name, size in (("short", 10), ("long", 5000), ("known_fast", 9000), ("known_slow", 1)):
        sources[name] = tmp_path / f"{name}.py"
        sources[name].write_text("#" * size)
    for key, name, seconds in (("a" * 20, "known_fast", 2.5), ("b" * 20, "known_slow", 40.0)):
        earlier = paths.run_path(key, f"{name}.py")
        earlier.parent.mkdir(parents=True)
        nb = nbformat.v4.new_notebook(metadata={"resnorm": {"execution_seconds": seconds}})
        nbformat.write(nb, earlier)
    pending = [(n, src, paths.run_path("c" * 20, f"{n}.py")) for n, src in sources.items()]
    order = [name for name, _, _ in longest_first(pending)]
    assert order == ["long", "short", "known_slow", "known_fast"]
