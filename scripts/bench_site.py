"""Measure the site's speed and size goals and print the figures.

    python scripts/bench_site.py            # everything (runs the whole test suite twice:
                                            # .ci/run in a fresh clone, and warm here)
    python scripts/bench_site.py --no-tests # skip the test runs

Figures, each against its goal on a 2-core machine:
- ``.ci/run`` in a fresh clone, set-up and the notebooks' first run included (goal
  <= 10 min); the full test run with a warm cache (``make test``'s pytest, goal
  <= 6 min); the unit tier (``make test-unit``, goal <= 2 min);
- the size of the build code: the largest module under hooks/ (goal <= 300 lines) and
  each adapter that mkdocs.yml names (goal <= 80 lines);
- ``mkdocs build`` with a cold notebook/diagram cache, English only and with the
  Chinese edition, next to the least time the notebooks alone take on this machine
  (notebooks run in parallel, one per core, the timing notebook alone, each once for
  both languages), with a warm one, and each notebook's own execution time;
- ``mkdocs serve --dirty`` as ``make serve`` runs it, warm cache: start to the first
  200 (goal <= 5 s); a Markdown edit from saving to visible, three times on an English
  page and twice on its Chinese twin (goal <= 1.5 s);
  a snippet edit until its notebook's page shows the new run, and which notebooks it
  executed again (goal: only the one that imports the snippet);
- ``make serve`` in a fresh clone, set-up included: to the first 200 (goal <= 150 s;
  the Markdown pages are served while the notebooks execute) and to every notebook
  page showing its run;
- what a browser transfers for each page, excluding the search index: the
  files' raw size and their gzip size, which is what crosses the network from
  GitHub Pages or any server that compresses (goal <= 400 KB, on the gzip size).

Timings are wall-clock on whatever else the machine is doing: run it on an idle
machine and read them as rough figures.
"""

from __future__ import annotations

import argparse
import gzip
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from urllib.parse import urlsplit

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "hooks")]  # the build logic: hooks/resnorm_site
ENV = dict(os.environ, NO_MKDOCS_2_WARNING="1")
CHROMIUM = os.environ.get("CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
KB = 1000


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def time_tests(*args: str) -> float:
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args], cwd=ROOT, env=ENV
    )
    if proc.returncode != 0:
        print("(the test run failed; its time is still reported)")
    return time.perf_counter() - start


def time_ci_run() -> float:
    """``bash .ci/run`` as CI runs it, in a fresh clone of HEAD (its own .venv and cache)."""
    where = Path(tempfile.mkdtemp()) / "clone"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(where)], check=True)
    env = {k: v for k, v in ENV.items() if k != "RESNORM_CACHE_DIR"}
    start = time.perf_counter()
    try:
        proc = subprocess.run(["bash", ".ci/run"], cwd=where, env=dict(env, CI="true"))
        if proc.returncode != 0:
            print("(.ci/run failed; its time is still reported)")
        return time.perf_counter() - start
    finally:
        shutil.rmtree(where.parent, ignore_errors=True)


def code_sizes() -> tuple[tuple[str, int], list[tuple[str, int]]]:
    """The largest Python module under hooks/, and each hook that mkdocs.yml names."""

    def lines(path: Path) -> int:
        return len(path.read_text(encoding="utf-8").splitlines())

    modules = [(p.relative_to(ROOT).as_posix(), lines(p)) for p in (ROOT / "hooks").rglob("*.py")]
    config = yaml.load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"), Loader=_IgnoreTags)
    adapters = [(h, lines(ROOT / h)) for h in config["hooks"]]
    return max(modules, key=lambda m: m[1]), adapters


class _IgnoreTags(yaml.SafeLoader):
    """mkdocs.yml's !ENV and Python tags, read as plain values."""


_IgnoreTags.add_multi_constructor("", lambda loader, suffix, node: None)


