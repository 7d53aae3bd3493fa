"""mkdocs serve: a dirty rebuild renders again every page whose inputs changed
(hooks/serve.py, resnorm_site/dirty.py), and rebuilds keep one search entry per section."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest
from mkdocs.structure.files import File, Files

from tests.conftest import ROOT


def _hook():
    """The adapter, loaded from its file as MkDocs loads a hook."""
    spec = importlib.util.spec_from_file_location("serve_hook", ROOT / "hooks/serve.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _site(root: Path) -> tuple[Files, Path]:
    docs = root / "docs"
    (docs / "experiments").mkdir(parents=True)
    (root / "snippets").mkdir()
    (root / "snippets/x.py").write_text("X = 1\n")
    (docs / "a.md").write_text('# A\n\n```python\n--8<-- "snippets/x.py"\n```\n')
    (docs / "b.md").write_text("# B\n\nThe answer is [[measured:nb:answer]].\n")
    (docs / "c.md").write_text("# C\n\nNothing else.\n")
    (root / "snippets/y.py").write_text("Y = 1\n")
    (docs / "d.md").write_text('# D\n\n```python excerpt="y.py:Y"\n```\n')
    (docs / "experiments/nb.py").write_text("# %% [markdown]\n# # NB\n")
    config = root / "mkdocs.yml"
    config.write_text("site_name: t\n")
    files = Files(
        [File(p, str(docs), str(root / "site"), True) for p in ("a.md", "b.md", "c.md", "d.md")]
        + [File("experiments/nb.py", str(docs), str(root / "site"), True)]
    )
    return files, config


def test_signatures_follow_what_each_page_depends_on(tmp_path: Path):
    from resnorm_site.dirty import signatures

    files, config = _site(tmp_path)

    def sign() -> dict[str, str]:
        return signatures(list(files), tmp_path, config)

    before = sign()
    assert sign() == before  # nothing changed, nothing to render again

    (tmp_path / "snippets/x.py").write_text("X = 2\n")  # a snippet a page includes
    after = sign()
    assert after["a.md"] != before["a.md"]
    assert after["b.md"] == before["b.md"] and after["c.md"] == before["c.md"]
    (tmp_path / "snippets/y.py").write_text("Y = 2\n")  # a module a page shows lines of
    shown = sign()
    assert shown["d.md"] != after["d.md"] and shown["a.md"] == after["a.md"]
    after = shown

    run = tmp_path / "run.ipynb"  # the notebook's page now shows a (new) run
    run.write_text("{}")
    files.get_file_from_path("experiments/nb.py").abs_src_path = str(run)
    again = sign()
    assert again["b.md"] != after["b.md"], "a page quoting the notebook's numbers"
    assert again["experiments/nb.py"] != after["experiments/nb.py"]
    assert again["c.md"] == after["c.md"]

    (tmp_path / "docs/c.md").write_text("# C, renamed\n\nNothing else.\n")  # the navigation
    renamed = sign()
    assert all(renamed[page] != again[page] for page in again)

    config.write_text("site_name: t2\n")  # the configuration
    assert all(v != renamed[k] for k, v in sign().items())


def test_a_page_with_gpu_figures_follows_the_results_file_and_the_code(tmp_path: Path):
    from resnorm_site.dirty import signatures
    from resnorm_site.gpu_results import CODE_FILES, RESULTS_FILE

    files, config = _site(tmp_path)
    (tmp_path / "docs/e.md").write_text("# E\n\n[[gpu-results:norm_speed]]\n")
    files.append(File("e.md", str(tmp_path / "docs"), str(tmp_path / "site"), True))

    def sign() -> dict[str, str]:
        return signatures(list(files), tmp_path, config)

    before = sign()
    results = tmp_path / RESULTS_FILE  # a new results file: its figures are shown
    results.parent.mkdir(parents=True, exist_ok=True)
    results.write_text("{}")
    after = sign()
    assert after["e.md"] != before["e.md"]
    assert all(after[p] == before[p] for p in before if p != "e.md")
    code = tmp_path / CODE_FILES[0]  # the code changed: the page says the figures are stale
    code.parent.mkdir(parents=True, exist_ok=True)
    code.write_text("# changed\n")
    assert sign()["e.md"] != after["e.md"]


def test_the_dirty_build_warning_is_dropped():
    import logging

    _hook()
    record = logging.LogRecord(
        "mkdocs.commands.build",
        logging.WARNING,
        "",
        0,
        "A 'dirty' build is being performed, this will likely lead to ...",
        None,
        None,
    )
    logger = logging.getLogger("mkdocs.commands.build")
    assert not logger.filter(record)
    other = logging.LogRecord("mkdocs.commands.build", logging.WARNING, "", 0, "x", None, None)
    assert logger.filter(other)


def test_compiled_templates_follow_their_source(tmp_path: Path):
    """The in-memory bytecode cache shared by every build never serves an old template."""
    import jinja2

    from resnorm_site.state import STATE

    hook = _hook()
    (tmp_path / "page.html").write_text("one {{ x }}")

    def render() -> str:
        env = jinja2.Environment(loader=jinja2.FileSystemLoader(tmp_path))
        env = hook.on_env(env, config=None, files=None)  # a new environment, as each build
        return env.get_template("page.html").render(x=1)

    assert render() == "one 1"
    assert render() == "one 1"  # from the cache
    assert len(STATE.process.templates.store) >= 1
    (tmp_path / "page.html").write_text("two {{ x }}")
    assert render() == "two 1"


def _search_index(site: Path) -> list[tuple[str, str, str]]:
    """Both languages' search entries, each located from the site's root."""
    import json

    entries = []
    for root in ("", "zh/"):  # each language has an index of its own
        index = json.loads((site / root / "search/search_index.json").read_text(encoding="utf-8"))
        entries += [(root + d["location"], d["title"], d["text"]) for d in index["docs"]]
    return sorted(entries)


@pytest.mark.build
@pytest.mark.parametrize("dirty", [True, False], ids=["serve --dirty", "serve"])
def test_rebuilds_keep_one_search_entry_per_section(tmp_path: Path, monkeypatch, dirty: bool):
    """mkdocs serve with both languages, --dirty or not: each rebuild's search index holds
    every page's latest sections once, as a full build's does (mkdocs-static-i18n alone
    stacks every rebuild's entries on the last ones, and each rebuild grew slower)."""
    from mkdocs.commands.build import build
    from mkdocs.config import load_config

    from tests.test_search_cache import PAGES
    from tests.test_search_cache import _site as two_language_site

    two_language_site(tmp_path, ["build_state.py", "i18n.py"])
    docs = tmp_path / "docs"
    monkeypatch.chdir(tmp_path)

    def full_build(site: Path) -> list[tuple[str, str, str]]:  # in a process of its own
        command = [sys.executable, "-m", "mkdocs", "build", "-q", "-d", str(site)]
        subprocess.run(command, cwd=tmp_path, check=True, capture_output=True)
        return _search_index(site)

    argv = ["mkdocs", "serve", "--dirty"] if dirty else ["mkdocs", "serve"]
    monkeypatch.setattr("sys.argv", argv)
    served = tmp_path / "served"
    config = load_config("mkdocs.yml", site_dir=str(served))
    config.plugins.on_startup(command="serve", dirty=dirty)
    plugins = config.plugins  # mkdocs serve keeps the plugins across rebuilds
    build(config, dirty=dirty)
    assert _search_index(served) == full_build(tmp_path / "full0")
    for i in range(3):
        (docs / "a.md").write_text(PAGES["a.md"] + f"\nedit number {i}\n", encoding="utf-8")
        monkeypatch.setattr("sys.argv", argv)
        config = load_config("mkdocs.yml", site_dir=str(served))
        config.plugins = plugins
        build(config, dirty=dirty)
        index = _search_index(served)
        assert len(index) == len(set(index)), "a section indexed twice"
        texts = " ".join(text for _, _, text in index)
        assert f"edit number {i}" in texts and f"edit number {i - 1}" not in texts
    plugins.on_shutdown()  # as mkdocs serve does when it stops
    assert index == full_build(tmp_path / "full")
