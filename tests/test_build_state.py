"""The build state's lifetimes (hooks/resnorm_site/state.py), as MkDocs and
mkdocs-static-i18n drive them: the Chinese build runs inside the English one."""

from __future__ import annotations

from resnorm_site.state import BuildState, UsedByAnyLanguage


def test_a_site_build_spans_the_nested_chinese_build():
    state = BuildState()
    state.start_process("build", dirty=False)
    assert state.start_language("en") is True, "the English build begins a site build"
    state.site.results["depth"] = {"x": 1}
    assert state.start_language("zh") is False, "the Chinese build is nested in it"
    assert state.site.results == {"depth": {"x": 1}}, "and sees what the English build did"
    assert state.languages == ["en", "zh"]
    assert state.end_language() is False
    assert state.languages == ["en"], "the English build's end: the whole site is built"
    assert state.end_language() is True
    state.start_language("en")
    assert state.site.results == {}, "the next site build starts empty"


def test_a_dirty_rebuild_keeps_what_the_pages_it_skips_use():
    state = BuildState()
    state.start_process("serve", dirty=True)
    assert state.process.serving and state.process.dirty
    state.start_language("en")
    state.site.classes.add("jp-Cell")
    state.end_language()
    state.start_language("en")
    assert state.site.classes == {"jp-Cell"}
    state.start_process("build", dirty=False)
    assert not state.process.serving and state.languages == []
    state.start_language("en")
    assert state.site.classes == set()


def test_every_rendered_page_counts_as_used_until_the_site_is_built():
    used = UsedByAnyLanguage({"/c/a.json"})
    assert "/c/anything-else.json" in used, "mkdocs-jupyter's per-language eviction keeps it"
    assert used.paths() == {"/c/a.json"}, "the site's end evicts the others"