def time_build(site: Path, chinese: bool = True, cache: Path | None = None) -> float:
    env = dict(ENV, RESNORM_BUILD_ZH="true" if chinese else "false")
    if cache is not None:
        env["RESNORM_CACHE_DIR"] = str(cache)
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(site)],
        cwd=ROOT,
        env=env,
        check=True,
    )
    return time.perf_counter() - start


def time_builds() -> tuple[float, float, float, Path, list[tuple[str, float]]]:
    """Cold builds (an empty cache of their own: RESNORM_CACHE_DIR), English only and
    with the Chinese edition, then a warm build with the repository's cache.

    Also returns each notebook's execution time in the cold build."""
    scratch = Path(tempfile.mkdtemp())
    site = scratch / "site"
    english = time_build(site, chinese=False, cache=scratch / "english")
    cold = time_build(site, cache=scratch / "cold")
    times = notebook_times(scratch / "cold")
    time_build(site)  # make sure the repository's cache is complete
    warm = time_build(site)
    return english, cold, warm, site, times


class Serve:
    """``mkdocs serve --dirty`` as ``make serve`` runs it, with its log collected."""

    def __init__(self, cwd: Path = ROOT, make: bool = False):
        self.port = _free_port()
        self.base = f"http://127.0.0.1:{self.port}/resnorm/"
        self.log: list[str] = []
        self.start = time.perf_counter()
        address = f"127.0.0.1:{self.port}"
        if make:  # the README's command, set-up included
            command = ["make", "--no-print-directory", "serve", f"SERVE_ADDR={address}"]
        else:
            command = [sys.executable, "-m", "mkdocs", "serve", "--dirty", "-a", address]
        self.proc = subprocess.Popen(
            command,
            cwd=cwd,
            env=ENV,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,  # close() stops make and the mkdocs it started
        )
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stderr:
            self.log.append(line)

    def get(self, path: str = "") -> str | None:
        try:
            with urllib.request.urlopen(self.base + path, timeout=5) as r:
                return r.read().decode()
        except OSError:
            if self.proc.poll() is not None:
                raise RuntimeError("mkdocs serve stopped:\n" + "".join(self.log)) from None
            return None

    def wait_for(self, path: str, text: str = "", timeout: float = 900) -> float:
        """Seconds until ``path`` is served and contains ``text``."""
        start = time.perf_counter()
        while True:
            page = self.get(path)
            if page is not None and text in page:
                return time.perf_counter() - start
            if time.perf_counter() - start > timeout:
                raise RuntimeError(f"{path} never showed {text!r}:\n" + "".join(self.log))
            time.sleep(0.05)

    def close(self):
        os.killpg(self.proc.pid, signal.SIGTERM)
        self.proc.wait(timeout=30)


def _edit(path: Path, extra: str, serve: Serve, page: str, marker: str) -> float:
    """Append ``extra`` to ``path``; seconds until ``page`` shows ``marker``; restore."""
    original = path.read_text(encoding="utf-8")
    try:
        path.write_text(original + extra, encoding="utf-8")
        return serve.wait_for(page, marker)
    finally:
        path.write_text(original, encoding="utf-8")


