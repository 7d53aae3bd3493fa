"""Execute the jupytext notebooks under ``docs/`` at build time, with a cache.

mkdocs-jupyter renders a notebook but caches on the notebook's own bytes only,
so a change to a snippet that the notebook imports would not re-run it. This
hook executes each notebook itself (``nbclient``, errors fail the build) and
keys its cache on everything the output depends on: the notebook text, every
``snippets/*.py`` file the notebook names, the parts of this hook that shape the
executed notebook and ``requirements.txt``.

The notebook runs on its own, outside the repository: before executing it,
the hook puts every snippet module it imports (``from snippets.X import ...``)
into the notebook as code cells of their own, tagged ``snippet-source``, ahead
of its first code cell, and turns those import lines into comments. The kernel
runs in an empty scratch directory with nothing of the repository on its path,
so a notebook that still reached for the repository would fail the build. The
page shows those cells collapsed, the downloaded ``.ipynb`` has them collapsed
too, and both are what the build executed.

Notebooks whose cache entry is missing execute in parallel, one per core
(``RESNORM_NOTEBOOK_JOBS`` overrides), and a notebook whose header says
``resnorm: {runs_alone: ...}`` runs afterwards with the machine to itself. Under
``mkdocs serve`` the build does not wait for them: it serves the other pages,
shows each notebook page as "being executed" (never an earlier run) and rebuilds
when the runs end.

The executed ``.ipynb`` then replaces the page's source, so mkdocs-jupyter
renders the executed notebook and its ``include_source`` offers it for
download.

The notebook page's HTML is also trimmed: the stylesheet mkdocs-jupyter inlines
into every notebook page moves to one shared file, and the CDN scripts (MathJax,
Mermaid) it adds are removed, so the page stays small and makes no request to
another host. Math in notebooks is typeset by the site's own KaTeX.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import logging
import os
import re
import shutil
import tempfile
import textwrap
import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

from mkdocs.exceptions import PluginError
from mkdocs.plugins import event_priority
from mkdocs.structure.files import Files

log = logging.getLogger("mkdocs.hooks.notebooks")
# mkdocs-jupyter logs three INFO lines per notebook page (converting, its own cache,
# the copied .ipynb); this hook reports what matters, so keep only its warnings.
for _name in ("mkdocs.plugins.mkdocs_jupyter", "mkdocs.mkdocs-jupyter"):
    logging.getLogger(_name).setLevel(logging.WARNING)

CACHE = Path(".cache/notebooks")
NOTEBOOK_GLOBS = ("notebooks/*.py", "experiments/*.py")
# A notebook publishes headline numbers by displaying a dict under this MIME
# type; a page quotes one as [[measured:NOTEBOOK:KEY]] (NOTEBOOK = file stem).
RESULTS_MIME = "application/vnd.resnorm.results+json"
MEASURED = re.compile(r"\[\[measured:([\w-]+):([\w-]+)\]\]")
MARKDOWN_SPECIAL = re.compile(r"[\\`*_\[\]]")
SNIPPET_NAME = re.compile(r"(?<![\w/])snippets[./]([A-Za-z_]\w*)")  # not tests/snippets/
CELL_TIMEOUT_S = 600

ROOT = Path(__file__).resolve().parent.parent  # the repository

_used: dict[str, Path] = {}  # notebook name -> its executed copy in this build
_stylesheets: dict[str, str] = {}
_results: dict[str, dict] = {}  # notebook stem -> the numbers it published
_classes: set[str] = set()  # every class name used on a notebook page of this build
CLASS_ATTR = re.compile(r'class="([^"]*)"')
CLASS_IN_SELECTOR = re.compile(r"\.(-?[A-Za-z_][\w-]*)")


_pruned: dict[tuple[str, frozenset[str]], str] = {}  # prune_css results, by input


@functools.lru_cache(maxsize=64)
def _selector_classes(css: str) -> tuple[bool, tuple[frozenset[str], ...]]:
    """What prune_css decides on, read once per stylesheet: whether the sheet keeps
    something whatever the page uses (an at-rule, a selector without a class, stray
    text), and the classes each other selector needs (inside @media too)."""
    css = re.sub(r"/\*.*?\*/", "", css, flags=re.DOTALL)
    always, needs, i, n = False, [], 0, len(css)
    while i < n:
        open_at = css.find("{", i)
        if open_at < 0:
            always = always or bool(css[i:].strip())
            break
        depth, j = 1, open_at + 1
        while j < n and depth:
            depth += {"{": 1, "}": -1}.get(css[j], 0)
            j += 1
        head = css[i:open_at].strip()
        if head.startswith("@media"):
            inner_always, inner = _selector_classes(css[open_at + 1 : j - 1])
            always, needs = always or inner_always, needs + list(inner)
        elif head.startswith("@"):
            always = True
        else:
            for sel in head.split(","):
                if sel.strip():
                    needs.append(frozenset(CLASS_IN_SELECTOR.findall(sel)))
        i = j
    return always, tuple(needs)


def keeps_anything(css: str, used: set[str]) -> bool:
    """Whether prune_css(css, used) keeps any rule, without building its output."""
    always, needs = _selector_classes(css)
    return always or any(classes <= used for classes in needs)


def prune_css(css: str, used: set[str]) -> str:
    """Drop the rules whose every selector names a class that no page uses.

    JupyterLab's stylesheet styles its whole application (toolbars, dialogs,
    widgets); a static notebook page uses a small part of it. Rules without
    class selectors, and at-rules other than @media, are kept as they are.
    """
    css = re.sub(r"/\*.*?\*/", "", css, flags=re.DOTALL)
    out, i, n = [], 0, len(css)
    while i < n:
        open_at = css.find("{", i)
        if open_at < 0:
            out.append(css[i:])
            break
        prelude = css[i:open_at]
        depth, j = 1, open_at + 1
        while j < n and depth:
            depth += {"{": 1, "}": -1}.get(css[j], 0)
            j += 1
        body = css[open_at + 1 : j - 1]
        head = prelude.strip()
        if head.startswith("@media"):
            inner = prune_css(body, used)
            if inner.strip():
                out.append(f"{prelude}{{{inner}}}")
        elif head.startswith("@"):
            out.append(css[i:j])
        else:
            selectors = [sel for sel in head.split(",") if sel.strip()]
            if any(set(CLASS_IN_SELECTOR.findall(sel)) <= used for sel in selectors):
                out.append(css[i:j])
        i = j
    return "".join(out)


_reads: dict[tuple, object] = {}  # (reader, path) -> (stat, notebook); serve rebuilds reuse it


def read_notebook(path: Path, *, executed: bool = False):
    """jupytext.read(path), or nbformat.read for an executed .ipynb, remembered while the
    file's size and mtime stay the same: a rebuild reads each notebook once per language
    otherwise, and parsing is most of a Markdown edit's rebuild. A copy is returned, so a
    caller may change it."""
    import copy

    stat = path.stat()
    stamp = (stat.st_mtime_ns, stat.st_size)
    key = (executed, str(path))
    hit = _reads.get(key)
    if hit is None or hit[0] != stamp:
        if executed:
            import nbformat

            hit = (stamp, nbformat.read(path, as_version=4))
        else:
            import jupytext

            hit = (stamp, jupytext.read(path))
        _reads[key] = hit
    return copy.deepcopy(hit[1])


def is_notebook(src_uri: str) -> bool:
    return any(Path(src_uri).match(glob) for glob in NOTEBOOK_GLOBS)


def published_results(executed: Path) -> dict:
    """Every dict the executed notebook displayed under RESULTS_MIME, merged."""
    results: dict = {}
    for cell in read_notebook(executed, executed=True).cells:
        for output in cell.get("outputs", []):
            results.update(output.get("data", {}).get(RESULTS_MIME, {}))
    return results


def _execution_code() -> bytes:
    """The parts of this hook that shape an executed notebook; the rest of it (how the
    page's HTML is trimmed, how runs are scheduled) can change without a re-run."""
    import inspect

    shaping = (
        snippet_cell_source,
        _stored_names,
        inline_snippets,
        execute,
        shrink_plots,
        execution_source,
    )
    parts = [inspect.getsource(f) for f in shaping]
    parts += [SNIPPET_TAG, DEMO_SECTION.pattern, SECTION_MARKER.pattern, str(CELL_TIMEOUT_S)]
    return "\n".join(parts).encode()


CJK = re.compile("[\u3000-\u303f\u4e00-\u9fff\uff00-\uffef]")


def join_chinese_lines(markdown: str) -> str:
    """Join the lines of a paragraph that a notebook source wrapped between two Chinese
    characters: Markdown keeps the line break, and a browser shows it as a space."""
    out: list[str] = []
    fenced = False
    for line in markdown.split("\n"):
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
        previous = out[-1] if out else ""
        if (
            not fenced
            and previous
            and line
            and CJK.match(line[0])
            and CJK.match(previous[-1])
            and not previous.lstrip().startswith(("#", "|"))
        ):
            out[-1] = previous + line
        else:
            out.append(line)
    return "\n".join(out)


# Cell options that only change how a page shows a cell, not what the cell computes.
DISPLAY_ONLY = ("alt",)


def execution_source(notebook: Path) -> str:
    """What a run of the notebook depends on, from its own text: its code cells (with
    their options, but for those that only change the page) and its header. Prose and
    plot descriptions are left out: editing them re-renders the page without a re-run."""
    import json

    nb = read_notebook(notebook)
    code = [
        [c.source, {k: v for k, v in c.metadata.items() if k not in DISPLAY_ONLY}]
        for c in nb.cells
        if c.cell_type == "code"
    ]
    return json.dumps([nb.metadata.get("resnorm"), code], sort_keys=True, ensure_ascii=False)


def cache_key(notebook: Path, root: Path) -> str:
    """Hash of everything an executed notebook's output depends on."""
    text = execution_source(notebook)
    h = hashlib.sha256()
    h.update(text.encode())
    for name in sorted(set(SNIPPET_NAME.findall(text))):
        snippet = root / "snippets" / f"{name}.py"
        if not snippet.is_file():
            raise PluginError(f"{notebook}: names snippets/{name}.py, which does not exist")
        h.update(name.encode() + b"\0" + snippet.read_bytes())
    h.update(_execution_code())
    h.update((root / "requirements.txt").read_bytes())
    return h.hexdigest()[:20]


SNIPPET_TAG = "snippet-source"
DEMO_SECTION = re.compile(
    r"^# --8<-- \[start:demo\]\n.*?^# --8<-- \[end:demo\]\n?", re.DOTALL | re.MULTILINE
)
SECTION_MARKER = re.compile(r"^# --8<-- \[(?:start|end):[\w-]+\]\n", re.MULTILINE)


def snippet_cell_source(name: str, root: Path) -> str:
    """snippets/NAME.py as a notebook cell: its code without the demo and the markers."""
    path = root / "snippets" / f"{name}.py"
    if not path.is_file():
        raise ValueError(f"imports snippets.{name}, but snippets/{name}.py does not exist")
    code = SECTION_MARKER.sub("", DEMO_SECTION.sub("", path.read_text(encoding="utf-8")))
    if "__main__" in code:
        raise ValueError(
            f"snippets/{name}.py has a __main__ block outside its demo section; a notebook "
            "runs as __main__, so the block would run in the notebook"
        )
    header = (
        f"# snippets/{name}.py, the handbook's code that this notebook imports, included by\n"
        "# the build so that the notebook runs on its own (see the handbook's snippets/).\n"
    )
    return header + code.strip("\n")


def _stored_names(tree: ast.AST) -> set[str]:
    """Names a module binds at its top level (not inside functions or classes)."""
    names: set[str] = set()

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(child.name)  # its body binds nothing at the top level
            elif isinstance(child, ast.Name) and isinstance(child.ctx, ast.Store):
                names.add(child.id)
            elif isinstance(child, (ast.Import, ast.ImportFrom)):
                continue  # the same imports in two cells bind the same objects
            else:
                visit(child)

    visit(tree)
    return names


def inline_snippets(nb, root: Path) -> list[str]:
    """Put the snippet modules the notebook imports into it, ahead of its first code cell.

    Each ``from snippets.NAME import a, b`` becomes a comment; snippets/NAME.py becomes
    a code cell (tagged SNIPPET_TAG, collapsed in Jupyter). All of them share the
    notebook's one namespace, so a name bound by two of them, or by one of them and by
    the notebook, would let one silently replace the other: that is an error.
    Returns the snippet names, in the order they are first imported.
    """
    import nbformat

    modules: list[str] = []
    notebook_names: set[str] = set()
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        try:
            tree = ast.parse(cell.source)
        except SyntaxError as err:
            raise ValueError(f"a code cell does not parse: {err}") from None
        imported_modules: list[str] = []  # this cell's, in the order they first appear
        lines = cell.source.split("\n")
        for node in reversed(tree.body):  # bottom up: a rewrite keeps the lines above in place
            if isinstance(node, ast.Import) and any(
                a.name.split(".")[0] == "snippets" for a in node.names
            ):
                raise ValueError(
                    f"line {node.lineno} of a cell imports the snippets package itself; "
                    "write `from snippets.NAME import ...`, which the build can inline"
                )
            if not isinstance(node, ast.ImportFrom) or not node.module:
                continue
            parts = node.module.split(".")
            if parts[0] != "snippets":
                continue
            if len(parts) != 2 or any(a.name == "*" for a in node.names):
                raise ValueError(
                    f"`from {node.module} import ...` on line {node.lineno} of a cell: only "
                    "`from snippets.NAME import a, b` can be inlined"
                )
            if parts[1] not in imported_modules:
                imported_modules.insert(0, parts[1])
            elif imported_modules.index(parts[1]) > 0:  # keep the order of first use
                imported_modules.remove(parts[1])
                imported_modules.insert(0, parts[1])
            first, last = node.lineno - 1, node.end_lineno - 1
            lines[first : last + 1] = textwrap.wrap(
                ", ".join(a.name for a in node.names),
                width=88,
                initial_indent=f"# from snippets/{parts[1]}.py, in the first cells of this "
                "notebook: ",
                subsequent_indent="#   ",
                break_long_words=False,
                break_on_hyphens=False,
            )
        cell.source = "\n".join(lines)
        notebook_names |= _stored_names(ast.parse(cell.source))
        modules += [m for m in imported_modules if m not in modules]

    cells, owner = [], {}
    for name in modules:
        source = snippet_cell_source(name, root)
        for bound in sorted(_stored_names(ast.parse(source))):
            if bound in owner:
                raise ValueError(
                    f"snippets/{owner[bound]}.py and snippets/{name}.py both define "
                    f"{bound!r}; in one notebook one would replace the other"
                )
            owner[bound] = name
        cell = nbformat.v4.new_code_cell(source)
        cell.metadata["tags"] = [SNIPPET_TAG]
        cell.metadata["jupyter"] = {"source_hidden": True}
        cell.metadata["resnorm"] = {"snippet": f"snippets/{name}.py"}
        cells.append(cell)
    clashes = sorted(set(owner) & notebook_names)
    if clashes:
        where = ", ".join(f"{n!r} (snippets/{owner[n]}.py)" for n in clashes)
        raise ValueError(f"the notebook rebinds names its snippets define: {where}")
    first_code = next((i for i, c in enumerate(nb.cells) if c.cell_type == "code"), len(nb.cells))
    nb.cells[first_code:first_code] = cells
    return modules


def execute(notebook: Path, root: Path, target: Path) -> float:
    """Run every cell of ``notebook`` in a fresh kernel; write the result to ``target``."""
    import jupytext
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    nb = jupytext.read(notebook)
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    try:
        inline_snippets(nb, root)
    except ValueError as err:
        raise PluginError(f"notebook {notebook}: {err}") from None
    # The kernel starts in an empty directory, with no PYTHONPATH: the notebook
    # sees nothing of the repository but what it carries, as a reader's copy does.
    env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "PYTHONSTARTUP"}}
    with tempfile.TemporaryDirectory(prefix="resnorm-notebook-") as scratch:
        client = NotebookClient(
            nb,
            timeout=CELL_TIMEOUT_S,
            kernel_name="python3",
            allow_errors=False,  # a cell tagged raises-exception may still fail on purpose
            resources={"metadata": {"path": scratch}},
        )
        if os.name == "posix":
            # Kernel and client talk over Unix sockets in the scratch directory, not
            # over TCP on localhost (which ipykernel warns about, once per notebook).
            client.km = client.create_kernel_manager()
            client.km.transport = "ipc"
            client.km.ip = os.path.join(scratch, "kernel")
        start = time.perf_counter()
        try:
            client.execute(env=env, cwd=scratch)
        except CellExecutionError as err:
            raise PluginError(f"notebook {notebook} failed:\n{err}") from None
        except Exception as err:  # the kernel died, a cell timed out, ...
            raise PluginError(f"notebook {notebook} failed: {type(err).__name__}: {err}") from None
        seconds = time.perf_counter() - start
    shrink_plots(nb)
    nb.metadata.setdefault("resnorm", {})["execution_seconds"] = round(seconds, 2)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(".tmp")
    nbformat.write(nb, tmp)
    tmp.replace(target)
    return seconds


