"""hooks/search_cache.py: a page's search entries are parsed once and read back after;
hooks/i18n.py: each language's pages in a search index of its own."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import bilingual_site, mkdocs_build

SEARCH = """  - search:
      separator: '[\\s\\u200b\\-]+'
"""
PAGES = {
    "index.md": "# Home\n\nResidual streams.\n",
    "index.zh.md": "# 首页\n\n残差流。\n",
    "a.md": "# A\n\nLayer norm.\n\n## Part { #part }\n\nMore.\n",
    "a.zh.md": "# 甲\n\n层归一化。\n\n## 部分 { #part }\n\n更多。\n",
}


def _site(root: Path, hooks: list[str]) -> None:
    bilingual_site(root, PAGES, hooks, plugins=SEARCH)


def _build(root: Path) -> str:
    proc = mkdocs_build(root / "site", root / "mkdocs.yml", cache=root / ".cache")
    assert proc.returncode == 0, proc.stderr
    return (root / "site/search/search_index.json").read_text(encoding="utf-8")


def _entries(root: Path) -> dict[str, int]:
    return {p.name: p.stat().st_mtime_ns for p in (root / ".cache/search").glob("*.json")}


@pytest.mark.build
def test_the_index_is_the_same_and_unchanged_pages_are_not_parsed_again(tmp_path: Path):
    plain, cached = tmp_path / "plain", tmp_path / "cached"
    plain.mkdir(), cached.mkdir()
    _site(plain, ["build_state.py", "i18n.py"])
    _site(cached, ["build_state.py", "i18n.py", "search_cache.py"])
    reference = _build(plain)
    # each language has an index of its own, located from its home (hooks/i18n.py)
    english = [d["location"] for d in json.loads(reference)["docs"]]
    chinese = json.loads((plain / "site/zh/search/search_index.json").read_text("utf-8"))["docs"]
    assert sorted({loc.split("#")[0] for loc in english}) == ["", "a/"]
    assert sorted({d["location"].split("#")[0] for d in chinese}) == ["", "a/"]
    assert any("层归一化" in d["text"].replace("\u200b", "") for d in chinese)
    assert not any(
        "层归一化" in d["text"].replace("\u200b", "") for d in json.loads(reference)["docs"]
    )

    assert _build(cached) == reference  # parsed, and remembered
    first = _entries(cached)
    assert len(first) == len(PAGES), "one entry file per page and language"
    assert _build(cached) == reference  # read back
    assert _entries(cached) == first, "nothing parsed or written again"

    page = cached / "docs/a.md"
    page.write_text(PAGES["a.md"].replace("Layer norm.", "Layer norm, edited."), encoding="utf-8")
    index = json.loads(_build(cached))["docs"]
    assert any("Layer norm, edited." in d["text"] for d in index)
    assert not any(d["text"] == "<p>Layer norm.</p>" for d in index)
    second = _entries(cached)
    assert len(second) == len(PAGES), "the old entry of the edited page is gone"
    assert len(set(second) - set(first)) == 1
