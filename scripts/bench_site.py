"""Measure the site's speed and size goals and print the figures.

    python scripts/bench_site.py            # everything (runs the whole test suite once)
    python scripts/bench_site.py --no-tests # skip the full test run

Figures, each against its goal on a 2-core machine:
- the full test command's wall time (goal <= 10 min);
- ``mkdocs build`` with a cold and a warm notebook/diagram cache;
- ``mkdocs serve``: start to the first 200 with a warm cache (goal <= 5 s);
- ``mkdocs serve``: rebuild after touching a Markdown page (goal <= 3 s);
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
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parent.parent
ENV = dict(os.environ, NO_MKDOCS_2_WARNING="1")
CHROMIUM = os.environ.get("CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
KB = 1000


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def time_tests() -> float:
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"], cwd=ROOT, env=ENV
    )
    if proc.returncode != 0:
        print("(the test run failed; its time is still reported)")
    return time.perf_counter() - start


def time_build(site: Path) -> float:
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(site)],
        cwd=ROOT,
        env=ENV,
        check=True,
    )
    return time.perf_counter() - start


def time_builds() -> tuple[float, float, Path, list[tuple[str, float]]]:
    """Cold (no notebook or diagram cache) then warm build; the real cache is restored.

    Also returns each notebook's execution time in the cold build."""
    cache = ROOT / ".cache"
    saved = Path(tempfile.mkdtemp()) / "cache"
    if cache.exists():
        shutil.move(str(cache), saved)
    site = Path(tempfile.mkdtemp()) / "site"
    try:
        cold = time_build(site)
        times = notebook_times()
    finally:
        if saved.exists():
            shutil.rmtree(cache, ignore_errors=True)
            shutil.move(str(saved), cache)
    time_build(site)  # make sure the restored cache is complete
    warm = time_build(site)
    return cold, warm, site, times


def time_serve() -> tuple[float, float]:
    """Start to the first 200, then the rebuild after touching a page."""
    port = _free_port()
    url = f"http://127.0.0.1:{port}/resnorm/"
    start = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "mkdocs", "serve", "-a", f"127.0.0.1:{port}"],
        cwd=ROOT,
        env=ENV,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    built = threading.Event()
    log: list[str] = []

    def read():
        for line in proc.stderr:
            log.append(line)
            if "Documentation built in" in line:
                built.set()

    threading.Thread(target=read, daemon=True).start()
    try:
        while True:
            try:
                with urllib.request.urlopen(url, timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                if proc.poll() is not None:
                    raise RuntimeError("mkdocs serve stopped:\n" + "".join(log)) from None
                time.sleep(0.05)
        first_200 = time.perf_counter() - start
        time.sleep(1.5)  # let the watcher settle
        built.clear()
        page = ROOT / "docs/foundations/layer-norm.md"
        touched = time.perf_counter()
        os.utime(page)
        if not built.wait(60):
            raise RuntimeError("no rebuild after touching a page:\n" + "".join(log))
        rebuild = time.perf_counter() - touched
        return first_200, rebuild
    finally:
        proc.terminate()
        proc.wait(timeout=30)


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


def notebook_times() -> list[tuple[str, float]]:
    """Execution time of each notebook, as recorded by hooks/notebooks.py in its cache."""
    import json

    times = []
    for executed in sorted((ROOT / ".cache/notebooks").glob("*/*.ipynb")):
        meta = json.loads(executed.read_text(encoding="utf-8"))["metadata"].get("resnorm", {})
        if "execution_seconds" in meta:
            times.append((executed.stem, meta["execution_seconds"]))
    return times


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
    args = parser.parse_args()

    print(f"machine: {os.cpu_count()} cores, Python {sys.version.split()[0]}")
    if not args.no_tests:
        row("full test run (pytest):", time_tests(), 600)
    cold, warm, site, times = time_builds()
    row("mkdocs build, cold cache:", cold)
    row("mkdocs build, warm cache:", warm)
    for name, seconds in times:
        row(f"  notebook {name}:", seconds, 90)
    row("  all notebooks together:", sum(t for _, t in times), 360)
    first, rebuild = time_serve()
    row("mkdocs serve, start to first 200:", first, 5)
    row("mkdocs serve, rebuild after edit:", rebuild, 3)
    print("transferred per page (everything the browser loads but the search index):")
    print(f"  {'page':40} {'raw':>9} {'gzip':>9}")
    for page, raw, packed in page_weights(site):
        flag = "ok" if packed <= 400 * KB else "OVER GOAL"
        print(f"  {page:40} {raw / KB:6.0f} KB {packed / KB:6.0f} KB   goal gzip <= 400 KB  {flag}")


if __name__ == "__main__":
    main()