def shrink_plots(nb) -> None:
    """Re-encode PNG plots with a 256-colour palette when that is smaller.

    A notebook page inlines its plots as base64 PNG, which gzip cannot shrink;
    matplotlib's line plots use few colours, so a palette PNG is about a third
    of the size and looks the same.
    """
    import base64
    import io

    from PIL import Image

    for cell in nb.cells:
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            if "image/png" not in data:
                continue
            raw = base64.b64decode(data["image/png"])
            image = Image.open(io.BytesIO(raw)).convert("RGB")
            smaller = io.BytesIO()
            image.quantize(colors=256, method=Image.Quantize.MEDIANCUT).save(
                smaller, "PNG", optimize=True
            )
            if smaller.tell() < len(raw):
                data["image/png"] = base64.b64encode(smaller.getvalue()).decode()


def runs_alone(notebook: Path) -> bool:
    """A notebook whose header says ``resnorm: {runs_alone: ...}`` (it times code) gets
    the machine to itself: no other notebook executes while it runs."""
    meta = read_notebook(notebook).metadata.get("resnorm", {})
    return bool(meta.get("runs_alone"))


def notebook_jobs() -> int:
    """How many notebooks execute at once: RESNORM_NOTEBOOK_JOBS, or one per core."""
    value = os.environ.get("RESNORM_NOTEBOOK_JOBS", "")
    if value:
        if not value.isdigit() or int(value) < 1:
            raise PluginError(f"RESNORM_NOTEBOOK_JOBS must be a positive integer, got {value!r}")
        return int(value)
    return os.cpu_count() or 1