def time_serve() -> tuple[float, list[float], float, list[str]]:
    """With a warm cache: start to the first 200; a Markdown edit, saved three times,
    until it is visible; a snippet edit until its notebook page shows the new run,
    and which notebooks that edit executed again."""
    serve = Serve()
    try:
        first_200 = serve.wait_for("")
        time.sleep(1.5)  # let the watcher settle
        edits = []
        for _ in range(3):
            marker = f"edit-marker-{time.time_ns()}"
            edits.append(
                _edit(
                    ROOT / "docs/foundations/layer-norm.md",
                    f"\n{marker}\n",
                    serve,
                    "foundations/layer-norm/",
                    marker,
                )
            )
            time.sleep(1.5)
        for _ in range(2):  # the Chinese twin of the same page
            marker = f"edit-marker-{time.time_ns()}"
            edits.append(
                _edit(
                    ROOT / "docs/foundations/layer-norm.zh.md",
                    f"\n{marker}\n",
                    serve,
                    "zh/foundations/layer-norm/",
                    marker,
                )
            )
            time.sleep(1.5)
        # a snippet that one notebook imports: only that notebook runs again
        done = len(serve.log)
        marker = f"edit_marker_{time.time_ns()}"
        snippet = ROOT / "snippets/vector_through_block.py"
        seconds = _edit(
            snippet, f"\n# {marker}\n", serve, "experiments/vector_through_block/", marker
        )
        executed = [
            line.split("executed ")[1].split(" in ")[0]
            for line in serve.log[done:]
            if "executed " in line
        ]
        time.sleep(1.5)
        serve.wait_for("experiments/vector_through_block/", "Code this notebook imports")
        return first_200, edits, seconds, executed
    finally:
        serve.close()


def notebook_pages() -> list[tuple[str, str]]:
    """Every notebook page, in both languages, and the label it shows once its run is in."""
    from resnorm_site.labels import LABELS

    pages = []
    for source in sorted((ROOT / "docs").glob("*/*.py")):
        stem, _, lang = source.stem.partition(".")
        prefix = f"{lang}/" if lang else ""
        pages.append((f"{prefix}{source.parent.name}/{stem}/", LABELS[lang or "en"]["imports"]))
    return pages


def time_fresh_clone() -> tuple[float, float]:
    """``make serve`` in a fresh clone of HEAD: seconds to the first 200, and to every
    notebook page showing its executed run."""
    where = Path(tempfile.mkdtemp()) / "clone"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(where)], check=True)
    serve = Serve(cwd=where, make=True)
    try:
        first_200 = serve.wait_for("")
        for page, label in notebook_pages():
            serve.wait_for(page, label)
        return first_200, time.perf_counter() - serve.start
    finally:
        serve.close()
        shutil.rmtree(where.parent, ignore_errors=True)


def page_weights(site: Path) -> list[tuple[str, int, int]]:
    """(page, raw bytes, gzip bytes) of everything Chromium loads for each page."""
    import functools
    import http.server

    from playwright.sync_api import sync_playwright

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    handler = functools.partial(Quiet, directory=str(site))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{httpd.server_address[1]}"
    pages = sorted(
        "/" + p.parent.relative_to(site).as_posix().strip(".") + "/"
        for p in site.rglob("index.html")
        if "assets" not in p.parts
    )
    pages = [re.sub("/+", "/", p) for p in pages]
    rows = []
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"]
        )
        for page_url in pages:
            loaded: set[str] = set()
            page = browser.new_page()
            page.on("requestfinished", lambda r, loaded=loaded: loaded.add(urlsplit(r.url).path))
            page.goto(base + page_url, wait_until="networkidle")
            page.close()
            raw = packed = 0
            for path in loaded:
                if "search_index" in path or "/search/" in path:
                    continue
                file = site / path.lstrip("/")
                if file.is_dir() or path.endswith("/"):
                    file = file / "index.html"
                if file.is_file():
                    data = file.read_bytes()
                    raw += len(data)
                    packed += len(gzip.compress(data, 6))
            rows.append((page_url, raw, packed))
        browser.close()
    httpd.shutdown()
    return rows


def notebook_times(cache: Path | None = None) -> list[tuple[str, float]]:
    """Execution time of each notebook, as its run in the cache records it."""
    import json

    from resnorm_site import paths

    times = []
    for executed in sorted(((cache or paths.cache_root()) / "notebooks").glob("*/*.ipynb")):
        if not paths.RUN_DIR.match(executed.parent.name):
            continue  # a stand-in page, not a run
        if executed.stem.endswith(".zh"):  # a Chinese page of the same run, not a run
            continue
        meta = json.loads(executed.read_text(encoding="utf-8"))["metadata"].get("resnorm", {})
        if "execution_seconds" in meta:
            times.append((executed.stem, meta["execution_seconds"]))
    return times


