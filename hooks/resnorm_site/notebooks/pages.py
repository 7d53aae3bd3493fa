"""Point every notebook page at what it shows: its run, or a stand-in while it runs."""

from __future__ import annotations

from pathlib import Path

from resnorm_site import paths
from resnorm_site.notebooks import cache, schedule, source, twin
from resnorm_site.notebooks.placeholder import placeholder
from resnorm_site.state import STATE


def show_runs(pages: list, lang: str) -> None:
    """``pages``: objects with ``src_uri`` (docs/ path) and ``abs_src_path`` (a
    notebook source), as MkDocs' files have. Runs what has no run yet (in the
    background under ``mkdocs serve``), then sets each ``abs_src_path`` to the
    notebook to render, and records the runs and numbers this build uses."""
    background = STATE.background
    shown, pending = [], []
    for page in pages:
        src = Path(page.abs_src_path)
        english = paths.english_twin(src)
        executed = paths.run_path(cache.cache_key(english), english.name)
        shown.append((page, src, executed))
        with background.lock:
            busy = executed in background.in_flight or executed in background.failed
        if not executed.is_file() and not busy:
            name = (Path(page.src_uri).parent / english.name).as_posix()
            pending.append((name, english, executed))
    if pending and STATE.process.serving:
        schedule.execute_in_background(pending, paths.ROOT)
    elif pending:
        schedule.execute_all(pending, paths.ROOT, schedule.notebook_jobs())
    for page, src, executed in shown:
        if executed.is_file():
            copy = twin.page_copy(executed, src)
            STATE.site.runs[copy.name] = executed.parent
            stem = paths.notebook_stem(page.src_uri)
            STATE.site.results[stem] = source.published_results(executed)
            page.abs_src_path = str(copy)
        else:  # serving, and still running (or failed): never an earlier run's outputs
            with background.lock:
                failure = background.failed.get(executed)
            page.abs_src_path = str(placeholder(src, failure, lang))