def longest_first(pending: list[tuple[str, Path, Path]], root: Path) -> list:
    """The notebooks in the order that ends a parallel run soonest: the longest first.
    A notebook's length is its last run's time where an earlier run is still in the cache
    (its code changed since), else the size of its source; those never run come first."""
    import json

    def key(job: tuple[str, Path, Path]) -> tuple[bool, float]:
        _, source, target = job
        for earlier in (root / CACHE).glob(f"*/{target.name}"):
            try:
                meta = json.loads(earlier.read_text(encoding="utf-8"))["metadata"]
                return True, -float(meta["resnorm"]["execution_seconds"])
            except (OSError, ValueError, KeyError, TypeError):
                continue
        return False, -float(source.stat().st_size)

    return sorted(pending, key=key)


def execute_all(pending: list[tuple[str, Path, Path]], root: Path, jobs: int) -> None:
    """Execute the (name, source, target) notebooks: up to ``jobs`` at a time, the longest
    first, then, one by one on an otherwise idle machine, those that run alone. Logs one
    line each."""
    alone = [p for p in pending if runs_alone(p[1])]
    shared = longest_first([p for p in pending if p not in alone], root)
    names = ", ".join(name for name, _, _ in alone)
    log.info(
        "executing %d notebook(s), %d at a time%s; this happens on the first build and "
        "again only for notebooks whose code changed",
        len(pending),
        min(jobs, max(len(shared), 1)),
        f", then {names} alone (it times code)" if alone else "",
    )
    done = 0

    def report(name: str, seconds: float) -> None:
        nonlocal done
        done += 1
        log.info("executed %s in %.1f s (%d of %d)", name, seconds, done, len(pending))

    if shared:
        with ThreadPoolExecutor(max_workers=min(jobs, len(shared))) as pool:
            futures = {pool.submit(execute, src, root, dst): name for name, src, dst in shared}
            for future in as_completed(futures):
                report(futures[future], future.result())  # a failure stops the build
    if alone:  # other hooks' background work (PlantUML) is done before anything is timed
        for thread in threading.enumerate():
            if thread.name.startswith("resnorm-shared-"):
                thread.join()
    for name, src, dst in alone:
        report(name, execute(src, root, dst))


