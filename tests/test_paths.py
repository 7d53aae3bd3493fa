"""One module owns every path the build uses, and mkdocs.yml agrees with it.

mkdocs-jupyter renders a page as a notebook only if the file behind it matches the
``include`` globs of its configuration (matched as ``PurePath(abs_src_path).match``,
mkdocs_jupyter/plugin.py ``should_include``); a notebook page pointed at a file that
does not match shows the notebook's JSON as text.
"""

from __future__ import annotations

from pathlib import PurePath

import pytest

from resnorm_site import paths
from tests.test_site import _plugin_index, load_mkdocs_yml


def jupyter_options() -> dict:
    config = load_mkdocs_yml()
    return config["plugins"][_plugin_index(config, "mkdocs-jupyter")]["mkdocs-jupyter"]


def rendered_as_notebook(path) -> bool:
    """mkdocs-jupyter 0.26.3's should_include, for a file that is not Markdown."""
    options, src = jupyter_options(), PurePath(path)
    if any(src.match(pattern) for pattern in options["ignore"]):
        return False
    return any(src.match(pattern) for pattern in options["include"])


def test_mkdocs_yml_includes_what_paths_names():
    assert jupyter_options()["include"] == [*paths.NOTEBOOK_GLOBS, paths.RUN_GLOB]


@pytest.mark.parametrize("cache", ["", ".cache-ci", "/tmp/resnorm cache"])
def test_every_notebook_page_file_is_rendered_as_a_notebook(monkeypatch, cache: str):
    monkeypatch.setenv("RESNORM_CACHE_DIR", cache)
    sources = sorted((paths.ROOT / "docs").glob("*/*.py"))
    sources = [
        p for p in sources if paths.is_notebook(p.relative_to(paths.ROOT / "docs").as_posix())
    ]
    assert len(sources) >= 14, "the English notebooks and their twins"
    made = list(sources)
    for source in sources:
        english = paths.english_twin(source)
        made.append(paths.run_path("0123456789abcdef0123", english.name))
        made.append(
            paths.run_path("0123456789abcdef0123", english.name).with_name(f"{source.stem}.ipynb")
        )
        made += [paths.placeholder_path(kind, source.stem) for kind in ("running", "failed")]
    for path in made:
        assert rendered_as_notebook(path), f"{path} would be shown as text"
    assert not rendered_as_notebook(paths.ROOT / "docs/index.md")


def test_the_cache_root_is_configurable(monkeypatch, tmp_path):
    monkeypatch.delenv("RESNORM_CACHE_DIR", raising=False)
    assert paths.cache_root() == paths.ROOT / ".cache"
    monkeypatch.setenv("RESNORM_CACHE_DIR", "elsewhere")  # relative: to the repository
    assert paths.notebook_cache() == paths.ROOT / "elsewhere/notebooks"
    monkeypatch.setenv("RESNORM_CACHE_DIR", str(tmp_path))
    assert paths.search_cache() == tmp_path / "search"
    assert paths.plantuml_cache() == tmp_path / "plantuml"
    assert paths.ready_stamp().parent.parent == tmp_path / "notebooks"


def test_placeholders_are_never_taken_for_runs(monkeypatch, tmp_path):
    monkeypatch.setenv("RESNORM_CACHE_DIR", str(tmp_path))
    for path in (
        paths.placeholder_path("running", "depth"),
        paths.run_path("0123456789abcdef0123", "depth.py"),
    ):
        path.parent.mkdir(parents=True)
        path.write_text("{}")
    assert paths.earlier_runs("depth.py") == [paths.run_path("0123456789abcdef0123", "depth.py")]
    with pytest.raises(ValueError, match="'running' or 'failed', got 'pending'"):
        paths.placeholder_path("pending", "depth")


def test_names_across_languages():
    source = paths.ROOT / "docs/experiments/depth.zh.py"
    assert paths.english_twin(source) == paths.ROOT / "docs/experiments/depth.py"
    assert paths.locale_of(source) == "zh" and paths.locale_of(source.with_name("depth.py")) == "en"
    assert paths.notebook_stem("experiments/depth.zh.py") == "depth"
    assert paths.is_notebook("experiments/depth.zh.py") and not paths.is_notebook("index.md")
