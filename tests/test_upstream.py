"""What the build borrows from other packages fails loudly when they change.

hooks/README.md lists each private API the hooks use; every use goes through
resnorm_site.compat, which names the package and the version the code was written for.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from resnorm_site import compat, plantuml
from resnorm_site.notebooks import page_html
from tests.conftest import ROOT
from tests.test_site import load_mkdocs_yml

FIXTURES = ROOT / "tests" / "fixtures"


def test_the_guarded_versions_are_the_pinned_ones():
    # "name==version", then an environment marker or a comment, if any
    requirements = (
        line.split("#")[0].split(";")[0].strip()
        for line in (ROOT / "requirements.txt").read_text().splitlines()
    )
    pins = dict(r.split("==") for r in requirements if "==" in r)
    for package, version in compat.WRITTEN_FOR.items():
        assert pins[package] == version, f"requirements.txt pins {package} {pins[package]}"
        assert compat.installed(package) == version


def test_another_version_fails_with_both_versions_named(monkeypatch):
    monkeypatch.setitem(compat.WRITTEN_FOR, "mkdocs-static-i18n", "1.2.0")
    with pytest.raises(compat.UpstreamChanged) as err:
        compat.require("mkdocs-static-i18n", "the search fix")
    message = str(err.value)
    assert "the search fix relies on internals of mkdocs-static-i18n 1.2.0" in message
    assert "mkdocs-static-i18n 1.3.1 is" in message and "hooks/README.md" in message


def test_a_private_attribute_that_is_gone_fails():
    class Plugin:
        current_language = "en"

    assert compat.private(Plugin(), "current_language", "mkdocs-static-i18n", "x") == "en"
    with pytest.raises(compat.UpstreamChanged, match=r"Plugin\.building is gone"):
        compat.private(Plugin(), "building", "mkdocs-static-i18n", "the i18n fix")


def test_the_plantuml_batch_fills_the_cache_the_plugin_reads(tmp_path: Path, monkeypatch):
    """Batch-render one diagram into a cache, then let plantuml_markdown render the page:
    it must find the diagram there and start no Java process."""
    import markdown
    import plantuml_markdown.plantuml_markdown as upstream

    extensions = load_mkdocs_yml()["markdown_extensions"]
    (options,) = [
        e["plantuml_markdown"]
        for e in extensions
        if isinstance(e, dict) and "plantuml_markdown" in e
    ]
    options = dict(options)
    options["cachedir"] = str(tmp_path / "plantuml")
    if shutil.which("java") is None:
        pytest.fail("Java is a prerequisite (README): it renders the diagrams")
    page = tmp_path / "page.md"
    page.write_text('# A\n\n```plantuml alt="A to B"\n@startuml\nA -> B\n@enduml\n```\n')
    wanted = plantuml.missing_diagrams([page], options)
    assert len(wanted) == 1
    assert plantuml.render(wanted, options["plantuml_cmd"]) == 1
    assert plantuml.missing_diagrams([page], options) == {}, "the second look finds it cached"

    def no_java(*args, **kwargs):
        raise AssertionError(f"plantuml_markdown started a process: {args[0]}")

    monkeypatch.setattr(upstream, "Popen", no_java)
    html = markdown.markdown(
        page.read_text(),
        extensions=["plantuml_markdown"],
        extension_configs={"plantuml_markdown": options},
    )
    assert re.search(r"<svg\b[^>]*class=\"uml\"", html) and "Syntax Error" not in html


def test_mkdocs_jupyter_0_27_mathjax_loader_is_removed():
    """mkdocs-jupyter 0.27.0 (Python >= 3.12) puts a MathJax loader, reading MathJax from
    a CDN, before </body> of every page (plugin.py on_post_page, mathjax.py). The fixture
    is that release's output for a page; the site typesets with its own KaTeX."""
    page = (FIXTURES / "mkdocs-jupyter-0.27.0-page.html").read_text(encoding="utf-8")
    assert "data-mkdocs-jupyter-mathjax" in page and "cdn.jsdelivr.net" in page
    trimmed = page_html.without_remote_scripts(page)
    assert trimmed == "<html><body><article>page</article>\n</body></html>"


def test_nbconvert_cdn_scripts_are_removed():
    page = (
        '<p>a</p><script src="https://cdn.example/mathjax.js"></script>'
        "<!-- Load mathjax -->x<!-- End of mathjax configuration -->"
        '<script type="module">import m from "https://cdn.example/mermaid.mjs"</script><p>b</p>'
        '<script src="assets/katex/katex.min.js"></script>'
    )
    assert page_html.without_remote_scripts(page) == (
        '<p>a</p><p>b</p><script src="assets/katex/katex.min.js"></script>'
    )