# `mkdocs serve` does not wait for the notebooks: it serves the Markdown pages at once,
# shows each notebook page as "being executed" until its run is done, and rebuilds then.
_serving = False
_dirty = False  # mkdocs serve --dirty: a rebuild renders only the pages that changed
_in_flight: set[Path] = set()  # executed copies a background run is producing
_failed: dict[Path, str] = {}  # executed copies whose background run failed: the error
_lock = threading.Lock()
READY = CACHE / "ready"  # touched when a background run ends: the server rebuilds


def on_startup(command: str, dirty: bool) -> None:
    global _serving, _dirty
    _serving = command == "serve"
    _dirty = _serving and dirty


def on_serve(server, config, builder):
    READY.mkdir(parents=True, exist_ok=True)
    (READY / "stamp").touch()
    server.watch(str(ROOT / READY))
    return server


def _execute_in_background(pending: list[tuple[str, Path, Path]], root: Path) -> None:
    def run() -> None:
        try:
            execute_all(pending, root, notebook_jobs())
        except Exception as err:  # shown on the page and in the console; serving goes on
            log.error("%s", err)
            with _lock:
                for _, _, target in pending:
                    if not target.is_file():
                        _failed[target] = str(err).splitlines()[0]
        finally:
            with _lock:
                _in_flight.difference_update(target for _, _, target in pending)
            READY.mkdir(parents=True, exist_ok=True)
            (READY / "stamp").write_text(str(time.time()))  # the server rebuilds

    with _lock:
        _in_flight.update(target for _, _, target in pending)
    threading.Thread(target=run, name="notebooks", daemon=True).start()


