"""hooks/serve.py: a dirty rebuild renders again every page whose inputs changed."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from mkdocs.structure.files import File, Files

from tests.conftest import ROOT


def _hook():
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
    (docs / "experiments/nb.py").write_text("# %% [markdown]\n# # NB\n")
    config = root / "mkdocs.yml"
    config.write_text("site_name: t\n")
    files = Files(
        [File(p, str(docs), str(root / "site"), True) for p in ("a.md", "b.md", "c.md")]
        + [File("experiments/nb.py", str(docs), str(root / "site"), True)]
    )
    return files, config


def test_signatures_follow_what_each_page_depends_on(tmp_path: Path, monkeypatch):
    hook = _hook()
    files, config = _site(tmp_path)
    monkeypatch.setattr(File, "is_documentation_page", lambda self: True)

    def sign() -> dict[str, str]:
        return hook.signatures(files, tmp_path, config)

    before = sign()
    assert sign() == before  # nothing changed, nothing to render again

    (tmp_path / "snippets/x.py").write_text("X = 2\n")  # a snippet a page includes
    after = sign()
    assert after["a.md"] != before["a.md"]
    assert after["b.md"] == before["b.md"] and after["c.md"] == before["c.md"]

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

    hook = _hook()
    (tmp_path / "page.html").write_text("one {{ x }}")

    def render() -> str:
        env = jinja2.Environment(loader=jinja2.FileSystemLoader(tmp_path))
        env = hook.on_env(env, config=None, files=None)  # a new environment, as each build
        return env.get_template("page.html").render(x=1)

    assert render() == "one 1"
    assert render() == "one 1"  # from the cache
    assert len(hook._templates.store) >= 1
    (tmp_path / "page.html").write_text("two {{ x }}")
    assert render() == "two 1"