def runs_alone(stem: str) -> bool:
    """Whether the notebook docs/**/STEM.py runs alone (it times code), as the build reads it."""
    from resnorm_site.notebooks.source import runs_alone as header_says_so

    (source,) = (ROOT / "docs").rglob(f"{stem}.py")
    return header_says_so(source)


def row(label: str, seconds: float, goal: float | None = None) -> None:
    line = f"{label:34} {seconds:7.1f} s"
    if goal is not None:
        line += f"   goal <= {goal:g} s   " + ("ok" if seconds <= goal else "OVER GOAL")
    print(line)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--no-tests", action="store_true", help="skip timing the full test run")
    parser.add_argument(
        "--no-fresh-clone", action="store_true", help="skip make serve in a fresh clone"
    )
    args = parser.parse_args()

    print(f"machine: {os.cpu_count()} cores, Python {sys.version.split()[0]}")
    (largest, largest_lines), adapters = code_sizes()
    print(
        f"largest module under hooks/: {largest}, {largest_lines} lines   goal <= 300   "
        + ("ok" if largest_lines <= 300 else "OVER GOAL")
    )
    for hook, count in adapters:
        print(
            f"  adapter {hook:32} {count:4} lines   goal <= 80   "
            + ("ok" if count <= 80 else "OVER GOAL")
        )
    if not args.no_tests:
        row(".ci/run, fresh clone, notebooks' first run:", time_ci_run(), 600)
    english, cold, warm, site, times = time_builds()
    if not args.no_tests:
        row("full test run, warm cache (pytest):", time_tests(), 360)
    row(
        "unit tier (make test-unit):",
        time_tests("-m", "not build and not browser and not reader"),
        120,
    )
    row("mkdocs build, cold cache, English only:", english)
    row("mkdocs build, cold cache, both languages:", cold)
    print(f"  the Chinese edition adds {cold / english - 1:+.0%} to the cold build")
    row("mkdocs build, warm cache:", warm)
    for name, seconds in times:
        row(f"  notebook {name}:", seconds)
    row("  all notebooks together:", sum(t for _, t in times))
    alone = [t for name, t in times if runs_alone(name)]
    shared = [t for name, t in times if not runs_alone(name)]
    cores = os.cpu_count() or 1
    floor = sum(alone) + max(sum(shared) / cores, max(shared, default=0.0))
    print(
        f"  the notebooks alone take at least {floor:.1f} s of a cold build here: "
        f"those that run alone ({sum(alone):.1f} s) plus the others spread over {cores} "
        f"core(s) ({sum(shared):.1f} s of work)"
    )
    first, edits, snippet_s, executed = time_serve()
    row("mkdocs serve, start to first 200:", first, 5)
    for i, seconds in enumerate(edits, 1):
        lang = "English" if i <= 3 else "Chinese"
        row(f"  Markdown edit {i} ({lang} page), saved to visible:", seconds, 1.5)
    row("  snippet edit to new notebook run:", snippet_s)
    print(
        f"  notebooks the snippet edit executed again: {', '.join(executed) or 'none'}"
        "   goal: experiments/vector_through_block.py only   "
        + ("ok" if executed == ["experiments/vector_through_block.py"] else "OVER GOAL")
    )
    if not args.no_fresh_clone:
        first_clone, all_clone = time_fresh_clone()
        row("fresh clone, make serve to first 200:", first_clone, 150)
        row("  ... to every notebook page executed:", all_clone)
    print("transferred per page (everything the browser loads but the search index):")
    print(f"  {'page':40} {'raw':>9} {'gzip':>9}")
    for page, raw, packed in page_weights(site):
        flag = "ok" if packed <= 400 * KB else "OVER GOAL"
        print(f"  {page:40} {raw / KB:6.0f} KB {packed / KB:6.0f} KB   goal gzip <= 400 KB  {flag}")


if __name__ == "__main__":
    main()