def placeholder(source: Path, target: Path, failure: str | None, lang: str) -> Path:
    """A stand-in notebook for a page whose notebook has not finished executing."""
    import nbformat

    title = next(
        (c.source.splitlines()[0] for c in read_notebook(source).cells if c.source.strip()),
        f"# {source.stem}",
    )
    text = LABELS[lang]["failed"].format(failure=failure) if failure else LABELS[lang]["running"]
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell(f"{title}\n\n{text}")]
    name = f"{source.stem}.ipynb"  # name.zh.ipynb for a twin
    path = ROOT / CACHE / "pending" / ("failed" if failure else "running") / name
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, path)
    return path


LOCALE = re.compile(r"\.(zh)$")  # notebook.zh.py: the Chinese twin of notebook.py
DEFAULT_LANGUAGE = "en"
LABELS = {
    "en": {
        "running": (
            "**This notebook is being executed**, because the site is served for the first "
            "time or its code changed. The page reloads by itself when the run is done; "
            "nothing from an earlier run is shown in the meantime."
        ),
        "failed": "**This notebook failed to execute**: {failure}. The console says more.",
        "measuring": "*(being measured: the notebook is still executing)*",
        "imports": "Code this notebook imports:",
    },
    "zh": {
        "running": (
            "**这个 notebook 正在执行**：站点第一次启动，或者它的代码改了。运行结束后页面会"
            "自动刷新；在此之前不会显示任何旧的运行结果。"
        ),
        "failed": "**这个 notebook 执行失败**：{failure}。详情见控制台输出。",
        "measuring": "*（正在测量：notebook 仍在执行）*",
        "imports": "本 notebook 导入的代码：",
    },
}


def language(config) -> str:
    """The language this build renders (mkdocs-static-i18n sets the theme's per language)."""
    lang = config.theme.get("language", DEFAULT_LANGUAGE)
    return lang if lang in LABELS else DEFAULT_LANGUAGE


def english_twin(source: Path) -> Path:
    """docs/x/name.zh.py -> docs/x/name.py: the notebook whose code both pages run."""
    return source.with_name(LOCALE.sub("", source.stem) + source.suffix)


def notebook_stem(src_uri: str) -> str:
    """The name pages quote a notebook by, the same in every language."""
    return LOCALE.sub("", Path(src_uri).stem)


def page_copy(executed: Path, source: Path) -> Path:
    """The page of ``source``: its run (``executed``), with the Markdown cells and the
    display options of the code cells (a plot's alt text) as ``source`` has them now.

    For an English notebook that is the executed file itself, brought up to date. For a
    translation (name.zh.py) it is a copy beside it: the English run with the twin's
    prose, without a second run; the twin's code cells must be the English notebook's,
    cell for cell. The executed notebook has the same cells plus the inlined snippets."""
    import nbformat

    nb = read_notebook(executed, executed=True)
    own = [c for c in nb.cells if SNIPPET_TAG not in c.metadata.get("tags", [])]
    english = english_twin(source)
    theirs = read_notebook(source).cells
    ran = read_notebook(english).cells
    if [c.cell_type for c in theirs] != [c.cell_type for c in ran] or len(own) != len(ran):
        raise PluginError(f"{source}: its cells are not {english.name}'s, cell for cell")
    lang = LOCALE.search(source.stem)
    for mine, shown, code in zip(own, theirs, ran, strict=True):
        if shown.cell_type == "markdown":
            # A line break between two Chinese characters would show as a space.
            mine.source = join_chinese_lines(shown.source) if lang else shown.source
            continue
        if shown.source != code.source:
            raise PluginError(
                f"{source}: a code cell differs from {english.name}'s; the two "
                "languages run the same code (copy the English cell)"
            )
        for key in DISPLAY_ONLY:
            if key in shown.metadata:
                mine.metadata[key] = shown.metadata[key]
            else:
                mine.metadata.pop(key, None)
    target = executed.with_name(f"{executed.stem}.{lang.group(1)}.ipynb") if lang else executed
    text = nbformat.writes(nb)
    if not target.is_file() or target.read_text(encoding="utf-8") != text:
        target.write_text(text, encoding="utf-8")  # unchanged: keep the mtime
    return target


def as_page(file, config):
    """mkdocs-static-i18n re-creates every file as a plain File, which drops mkdocs-jupyter's
    wrapper that makes a .py notebook a page: wrap it again, keeping the i18n destination."""
    from mkdocs_jupyter.plugin import NotebookFile

    if file.is_documentation_page():
        return file
    page = NotebookFile(file, **config)
    page.dest_path, page.abs_dest_path, page.url = file.dest_path, file.abs_dest_path, file.url
    return page


@event_priority(-150)  # after mkdocs-jupyter and mkdocs-static-i18n have set up the files
def on_files(files: Files, config) -> Files:
    root = ROOT
    lang = language(config)
    if lang == DEFAULT_LANGUAGE:  # the other languages' builds follow in the same run
        _used.clear()
        _results.clear()
        if not _dirty:  # a dirty rebuild renders some pages only: keep what the others use
            _classes.clear()
    notebooks, pending = [], []
    for file in list(files):
        if not is_notebook(file.src_uri):
            continue
        page = as_page(file, config)
        if page is not file:
            files.remove(file)
            files.append(page)
        source = Path(file.abs_src_path)
        english = english_twin(source)
        executed = root / CACHE / cache_key(english, root) / (english.stem + ".ipynb")
        notebooks.append((page, source, executed))
        with _lock:
            busy = executed in _in_flight or executed in _failed
        if not executed.is_file() and not busy:
            name = (Path(file.src_uri).parent / english.name).as_posix()
            pending.append((name, english, executed))
    if pending and _serving:
        _execute_in_background(pending, root)
    elif pending:
        execute_all(pending, root, notebook_jobs())
    for page, source, executed in notebooks:
        # Set on the file object mkdocs-jupyter reads the notebook from (abs_src_path)
        # when it renders the page.
        if executed.is_file():
            shown = page_copy(executed, source)
            _used[shown.name] = executed.parent
            _results[notebook_stem(page.src_uri)] = published_results(executed)
            page.abs_src_path = str(shown)
        else:  # serving, and still running (or failed): never an earlier run's outputs
            with _lock:
                failure = _failed.get(executed)
            page.abs_src_path = str(placeholder(source, executed, failure, lang))
    return files


# mkdocs-jupyter inlines Jupyter's stylesheets into every notebook page.
INLINE_STYLE = re.compile(r"<style[^>]*>(.*?)</style>", re.DOTALL)
# and scripts from CDNs (MathJax, Mermaid) that this site does not need
REMOTE_SCRIPT = re.compile(
    r"<script[^>]*\bsrc=[\"']https?://[^\"']*[\"'][^>]*>\s*</script>"
    r"|<script type=\"module\">(?:(?!</script>).)*?https?://(?:(?!</script>).)*?</script>",
    re.DOTALL,
)
MATHJAX_CONFIG = re.compile(
    r"<!-- Load mathjax -->.*?<!-- End of mathjax configuration -->", re.DOTALL
)


# A translated notebook's heading carries its English twin's anchor, as Markdown pages do:
# "## 设置 { #settings }". Notebook Markdown has no attribute syntax, so the page's
# heading ids, table of contents and title are set from it here.
HEADING = re.compile(
    r'<h([1-6]) id="([^"]*)">(.*?)\s*\{\s*#([\w-]+)\s*\}(<a class="anchor-link" href="#)([^"]*)"'
)
ANCHOR_ATTR = re.compile(r"\s*\{\s*#[\w-]+\s*\}\s*$")


def on_page_content(html: str, page, config, files) -> str:
    if not is_notebook(page.file.src_uri):
        return html
    ids: dict[str, str] = {}

    def heading(match: re.Match) -> str:
        level, old, text, new, link, _ = match.groups()
        ids[old] = new
        return f'<h{level} id="{new}">{text}{link}{new}"'

    html = HEADING.sub(heading, html)

    def fix(items) -> None:
        for item in items:
            item.title = ANCHOR_ATTR.sub("", item.title)
            item.id = ids.get(item.id, item.id)
            fix(item.children)

    if page.toc:
        fix(page.toc)
    if page.title:
        page.title = ANCHOR_ATTR.sub("", page.title)
    return html


def _is_notebook_stem(stem: str, files) -> bool:
    return any(is_notebook(f.src_uri) and notebook_stem(f.src_uri) == stem for f in files)


def on_page_markdown(markdown: str, page, config, files) -> str:
    """Replace [[measured:NOTEBOOK:KEY]] with the number that notebook published in this build."""

    def quote(match: re.Match) -> str:
        notebook, key = match.groups()
        if _serving and notebook not in _results and _is_notebook_stem(notebook, files):
            return LABELS[language(config)]["measuring"]
        if notebook not in _results:
            raise PluginError(f"{page.file.src_uri}: no executed notebook named {notebook!r}")
        if key not in _results[notebook]:
            known = ", ".join(sorted(_results[notebook])) or "none"
            raise PluginError(
                f"{page.file.src_uri}: notebook {notebook!r} published no {key!r} (it has: {known})"
            )
        # literal text: a value like "nn.*, ... F.*" must not become emphasis
        return MARKDOWN_SPECIAL.sub(r"\\\g<0>", str(_results[notebook][key]))

    return MEASURED.sub(quote, markdown)


SNIPPET_CELL = re.compile(r'<div[^>]*class="jp-Cell [^"]*\bcelltag_' + SNIPPET_TAG + r'\b[^"]*"')
DIV_TAG = re.compile(r"<div\b|</div>")


def collapse_snippet_cells(html: str, lang: str = DEFAULT_LANGUAGE) -> str:
    """Wrap each inlined snippet cell of a notebook page in a closed <details>."""
    out, pos = [], 0
    for match in SNIPPET_CELL.finditer(html):
        if match.start() < pos:
            continue  # nested in a cell already wrapped (cannot happen with nbconvert's markup)
        depth, end = 0, None
        for tag in DIV_TAG.finditer(html, match.start()):
            depth += 1 if tag.group(0) == "<div" else -1
            if depth == 0:
                end = tag.end()
                break
        if end is None:
            raise PluginError("a snippet cell of a notebook page has no closing </div>")
        cell = html[match.start() : end]
        name = re.search(r"snippets/(\w+)\.py", cell)
        label = f"snippets/{name.group(1)}.py" if name else "snippet"
        out.append(html[pos : match.start()])
        out.append(
            f'<details class="info rn-snippet-cell"><summary>{LABELS[lang]["imports"]} '
            f"<code>{label}</code></summary>\n{cell}\n</details>"
        )
        pos = end
    out.append(html[pos:])
    return "".join(out)


def on_post_page(html: str, page, config) -> str:
    if not is_notebook(page.file.src_uri):
        return html
    for classes in CLASS_ATTR.findall(html):
        _classes.update(classes.split())
    html = MATHJAX_CONFIG.sub("", html)
    html = REMOTE_SCRIPT.sub("", html)
    html = collapse_snippet_cells(html, language(config))

    # Every <style> leaves the page (HTML has no <style> in <body>): a shared stylesheet
    # is linked once, one that nothing on this page uses is dropped.
    page_classes = {name for classes in CLASS_ATTR.findall(html) for name in classes.split()}
    linked: set[str] = set()
    href = "/".join([".."] * page.url.count("/")) or "."

    def link(css: str) -> str:
        if not keeps_anything(css, page_classes):
            return ""
        digest = hashlib.sha256(css.encode()).hexdigest()[:12]
        if digest in linked:
            return ""
        linked.add(digest)
        _stylesheets[digest] = css
        return f'<link rel="stylesheet" href="{href}/assets/jupyter/{digest}.css">'

    def move_out(match: re.Match) -> str:
        css = match.group(1).strip()
        # mkdocs-jupyter appends one more <style> holding the repr() of the Python list
        # of Jupyter's stylesheets, which the page already has one <style> each for.
        if css.startswith("[") and css.endswith("]"):
            sheets = _python_list(css)
            if sheets is not None:
                return "".join(link(sheet.strip()) for sheet in sheets)
        return link(css)

    return INLINE_STYLE.sub(move_out, html)


def _python_list(text: str) -> list[str] | None:
    """``text`` read as the repr() of a list of strings, or None if it is not one."""
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return value
    return None


def on_post_build(config) -> None:
    out = Path(config["site_dir"]) / "assets" / "jupyter"
    out.mkdir(parents=True, exist_ok=True)
    for digest, css in _stylesheets.items():
        key = (digest, frozenset(_classes))  # a serve rebuild usually has the same pages
        if key not in _pruned:
            _pruned[key] = prune_css(css, _classes)
        target = out / f"{digest}.css"
        if not target.is_file() or target.read_text(encoding="utf-8") != _pruned[key]:
            target.write_text(_pruned[key], encoding="utf-8")
    # Drop older executions of the notebooks this build used (other notebooks'
    # entries may belong to another configuration, so they stay).
    for name, current in _used.items():
        for stale in (ROOT / CACHE).glob(f"*/{name}"):
            if stale.parent != current:
                shutil.rmtree(stale.parent, ignore_errors=True)
